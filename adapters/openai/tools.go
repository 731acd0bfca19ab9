package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// ToolOptions shape the tool definitions sent to the model.
type ToolOptions struct {
	// Deferred reports the tools the Responses API should load through
	// tool search: they are sent with defer_loading true, and a
	// {"type": "tool_search"} tool is added to the request. Nil defers
	// none. Chat Completions has no deferred loading and ignores it.
	Deferred func(name string) bool
	// Strict sets strict schema adherence on every function. MCP schemas
	// rarely meet strict mode's subset of JSON Schema (every property
	// required, additionalProperties false), so it is off by default. The
	// schemas are not rewritten for strict mode (optional properties are
	// not made required and nullable, which would change the arguments the
	// tool gets): with Strict, a schema outside the subset, a merged
	// top-level oneOf's included, is refused by the API.
	Strict bool
}

// ErrSchema is wrapped by the error of a tool whose input schema is not
// a JSON object.
var ErrSchema = errors.New("openai: input schema is not a JSON object")

// ResponsesTools returns the tools as Responses API function tools, in
// order: name, description and the input schema carried whole ($defs,
// oneOf, nested objects and all; a schema without a top-level "type" gets
// "type": "object", which the API requires and MCP implies), except that a
// top-level oneOf, anyOf, allOf, enum or not, which the API refuses, is
// merged into one object schema by toolset.ProviderSchema, whose note on
// the alternatives is appended to the description. With
// opts.Deferred, the deferred ones load through tool search (see
// ToolOptions). opts may be nil.
func ResponsesTools(defs []loop.ToolDef, opts *ToolOptions) ([]responses.ToolUnionParam, error) {
	if opts == nil {
		opts = &ToolOptions{}
	}
	out := make([]responses.ToolUnionParam, 0, len(defs)+1)
	search := false
	for _, d := range defs {
		schema, note, err := parameters(d)
		if err != nil {
			return nil, err
		}
		f := &responses.FunctionToolParam{Name: d.Name, Parameters: schema, Strict: oai.Bool(opts.Strict)}
		if desc := describe(d.Description, note); desc != "" {
			f.Description = oai.String(desc)
		}
		if opts.Deferred != nil && opts.Deferred(d.Name) {
			f.DeferLoading = oai.Bool(true)
			search = true
		}
		out = append(out, responses.ToolUnionParam{OfFunction: f})
	}
	if search {
		out = append(out, responses.ToolUnionParam{OfToolSearch: &responses.ToolSearchToolParam{}})
	}
	return out, nil
}

// ChatTools returns the tools as Chat Completions function tools, in
// order, schemas carried whole (top-level combinators merged) as in
// ResponsesTools. opts may be nil;
// Deferred does not apply.
func ChatTools(defs []loop.ToolDef, opts *ToolOptions) ([]oai.ChatCompletionToolUnionParam, error) {
	strict := opts != nil && opts.Strict
	out := make([]oai.ChatCompletionToolUnionParam, 0, len(defs))
	for _, d := range defs {
		schema, note, err := parameters(d)
		if err != nil {
			return nil, err
		}
		fd := shared.FunctionDefinitionParam{Name: d.Name, Parameters: shared.FunctionParameters(schema), Strict: oai.Bool(strict)}
		if desc := describe(d.Description, note); desc != "" {
			fd.Description = oai.String(desc)
		}
		out = append(out, oai.ChatCompletionFunctionTool(fd))
	}
	return out, nil
}

// parameters decodes a tool's input schema, numbers kept exact, with its
// top-level combinators merged (toolset.ProviderSchema); note is what the
// merge tells the model.
func parameters(d loop.ToolDef) (schema map[string]any, note string, err error) {
	raw := d.InputSchema
	if len(raw) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, "", nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil || !json.Valid(raw) {
		return nil, "", fmt.Errorf("%w: tool %q", ErrSchema, d.Name)
	}
	exactNumbers(m)
	m, note = toolset.ProviderSchema(m)
	if _, ok := m["type"]; !ok {
		m["type"] = "object" // m is this call's own decoding (ProviderSchema returns it when it changes nothing)
	}
	return m, note, nil
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

// exactNumbers replaces the json.Numbers of a decoded schema with their
// JSON text as a json.RawMessage: the SDK's encoder writes a json.Number
// as a string, and a float64 rounds integers past 2^53.
func exactNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		return json.RawMessage(v)
	case map[string]any:
		for k, x := range v {
			v[k] = exactNumbers(x)
		}
	case []any:
		for i, x := range v {
			v[i] = exactNumbers(x)
		}
	}
	return v
}

// DeferredToolsetTools returns a toolset's tools for the Responses API
// with deferred loading taking the place of the toolset's disclosure
// tiers: every tool whose schema the toolset would cut (a server over its
// disclosure budget) gets its full schema back (Toolset.Describe) and is
// reported by the returned func as deferred, so the API keeps it out of
// the model's context until its tool search loads it. The toolset's
// mcp__describe_tool is left out, having nothing left to describe; every
// other tool is as loop.ToolsetTools gives it. Pass the func as
// ToolOptions.Deferred.
func DeferredToolsetTools(ctx context.Context, ts *toolset.Toolset) ([]loop.Tool, func(name string) bool, error) {
	infos, err := ts.Tools(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("openai: toolset tools: %w", err)
	}
	tools, err := loop.ToolsetTools(ctx, ts)
	if err != nil {
		return nil, nil, err
	}
	tier := make(map[string]toolset.Tier, len(infos))
	for _, ti := range infos {
		tier[ti.Name] = ti.Disclosure
	}
	deferred := map[string]bool{}
	out := tools[:0:0]
	for _, t := range tools {
		if t.Name == toolset.DescribeToolName && t.Server == "" {
			continue
		}
		if tr, ok := tier[t.Name]; ok && tr != toolset.Inline && t.Server != "" {
			sum, err := ts.Describe(ctx, t.Name)
			if err != nil {
				return nil, nil, fmt.Errorf("openai: describe %q: %w", t.Name, err)
			}
			if t.InputSchema, err = json.Marshal(sum.InputSchema); err != nil {
				return nil, nil, fmt.Errorf("openai: schema of %q: %w", t.Name, err)
			}
			deferred[t.Name] = true
		}
		out = append(out, t)
	}
	return out, func(name string) bool { return deferred[name] }, nil
}
