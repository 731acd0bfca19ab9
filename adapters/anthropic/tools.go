package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// ErrInvalidTool is returned (wrapped) for a tool the Messages API would
// refuse: a name outside ^[a-zA-Z0-9_-]{1,64}$, or an input schema that is
// not a JSON object or whose type is not "object".
var ErrInvalidTool = errors.New("anthropic: invalid tool")

// namePattern is the Messages API's rule for client tool names.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ValidName reports whether name is a legal client tool name for the
// Messages API (^[a-zA-Z0-9_-]{1,64}$). A toolset's projected names always
// are; tools assembled by hand may not be.
func ValidName(name string) bool { return namePattern.MatchString(name) }

// ToolParams returns the tools as the Messages API's tool definitions, in
// order: pass an Executor's Tools() (or the ModelRequest's Tools). Each
// schema is carried whole: sent as it is ($defs, oneOf,
// additionalProperties, nested objects, ...), with "type":"object", except
// that a top-level oneOf, anyOf or allOf, which the API refuses (or enum
// or not), is merged into one object schema by toolset.ProviderSchema, whose note on the
// alternatives is appended to the description; the SDK param's fields
// (Properties, Required) stay empty. A name the API would refuse or
// a schema that is not an object schema is an error wrapping
// ErrInvalidTool, never a silently renamed tool.
func ToolParams(defs []loop.ToolDef) ([]sdk.ToolUnionParam, error) {
	out := make([]sdk.ToolUnionParam, 0, len(defs))
	for _, d := range defs {
		if !ValidName(d.Name) {
			return nil, fmt.Errorf("%w: name %q is not ^[a-zA-Z0-9_-]{1,64}$", ErrInvalidTool, d.Name)
		}
		schema, note, err := inputSchema(d.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %w", ErrInvalidTool, d.Name, err)
		}
		tp := sdk.ToolParam{Name: d.Name, InputSchema: schema}
		if desc := describe(d.Description, note); desc != "" {
			tp.Description = sdk.String(desc)
		}
		out = append(out, sdk.ToolUnionParam{OfTool: &tp})
	}
	return out, nil
}

// inputSchema is the schema as the SDK's ToolInputSchemaParam, with the
// note of its merge (see wholeSchema).
func inputSchema(schema json.RawMessage) (sdk.ToolInputSchemaParam, string, error) {
	b, note, err := wholeSchema(schema)
	if err != nil {
		return sdk.ToolInputSchemaParam{}, "", err
	}
	return param.Override[sdk.ToolInputSchemaParam](b), note, nil
}

// betaInputSchema is inputSchema for the beta API's schema type.
func betaInputSchema(schema json.RawMessage) (sdk.BetaToolInputSchemaParam, string, error) {
	b, note, err := wholeSchema(schema)
	if err != nil {
		return sdk.BetaToolInputSchemaParam{}, "", err
	}
	return param.Override[sdk.BetaToolInputSchemaParam](b), note, nil
}

// describe is a tool's description with a schema note after it.
func describe(desc, note string) string {
	switch {
	case note == "":
		return desc
	case desc == "":
		return note
	}
	return desc + "\n\n" + note
}

// wholeSchema checks a JSON Schema is one the API takes for a tool's
// input (an object whose type, when given, is "object", whose properties
// is an object and whose required is a list of strings) and returns it
// whole with "type":"object", to be sent as it is: every keyword, under
// any key (the SDK's own fields would drop all but properties and
// required, and its extra fields cannot carry every key), numbers as
// written. A top-level oneOf, anyOf or allOf (which the API refuses; enum
// and not too, as for OpenAI) is merged into one object schema by toolset.ProviderSchema, and
// note is what the merge tells the model. An empty schema is
// {"type":"object","properties":{}}.
func wholeSchema(schema json.RawMessage) (_ json.RawMessage, note string, _ error) {
	if len(schema) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`), "", nil
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(schema))
	d.UseNumber()
	if err := d.Decode(&m); err != nil || !json.Valid(schema) {
		if err == nil {
			err = errors.New("trailing data")
		}
		return nil, "", fmt.Errorf("input schema is not a JSON object: %w", err)
	}
	if m == nil {
		return nil, "", errors.New("input schema is null")
	}
	if t, ok := m["type"]; ok && t != "object" {
		return nil, "", fmt.Errorf("input schema has type %v, want \"object\"", t)
	}
	if p, ok := m["properties"]; ok {
		if _, isObj := p.(map[string]any); !isObj {
			return nil, "", errors.New("input schema's properties is not an object")
		}
	}
	if r, ok := m["required"]; ok {
		list, isList := r.([]any)
		if !isList {
			return nil, "", errors.New("input schema's required is not an array")
		}
		for i, v := range list {
			if _, isStr := v.(string); !isStr {
				return nil, "", fmt.Errorf("input schema's required[%d] is not a string", i)
			}
		}
	}
	m, note = toolset.ProviderSchema(m) // m is this call's own decoding either way
	m["type"] = "object"
	if len(m) == 1 {
		m["properties"] = map[string]any{}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, "", fmt.Errorf("input schema: %w", err)
	}
	return b, note, nil
}
