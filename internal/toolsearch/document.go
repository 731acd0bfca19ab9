package toolsearch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// A Doc is what the index knows of one tool: the text a caller may match.
type Doc struct {
	// Name is the projected tool name ("server__tool"), the name a hit
	// carries and an allow function is asked about. The part after the
	// server's prefix is indexed as the tool's name words.
	Name string
	// Server is the server the tool belongs to.
	Server string
	// Title is the tool's title, if it has one.
	Title string
	// Description is the tool's description.
	Description string
	// Params are the tool's parameters (see ParamsFromSchema).
	Params []Param
	// PluginDescription is the description of the plugin that provides the
	// server, if any.
	PluginDescription string
}

// A Param is one parameter of a tool: its name and description.
type Param struct {
	Name        string
	Description string
}

// MaxSchemaBytes is the largest input schema ParamsFromSchema reads.
const MaxSchemaBytes = 1 << 20

// Errors of ParamsFromSchema.
var (
	// ErrSchemaTooLarge is returned for a schema over MaxSchemaBytes.
	ErrSchemaTooLarge = errors.New("toolsearch: input schema is larger than 1 MiB")
	// ErrSchemaNotObject is returned when the schema, or its "properties",
	// or one property, is JSON but not an object.
	ErrSchemaNotObject = errors.New("toolsearch: input schema is not a JSON object")
)

// ParamsFromSchema returns the parameters of a tool's JSON Schema input
// schema: each entry of its "properties" with the property's "description",
// and one level below, the properties of an object parameter (or of the
// objects of an array parameter) as "parent.child". Params are sorted by
// name. An empty or null schema has no parameters. A schema that is not
// valid JSON, is over MaxSchemaBytes, or whose "properties" (or one of
// them) is not an object is an error; a "description" that is not a string
// is ignored.
func ParamsFromSchema(schema json.RawMessage) ([]Param, error) {
	if len(schema) > MaxSchemaBytes {
		return nil, ErrSchemaTooLarge
	}
	trimmed := bytes.TrimSpace(schema)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return nil, nil
	}
	var root map[string]json.RawMessage
	if err := unmarshalObject(trimmed, &root); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	var out []Param
	if err := appendProps(&out, "", root["properties"], 0); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// appendProps appends the parameters of one "properties" object; depth 0
// is the schema's own, depth 1 a parameter's.
func appendProps(out *[]Param, prefix string, raw json.RawMessage, depth int) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	var props map[string]json.RawMessage
	if err := unmarshalObject(raw, &props); err != nil {
		if prefix == "" {
			return fmt.Errorf("input schema: properties: %w", err)
		}
		return fmt.Errorf("input schema: properties of %q: %w", strings.TrimSuffix(prefix, "."), err)
	}
	for name, p := range props {
		var prop map[string]json.RawMessage
		if err := unmarshalObject(p, &prop); err != nil {
			return fmt.Errorf("input schema: property %q: %w", prefix+name, err)
		}
		var desc string
		_ = json.Unmarshal(prop["description"], &desc) // a non-string description is no description
		*out = append(*out, Param{Name: prefix + name, Description: desc})
		if depth > 0 {
			continue
		}
		if err := appendProps(out, prefix+name+".", prop["properties"], depth+1); err != nil {
			return err
		}
		var items map[string]json.RawMessage
		if json.Unmarshal(prop["items"], &items) == nil {
			if err := appendProps(out, prefix+name+".", items["properties"], depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// unmarshalObject decodes a JSON object, telling "not JSON" from "JSON
// but not an object".
func unmarshalObject(raw json.RawMessage, v *map[string]json.RawMessage) error {
	if err := json.Unmarshal(raw, v); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return ErrSchemaNotObject
		}
		return err
	}
	if *v == nil { // the JSON was null
		return ErrSchemaNotObject
	}
	return nil
}
