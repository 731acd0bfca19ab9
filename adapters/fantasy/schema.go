package fantasy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// ErrSchema is wrapped by the errors of an input schema that cannot be a
// tool's: one that is not JSON, or whose top level is not a JSON object.
var ErrSchema = errors.New("fantasy: invalid input schema")

// maxExpansion bounds the schema nodes that inlining $refs may produce
// (definitions that use each other can grow exponentially when inlined).
const maxExpansion = 20000

// decodeSchema decodes a tool's input schema. A number is an int64 when
// it is an integer that fits, a float64 when it has a fraction or an
// exponent and is finite, and otherwise its text as a json.RawMessage
// (an integer past int64, a number past float64): the SDKs fantasy's
// providers use write a json.Number as a string, and honour a
// json.Marshaler. An absent schema is {"type":"object"}.
func decodeSchema(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return map[string]any{"type": "object"}, nil
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("%w: not JSON", ErrSchema)
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("%w: the top level is %s, not an object", ErrSchema, kindOf(raw))
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	return numbers(m).(map[string]any), nil
}

// numbers replaces the json.Numbers in v, in place.
func numbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = numbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = numbers(e)
		}
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		if f, err := v.Float64(); err == nil && strings.ContainsAny(v.String(), ".eE") {
			return f
		}
		return json.RawMessage(v.String())
	}
	return v
}

// flat is a schema as fantasy's ToolInfo carries it.
type flat struct {
	properties map[string]any
	required   []string
	// note is said to the model after the description: the argument
	// forms of a top-level oneOf/anyOf, and what could not be expanded.
	note string
}

// flatten turns an input schema into properties and required, the only
// parts of a schema fantasy's ToolInfo keeps:
//
//   - local $refs ("#/$defs/x", "#/definitions/x", any "#/..." pointer)
//     are inlined, recursively; a $ref that refers to itself through its
//     own expansion is cut to {} (any value) and named in the note, as is
//     one that does not resolve;
//   - a top-level oneOf, anyOf or allOf is then merged by
//     toolset.ProviderSchema (the branches' properties merged, required
//     what every oneOf/anyOf branch requires and what any allOf branch
//     does), whose note on the forms the arguments take goes to the note;
//   - every other top-level keyword (additionalProperties, if/then/else,
//     ...) is not carried: the MCP server still checks the arguments.
func flatten(root map[string]any) flat {
	x := &expander{root: root, budget: maxExpansion}
	top, _ := x.expand(root, nil).(map[string]any)
	top, note := toolset.ProviderSchema(top) // top is expand's copy: nothing shared with root
	f := flat{properties: map[string]any{}, required: []string{}}
	if props, ok := top["properties"].(map[string]any); ok {
		f.properties = props
	}
	for _, r := range stringList(top["required"]) {
		if !contains(f.required, r) {
			f.required = append(f.required, r)
		}
	}
	var notes []string
	if note != "" {
		notes = append(notes, note)
	}
	if len(x.cut) > 0 {
		sort.Strings(x.cut) // found in map order: sorted, so the description is stable
		notes = append(notes, "Not expanded (any value accepted here, the server checks it): "+strings.Join(x.cut, ", ")+".")
	}
	f.note = strings.Join(notes, " ")
	return f
}

func stringList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, s := range list {
		if s, ok := s.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// values are keywords whose contents are data, not schemas: a "$ref" in
// them is not a reference.
var values = map[string]bool{"const": true, "enum": true, "default": true, "examples": true}

// annotations may sit beside a $ref and are merged into its expansion;
// any other sibling keyword makes the expansion an allOf.
var annotations = map[string]bool{"description": true, "title": true, "default": true, "examples": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "$comment": true}

type expander struct {
	root   map[string]any
	budget int
	cut    []string
}

// expand returns a copy of v with local $refs inlined. stack holds the
// refs being expanded (a ref met again inside its own expansion is
// recursive and cut).
func (x *expander) expand(v any, stack []string) any {
	x.budget--
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			return x.ref(v, ref, stack)
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			switch {
			case k == "$defs" || k == "definitions":
				// inlined where they are used
			case values[k]:
				out[k] = e
			default:
				out[k] = x.expand(e, stack)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = x.expand(e, stack)
		}
		return out
	}
	return v
}

func (x *expander) ref(node map[string]any, ref string, stack []string) any {
	target, ok := x.pointer(ref)
	if !ok || contains(stack, ref) || x.budget <= 0 {
		if !contains(x.cut, ref) {
			x.cut = append(x.cut, ref)
		}
		out := map[string]any{}
		if d, ok := node["description"]; ok {
			out["description"] = d
		}
		return out
	}
	expanded := x.expand(target, append(stack[:len(stack):len(stack)], ref))
	var siblings []string
	for k := range node {
		if k != "$ref" {
			siblings = append(siblings, k)
		}
	}
	if len(siblings) == 0 {
		return expanded
	}
	rest := make(map[string]any, len(siblings))
	plain := true
	for _, k := range siblings {
		if !annotations[k] {
			plain = false
		}
		if values[k] {
			rest[k] = node[k]
		} else {
			rest[k] = x.expand(node[k], stack)
		}
	}
	if m, ok := expanded.(map[string]any); ok && plain {
		for k, v := range rest {
			m[k] = v
		}
		return m
	}
	return map[string]any{"allOf": []any{expanded, rest}}
}

// pointer resolves a local reference ("#" and a JSON pointer) in the root.
func (x *expander) pointer(ref string) (any, bool) {
	if !strings.HasPrefix(ref, "#") {
		return nil, false
	}
	var cur any = x.root
	if ref == "#" {
		return cur, true
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil, false
	}
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
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
