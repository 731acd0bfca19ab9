package toolset

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
)

// ProviderSchema rewrites a tool's input schema into the shape model
// providers accept for a function's parameters, and returns the rewritten
// schema with a note for the model on what the rewrite loosened (empty
// when nothing was).
//
// OpenAI refuses function parameters that have "oneOf", "anyOf", "allOf",
// "enum" or "not" at the top level, or whose type is not "object";
// Anthropic refuses an input_schema with "oneOf", "anyOf" or "allOf" at
// the top level. MCP allows all of them, and schemas generated from
// unions (zod, pydantic) have them. ProviderSchema merges them away:
//
//   - a top-level "oneOf" or "anyOf": the properties of every branch are
//     merged (a property that several branches declare with different
//     schemas becomes the "anyOf" of those schemas) and a property is
//     required only when every branch requires it; the note lists the
//     branches' argument sets, e.g. "Accepts exactly one of these
//     argument sets: {to} | {count}." ("at least one" for anyOf);
//   - a top-level "allOf": the branches' properties are merged (a property
//     declared differently by several becomes their "allOf") and every
//     property a branch requires is required;
//   - the top level's own "properties" and "required" are kept, a
//     property also declared by the branches becoming the "allOf" of both;
//   - a branch that is a "$ref" to "#/$defs/name" or
//     "#/definitions/name" is resolved, one level; a branch that is
//     itself a combinator of objects is merged the same way; a branch
//     that cannot be an object (say {"type":"string"}: a tool's arguments
//     always are an object) is dropped;
//   - a top-level "enum" (the argument objects allowed) is dropped and its
//     values are listed in the note; a top-level "not" is dropped;
//   - the result has "type": "object" and "properties"; every other
//     top-level keyword ("$defs", "additionalProperties", "description",
//     ...) is kept as it is.
//
// ProviderSchema does not touch anything below the top level: a "oneOf"
// inside a property, "$ref"s inside properties and "$defs" stay as they
// are, which both providers accept. It does not make the schema meet
// OpenAI's strict mode (every property required, "additionalProperties":
// false on every object). It does not change what a tool is called with:
// the model's arguments go to the MCP server as the model wrote them, and
// the server still checks them against its own schema, so a branch's
// constraint the merged schema no longer states (which properties go
// together, a "not") is still enforced there.
//
// A schema with none of "oneOf", "anyOf", "allOf", "enum" and "not" at the
// top level is returned as it is: the same map, not a copy, at no
// allocation. ProviderSchema never modifies schema; the result may share
// sub-schemas with it, so treat both as read-only. The result is a
// function of schema alone (the note's order is the branches' order).
func ProviderSchema(schema map[string]any) (out map[string]any, note string) {
	if !hasTopCombinator(schema) {
		return schema, ""
	}
	m := &merger{defs: schema, budget: maxBranches}
	props, required, notes := m.object(schema, 0)
	out = make(map[string]any, len(schema)+2)
	for k, v := range schema {
		switch k {
		case "oneOf", "anyOf", "allOf", "enum", "not", "properties", "required", "type":
		default:
			out[k] = v
		}
	}
	out["type"] = "object"
	out["properties"] = props.m
	if len(required) > 0 {
		list := make([]any, len(required))
		for i, r := range required {
			list[i] = r
		}
		out["required"] = list
	}
	return out, strings.Join(notes, " ")
}

// hasTopCombinator reports whether a schema has a keyword at its top level
// that ProviderSchema removes.
func hasTopCombinator(schema map[string]any) bool {
	for _, k := range [...]string{"oneOf", "anyOf", "allOf", "enum", "not"} {
		if _, ok := schema[k]; ok {
			return true
		}
	}
	return false
}

// maxBranchDepth bounds how deep ProviderSchema follows combinators nested
// in combinators' branches (and $refs resolved there), and maxBranches how
// many branches it merges in all: a schema whose branches refer to
// definitions with many branches of their own would otherwise take
// exponential time, on every model request. Past either bound a branch
// adds its own properties and required only.
const (
	maxBranchDepth = 4
	maxBranches    = 1000
)

// merger merges an object schema's top-level combinators. defs is the root
// schema, whose "$defs" and "definitions" branch $refs resolve in; budget
// is the branches left to merge.
type merger struct {
	defs   map[string]any
	budget int
}

// object returns the properties, required names and notes of an object
// schema with its top-level combinators merged.
func (m *merger) object(s map[string]any, depth int) (*propSet, []string, []string) {
	m.budget--
	props := newPropSet()
	own, _ := s["properties"].(map[string]any)
	for k, v := range own {
		props.m[k] = v
	}
	required := appendNew(nil, stringList(s["required"])...)
	var notes []string
	if depth >= maxBranchDepth || m.budget < 0 {
		return props, required, notes
	}
	if list, ok := s["allOf"].([]any); ok {
		for _, b := range list {
			bs, ok := m.branch(b)
			if !ok {
				continue
			}
			bp, br, bn := m.object(bs, depth+1)
			mergeProps(props, bp, "allOf")
			required = appendNew(required, br...)
			notes = append(notes, bn...)
		}
	}
	for _, kw := range [...]string{"oneOf", "anyOf"} {
		list, ok := s[kw].([]any)
		if !ok {
			continue
		}
		union := newPropSet()
		var common, forms []string
		n := 0
		for _, b := range list {
			bs, ok := m.branch(b)
			if !ok {
				continue
			}
			bp, br, bn := m.object(bs, depth+1)
			mergeProps(union, bp, "anyOf")
			if n == 0 {
				common = br
			} else {
				common = intersect(common, br)
			}
			n++
			if ref, ok := bs["$ref"].(string); ok {
				forms = append(forms, ref) // not resolved
			} else {
				forms = append(forms, form(bp.m, br))
			}
			notes = append(notes, bn...)
		}
		mergeProps(props, union, "allOf")
		required = appendNew(required, common...)
		if len(forms) > 0 {
			which := "exactly one"
			if kw == "anyOf" {
				which = "at least one"
			}
			notes = append(notes, "Accepts "+which+" of these argument sets: "+strings.Join(forms, " | ")+".")
		}
	}
	if depth == 0 {
		if list, ok := s["enum"].([]any); ok && len(list) > 0 {
			var vals []string
			for _, v := range list {
				if b, err := json.Marshal(v); err == nil {
					vals = append(vals, string(b))
				}
			}
			if len(vals) > 0 {
				notes = append(notes, "Accepts only these arguments: "+strings.Join(vals, " | ")+".")
			}
		}
	}
	return props, required, notes
}

// branch returns a combinator's branch as an object schema: a $ref into
// the root's "$defs" or "definitions" resolved (its siblings merged as an
// allOf), and false for a branch that cannot be an object.
func (m *merger) branch(b any) (map[string]any, bool) {
	s, ok := b.(map[string]any)
	if !ok {
		return nil, false // true, false: no properties to merge
	}
	if ref, ok := s["$ref"].(string); ok {
		if target, ok := m.resolve(ref); ok {
			if len(s) == 1 {
				s = target
			} else {
				rest := make(map[string]any, len(s))
				for k, v := range s {
					if k != "$ref" {
						rest[k] = v
					}
				}
				s = map[string]any{"allOf": []any{target, rest}}
			}
		}
	}
	return s, mayBeObject(s["type"])
}

// resolve looks a "#/$defs/name" or "#/definitions/name" reference up in
// the root schema.
func (m *merger) resolve(ref string) (map[string]any, bool) {
	for _, kw := range [...]string{"$defs", "definitions"} {
		prefix := "#/" + kw + "/"
		if !strings.HasPrefix(ref, prefix) {
			continue
		}
		name := strings.ReplaceAll(strings.ReplaceAll(ref[len(prefix):], "~1", "/"), "~0", "~")
		defs, _ := m.defs[kw].(map[string]any)
		target, ok := defs[name].(map[string]any)
		return target, ok
	}
	return nil, false
}

// mayBeObject reports whether a "type" keyword's value admits an object
// (an absent type does).
func mayBeObject(t any) bool {
	switch t := t.(type) {
	case nil:
		return true
	case string:
		return t == "object"
	case []any:
		for _, x := range t {
			if x == "object" {
				return true
			}
		}
		return false
	}
	return true
}

// mergeProps adds src's properties to dst; a property in both with
// different schemas becomes the combination kw ("anyOf" or "allOf") of
// them, a list that grows rather than nests when dst's schema is already
// such a combination made here.
func mergeProps(dst *propSet, src *propSet, kw string) {
	for k, v := range src.m {
		old, ok := dst.m[k]
		switch {
		case !ok:
			dst.m[k] = v
			if c := src.made[k]; c != "" {
				dst.mark(k, c)
			}
		case reflect.DeepEqual(old, v):
		case dst.made[k] == kw:
			combo := old.(map[string]any)
			list := combo[kw].([]any)
			if !containsSchema(list, v) {
				combo[kw] = append(list[:len(list):len(list)], v)
			}
		default:
			dst.m[k] = map[string]any{kw: []any{old, v}}
			dst.mark(k, kw)
		}
	}
}

// propSet is merged properties, with the names whose schema is a
// combination made here ("anyOf" or "allOf"), so that a third branch's
// schema joins the list instead of nesting one.
type propSet struct {
	m    map[string]any
	made map[string]string
}

func newPropSet() *propSet { return &propSet{m: map[string]any{}} }

func (p *propSet) mark(k, kw string) {
	if p.made == nil {
		p.made = map[string]string{}
	}
	p.made[k] = kw
}

func containsSchema(list []any, v any) bool {
	for _, x := range list {
		if reflect.DeepEqual(x, v) {
			return true
		}
	}
	return false
}

// appendNew appends the names not already in list.
func appendNew(list []string, names ...string) []string {
	for _, n := range names {
		if !contains(list, n) {
			list = append(list, n)
		}
	}
	return list
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if contains(b, x) {
			out = append(out, x)
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

// form is a branch's argument set for the note: the names it requires, or
// when it requires none, the names it declares (sorted).
func form(props map[string]any, required []string) string {
	names := required
	if len(names) == 0 {
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
	}
	return "{" + strings.Join(names, ", ") + "}"
}
