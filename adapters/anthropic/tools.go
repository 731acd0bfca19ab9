package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
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
// schema is carried whole: "properties" and "required" in their fields,
// every other keyword ($defs, oneOf, additionalProperties, descriptions of
// nested objects, ...) as is beside them. A name the API would refuse or
// a schema that is not an object schema is an error wrapping
// ErrInvalidTool, never a silently renamed tool.
func ToolParams(defs []loop.ToolDef) ([]sdk.ToolUnionParam, error) {
	out := make([]sdk.ToolUnionParam, 0, len(defs))
	for _, d := range defs {
		if !ValidName(d.Name) {
			return nil, fmt.Errorf("%w: name %q is not ^[a-zA-Z0-9_-]{1,64}$", ErrInvalidTool, d.Name)
		}
		props, required, extra, err := splitSchema(d.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %w", ErrInvalidTool, d.Name, err)
		}
		tp := sdk.ToolParam{Name: d.Name, InputSchema: sdk.ToolInputSchemaParam{Properties: props, Required: required, ExtraFields: extra}}
		if d.Description != "" {
			tp.Description = sdk.String(d.Description)
		}
		out = append(out, sdk.ToolUnionParam{OfTool: &tp})
	}
	return out, nil
}

// betaInputSchema is splitSchema for the beta API's schema type.
func betaInputSchema(schema json.RawMessage) (sdk.BetaToolInputSchemaParam, error) {
	props, required, extra, err := splitSchema(schema)
	if err != nil {
		return sdk.BetaToolInputSchemaParam{}, err
	}
	return sdk.BetaToolInputSchemaParam{Properties: props, Required: required, ExtraFields: extra}, nil
}

// splitSchema takes a JSON Schema apart into the SDK's fields: properties,
// required, and every other keyword (but "type", which the SDK always
// sends as "object"). An empty schema is {"type":"object"}.
func splitSchema(schema json.RawMessage) (props any, required []string, extra map[string]any, err error) {
	if len(schema) == 0 {
		return map[string]any{}, nil, nil, nil // sent as {"type":"object","properties":{}}
	}
	var m map[string]any
	if err := json.Unmarshal(schema, &m); err != nil {
		return nil, nil, nil, fmt.Errorf("input schema is not a JSON object: %w", err)
	}
	if m == nil {
		return nil, nil, nil, errors.New("input schema is null")
	}
	if t, ok := m["type"]; ok && t != "object" {
		return nil, nil, nil, fmt.Errorf("input schema has type %v, want \"object\"", t)
	}
	delete(m, "type")
	if p, ok := m["properties"]; ok {
		if _, isObj := p.(map[string]any); !isObj {
			return nil, nil, nil, errors.New("input schema's properties is not an object")
		}
		props = p
		delete(m, "properties")
	}
	if r, ok := m["required"]; ok {
		list, isList := r.([]any)
		if !isList {
			return nil, nil, nil, errors.New("input schema's required is not an array")
		}
		required = make([]string, len(list))
		for i, v := range list {
			s, isStr := v.(string)
			if !isStr {
				return nil, nil, nil, fmt.Errorf("input schema's required[%d] is not a string", i)
			}
			required[i] = s
		}
		delete(m, "required")
	}
	if len(m) > 0 {
		extra = m
	}
	if props == nil && required == nil && extra == nil {
		props = map[string]any{} // an all-zero schema would be left out of the request
	}
	return props, required, extra, nil
}
