package eino

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/eino-contrib/jsonschema"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// ErrSchema is wrapped by the errors of an input schema eino cannot take:
// one that is not JSON, or whose top level is not a JSON object.
var ErrSchema = errors.New("eino: invalid input schema")

// subschema keywords: one schema, an array of schemas, a map of schemas.
var (
	oneSchema = map[string]bool{"not": true, "if": true, "then": true, "else": true, "items": true,
		"contains": true, "additionalProperties": true, "propertyNames": true, "contentSchema": true}
	schemaList = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true}
	schemaMap  = map[string]bool{"properties": true, "$defs": true, "patternProperties": true, "dependentSchemas": true}
)

// jsonSchema decodes a tool's input schema into eino's jsonschema.Schema so
// that it is carried whole: every keyword the struct holds faithfully is
// set in its field (so eino components that read the struct see it), and
// every other keyword — unknown ones ("definitions", "x-..."), older
// forms ("items" as an array, a boolean "exclusiveMaximum"), values the
// field would change (a number beyond float64, a false that the field
// would drop) — goes into Extras as its raw JSON, which the struct's
// MarshalJSON writes back. Encoding the result gives the input back, up to
// key order and white space. Only JSON that is not an object at the top
// level is refused.
func jsonSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return &jsonschema.Schema{Type: "object"}, nil
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("%w: not JSON", ErrSchema)
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("%w: the top level is %s, not an object", ErrSchema, kindOf(raw))
	}
	return decodeSchema(raw), nil
}

// providerSchema returns a tool's input schema with a top-level oneOf,
// anyOf, allOf, enum or not (which OpenAI and Anthropic refuse) merged
// into one object schema by toolset.ProviderSchema, and the note that
// merge says to the model. Any other schema, and anything that is not a
// JSON object, comes back as it is, unparsed beyond its top level.
func providerSchema(raw json.RawMessage) (json.RawMessage, string) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return raw, ""
	}
	members, err := orderedMembers(trimmed)
	if err != nil {
		return raw, ""
	}
	found := false
	for _, m := range members {
		switch m.key {
		case "oneOf", "anyOf", "allOf", "enum", "not":
			found = true
		}
	}
	if !found {
		return raw, ""
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(trimmed))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return raw, ""
	}
	out, note := toolset.ProviderSchema(m)
	b, err := json.Marshal(out)
	if err != nil {
		return raw, ""
	}
	return b, note
}

// decodeSchema decodes a valid JSON object or boolean as a schema.
func decodeSchema(raw json.RawMessage) *jsonschema.Schema {
	s := &jsonschema.Schema{}
	if raw[0] != '{' {
		_ = json.Unmarshal(raw, s) // true or false
		return s
	}
	members, _ := orderedMembers(raw)
	// An empty, non-nil Extras keeps an empty schema "{}" (the struct
	// would write a schema with nothing set as "true").
	s.Extras = map[string]any{}
	plain := make(map[string]json.RawMessage, len(members))
	for _, m := range members {
		k, v := m.key, m.value
		switch {
		case oneSchema[k] && isSchema(v):
			sub := decodeSchema(v)
			switch k {
			case "not":
				s.Not = sub
			case "if":
				s.If = sub
			case "then":
				s.Then = sub
			case "else":
				s.Else = sub
			case "items":
				s.Items = sub
			case "contains":
				s.Contains = sub
			case "additionalProperties":
				s.AdditionalProperties = sub
			case "propertyNames":
				s.PropertyNames = sub
			case "contentSchema":
				s.ContentSchema = sub
			}
		case schemaList[k] && isSchemaList(v):
			var items []json.RawMessage
			_ = json.Unmarshal(v, &items)
			subs := make([]*jsonschema.Schema, len(items))
			for i, it := range items {
				subs[i] = decodeSchema(bytes.TrimSpace(it))
			}
			switch k {
			case "allOf":
				s.AllOf = subs
			case "anyOf":
				s.AnyOf = subs
			case "oneOf":
				s.OneOf = subs
			case "prefixItems":
				s.PrefixItems = subs
			}
		case schemaMap[k] && isSchemaMap(v):
			ms, _ := orderedMembers(v)
			if k == "properties" {
				s.Properties = jsonschema.NewProperties()
				for _, m := range ms {
					s.Properties.Set(m.key, decodeSchema(m.value))
				}
				continue
			}
			subs := make(map[string]*jsonschema.Schema, len(ms))
			for _, m := range ms {
				subs[m.key] = decodeSchema(m.value)
			}
			switch k {
			case "$defs":
				s.Definitions = subs
			case "patternProperties":
				s.PatternProperties = subs
			case "dependentSchemas":
				s.DependentSchemas = subs
			}
		case !oneSchema[k] && !schemaList[k] && !schemaMap[k] && faithful(k, v):
			plain[k] = v
		default:
			s.Extras[k] = v
		}
	}
	if len(plain) > 0 {
		b, _ := json.Marshal(plain)
		var p jsonschema.Schema
		_ = json.Unmarshal(b, &p) // every key decoded alone (faithful)
		p.Not, p.If, p.Then, p.Else, p.Items, p.Contains = s.Not, s.If, s.Then, s.Else, s.Items, s.Contains
		p.AdditionalProperties, p.PropertyNames, p.ContentSchema = s.AdditionalProperties, s.PropertyNames, s.ContentSchema
		p.AllOf, p.AnyOf, p.OneOf, p.PrefixItems = s.AllOf, s.AnyOf, s.OneOf, s.PrefixItems
		p.Properties, p.Definitions, p.PatternProperties, p.DependentSchemas = s.Properties, s.Definitions, s.PatternProperties, s.DependentSchemas
		p.Extras = s.Extras
		*s = p
	}
	return s
}

// faithful says whether the struct holds keyword k with value v so that
// it encodes back to the same JSON value.
func faithful(k string, v json.RawMessage) bool {
	in, _ := json.Marshal(map[string]json.RawMessage{k: v})
	var probe jsonschema.Schema
	if err := json.Unmarshal(in, &probe); err != nil {
		return false
	}
	out, err := json.Marshal(&probe)
	if err != nil {
		return false
	}
	return sameJSON(in, out)
}

// sameJSON compares two JSON texts as values, numbers by their text.
func sameJSON(a, b []byte) bool {
	var x, y any
	if decodeNumbers(a, &x) != nil || decodeNumbers(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func decodeNumbers(b []byte, v *any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

func isSchema(v json.RawMessage) bool {
	return len(v) > 0 && (v[0] == '{' || bytes.Equal(v, []byte("true")) || bytes.Equal(v, []byte("false")))
}

func isSchemaList(v json.RawMessage) bool {
	var items []json.RawMessage
	// An empty list (or map, below) would be dropped by the struct's
	// omitempty: it is carried in Extras instead.
	if len(v) == 0 || v[0] != '[' || json.Unmarshal(v, &items) != nil || len(items) == 0 {
		return false
	}
	for _, it := range items {
		if !isSchema(bytes.TrimSpace(it)) {
			return false
		}
	}
	return true
}

func isSchemaMap(v json.RawMessage) bool {
	ms, err := orderedMembers(v)
	if err != nil || len(ms) == 0 {
		return false
	}
	for _, m := range ms {
		if !isSchema(m.value) {
			return false
		}
	}
	return true
}

type member struct {
	key   string
	value json.RawMessage
}

// orderedMembers returns the members of a JSON object in document order
// (a repeated key keeps its last value, in its first place).
func orderedMembers(raw json.RawMessage) ([]member, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	tok, err := d.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var out []member
	at := map[string]int{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		v = bytes.TrimSpace(v)
		if i, ok := at[k]; ok {
			out[i].value = v
			continue
		}
		at[k] = len(out)
		out = append(out, member{k, v})
	}
	return out, nil
}

func kindOf(raw json.RawMessage) string {
	switch raw[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
