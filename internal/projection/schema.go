package projection

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/diag"
)

// SanitizeSchema returns a copy of schema in which every string a model
// could read has been passed through Sanitize: every object key and every
// string value at every depth, whatever keyword holds it (descriptions,
// titles, $comment, defaults, examples, enum and const values, property
// names, required entries, patterns, unknown keywords...). It never mutates
// or shares any part of schema, and is nil when schema is nil.
//
// Values that are not plain JSON (json.RawMessage, structs, typed slices)
// are copied as their JSON encoding decodes; one that does not encode
// becomes null. When Sanitize maps two keys of one object to the same key,
// a key Sanitize leaves unchanged wins, else the smallest raw key (in byte
// order): the output does not depend on map order.
//
// Some of those strings are binding: the model echoes them back (property
// names, enum values) or the server's validation depends on their exact
// bytes (patterns, $ref). SanitizeSchema sanitizes them like the rest, so
// a schema for which HiddenBindings is not nil is no longer the server's:
// such a tool must not be offered at all (see the package doc, "Hygiene").
// SanitizeSchema is idempotent, and HiddenBindings of its result is nil.
func SanitizeSchema(schema map[string]any) map[string]any {
	if schema == nil {
		return nil
	}
	w := walker{build: true, path: make([]string, 0, 16)}
	return w.schemaObject(schema)
}

// SanitizeObject returns a copy of m, a JSON object (as SanitizeSchema
// takes one), in which every key and every string at every depth has been
// passed through Sanitize, keys that collide kept as SanitizeSchema keeps
// them; nil when m is nil. It never mutates or shares any part of m. Use it
// on free-form JSON a server lists that is not a schema, such as an item's
// _meta.
func SanitizeObject(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	w := walker{build: true}
	return w.object(m, false, func(_ string, v any) any { return w.value(v, false) })
}

// HiddenDiagnostic reports a tool withheld because its schemas (input and
// output, as SchemaMap takes them) hold binding strings Sanitize would
// change (HiddenBindings): a diag.ToolDrift diagnostic of origin server
// that names the tool, its server and at most five of the places, every
// name and pointer segment passed through safe (which must leave nothing
// of the strings a person or a model should not read). ok is false, and
// the diagnostic empty, when the schemas hide nothing.
func HiddenDiagnostic(server, tool string, input, output any, safe func(string) string) (d diag.Diagnostic, ok bool) {
	const maxPlaces = 5
	var where []string
	n := 0
	for _, s := range []struct {
		field  string
		schema any
	}{{"inputSchema", input}, {"outputSchema", output}} {
		for _, p := range HiddenBindings(SchemaMap(s.schema)) {
			n++
			if len(where) == maxPlaces {
				continue
			}
			segs := strings.Split(p, "/")[1:]
			for i, seg := range segs {
				segs[i] = safe(seg)
			}
			where = append(where, s.field+"/"+strings.Join(segs, "/"))
		}
	}
	if n == 0 {
		return diag.Diagnostic{}, false
	}
	if n > len(where) {
		where = append(where, fmt.Sprintf("and %d more", n-len(where)))
	}
	return diag.New(diag.ToolDrift, "", server,
		"tool %s of server %s is withheld: names or values a call must match exactly hide characters (%s); shown sanitized the tool could not be called, shown as sent they would pass hidden text to the model",
		safe(tool), safe(server), strings.Join(where, ", ")), true
}

// HiddenBindings returns the JSON pointers (RFC 6901, into schema as given)
// of the binding strings of a JSON Schema that Sanitize would change, in
// byte order; nil when there are none. A binding string is one whose exact
// bytes a call or the server's validation depends on:
//
//   - the keys of "properties", "patternProperties", "dependentSchemas",
//     "dependencies", "$defs" and "definitions" (the pointer names the
//     member);
//   - every key and string value inside the keywords that constrain a
//     value or locate a schema: "type", "enum", "const", "required",
//     "dependentRequired", "format", "pattern", "$ref", "$dynamicRef",
//     "$recursiveRef", "$id", "$anchor", "$dynamicAnchor",
//     "$recursiveAnchor", "$schema", "$vocabulary", "contentEncoding",
//     "contentMediaType", the numeric and count bounds, and the array
//     form of a "dependencies" member;
//   - the keyword names themselves (the keys of a schema object), and any
//     value where a schema is expected that is neither an object nor a
//     boolean.
//
// Everything else is an annotation, which Sanitize may change freely: the
// values of "title", "description", "$comment", "default", "examples",
// "deprecated", "readOnly", "writeOnly" and of every keyword this package
// does not know (JSON Schema treats unknown keywords as annotations).
// Schemas are found below "items", "prefixItems", "additionalItems",
// "contains", "additionalProperties", "unevaluatedProperties",
// "unevaluatedItems", "propertyNames", "not", "if", "then", "else",
// "contentSchema", "allOf", "anyOf", "oneOf" and the members of the
// keyword objects above, at any depth.
func HiddenBindings(schema map[string]any) []string {
	if schema == nil {
		return nil
	}
	w := walker{report: true, path: make([]string, 0, 16)}
	w.schemaObject(schema)
	slices.Sort(w.hidden)
	return w.hidden
}

// role is what a schema keyword's value is.
type role uint8

const (
	roleAnnotation   role = iota // text for people and models: never binding
	roleBinding                  // every key and string in it is binding
	roleSchema                   // one schema
	roleItems                    // a schema, or an array of schemas (draft-07 tuples)
	roleSchemaList               // an array of schemas
	roleSchemaMap                // an object of schemas, its keys binding
	roleDependencies             // an object of schemas or arrays of names, its keys binding
)

func roleOf(keyword string) role {
	switch keyword {
	case "title", "description", "$comment", "default", "examples", "deprecated", "readOnly", "writeOnly":
		return roleAnnotation
	case "additionalProperties", "unevaluatedProperties", "unevaluatedItems", "additionalItems", "contains",
		"propertyNames", "not", "if", "then", "else", "contentSchema":
		return roleSchema
	case "items":
		return roleItems
	case "allOf", "anyOf", "oneOf", "prefixItems":
		return roleSchemaList
	case "properties", "patternProperties", "dependentSchemas", "$defs", "definitions":
		return roleSchemaMap
	case "dependencies":
		return roleDependencies
	case "type", "enum", "const", "required", "dependentRequired", "format", "pattern",
		"$ref", "$dynamicRef", "$recursiveRef", "$id", "$anchor", "$dynamicAnchor", "$recursiveAnchor",
		"$schema", "$vocabulary", "contentEncoding", "contentMediaType",
		"multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
		"maxLength", "minLength", "maxItems", "minItems", "uniqueItems",
		"maxContains", "minContains", "maxProperties", "minProperties":
		return roleBinding
	}
	return roleAnnotation // unknown keywords are annotations
}

// walker walks a schema once: building its sanitized copy (build), or
// collecting the pointers of the binding strings Sanitize changes
// (report), which needs no copy and skips annotations.
type walker struct {
	build, report bool
	path          []string // the raw segments of the current value's pointer
	hidden        []string
}

// flag records the current value (or member) as a hidden binding.
func (w *walker) flag() {
	if !w.report {
		return
	}
	var b strings.Builder
	for _, seg := range w.path {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(seg))
	}
	w.hidden = append(w.hidden, b.String())
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func (w *walker) at(seg string, f func() any) any {
	w.path = append(w.path, seg)
	v := f()
	w.path = w.path[:len(w.path)-1]
	return v
}

// schema walks a value where a schema is expected.
func (w *walker) schema(v any) any {
	switch t := plain(v).(type) {
	case map[string]any:
		return w.schemaObject(t)
	case bool:
		return t
	default:
		return w.value(v, true) // not a schema: conservatively binding
	}
}

// schemaObject walks a schema object: its keys are keywords.
func (w *walker) schemaObject(m map[string]any) map[string]any {
	return w.object(m, true, func(k string, v any) any {
		switch roleOf(k) {
		case roleSchema:
			return w.schema(v)
		case roleItems:
			if _, ok := elems(plain(v)); ok {
				return w.schemaList(v)
			}
			return w.schema(v)
		case roleSchemaList:
			return w.schemaList(v)
		case roleSchemaMap, roleDependencies:
			pm, ok := plain(v).(map[string]any)
			if !ok {
				return w.value(v, true)
			}
			deps := roleOf(k) == roleDependencies
			return w.object(pm, true, func(_ string, s any) any {
				if deps {
					if _, names := elems(plain(s)); names {
						return w.value(s, true) // a property dependency: names
					}
				}
				return w.schema(s)
			})
		case roleBinding:
			return w.value(v, true)
		default:
			return w.value(v, false)
		}
	})
}

// schemaList walks an array of schemas.
func (w *walker) schemaList(v any) any {
	es, ok := elems(plain(v))
	if !ok {
		return w.value(v, true)
	}
	var out []any
	if w.build {
		out = make([]any, len(es))
	}
	for i, e := range es {
		s := w.at(strconv.Itoa(i), func() any { return w.schema(e) })
		if w.build {
			out[i] = s
		}
	}
	return out
}

// value walks a JSON value whose strings are binding or not.
func (w *walker) value(v any, binding bool) any {
	if !binding && !w.build {
		return nil // nothing binding below an annotation
	}
	pv := plain(v)
	switch t := pv.(type) {
	case string:
		s := Sanitize(t)
		if s == t {
			return pv // no new interface value: no allocation
		}
		if binding {
			w.flag()
		}
		return s
	case map[string]any:
		return w.object(t, binding, func(_ string, e any) any { return w.value(e, binding) })
	case []any:
		var out []any
		if w.build {
			out = make([]any, len(t))
		}
		for i, e := range t {
			c := w.at(strconv.Itoa(i), func() any { return w.value(e, binding) })
			if w.build {
				out[i] = c
			}
		}
		return out
	default:
		return pv // null, booleans and numbers
	}
}

// object walks an object whose keys are binding or not, child walking each
// member's value. Keys Sanitize changes come last, in byte order, and take
// their sanitized key only when no earlier member has it.
func (w *walker) object(m map[string]any, keysBinding bool, child func(k string, v any) any) map[string]any {
	var out map[string]any
	if w.build {
		out = make(map[string]any, len(m))
	}
	var dirty []string
	for k, v := range m {
		if Sanitize(k) != k {
			dirty = append(dirty, k)
			continue
		}
		c := w.at(k, func() any { return child(k, v) })
		if w.build {
			out[k] = c
		}
	}
	slices.Sort(dirty)
	for _, k := range dirty {
		c := w.at(k, func() any {
			if keysBinding {
				w.flag()
			}
			return child(k, m[k])
		})
		if w.build {
			if sk := Sanitize(k); !has(out, sk) {
				out[sk] = c
			}
		}
	}
	return out
}

func has(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

// elems returns the elements of an array (as plain decodes one).
func elems(v any) ([]any, bool) {
	a, ok := v.([]any)
	return a, ok
}

// plain returns v as encoding/json decodes JSON into an any: a
// map[string]any, []any, string, float64, bool or nil. Those are returned
// as they are (not copied); typed slices and maps are converted one level
// (their elements are plain'd when walked); anything else goes through its
// JSON encoding (nil when it has none).
func plain(v any) any {
	switch t := v.(type) {
	case nil, string, bool, float64, map[string]any, []any:
		return v
	case []string:
		out := make([]any, len(t))
		for i, s := range t {
			out[i] = s
		}
		return out
	case []map[string]any:
		out := make([]any, len(t))
		for i, m := range t {
			out[i] = m
		}
		return out
	case float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return t // a number: kept as it is
	case json.RawMessage:
		var d any
		if json.Unmarshal(t, &d) != nil {
			return nil
		}
		return d
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var d any
	if json.Unmarshal(b, &d) != nil {
		return nil
	}
	return d
}

// SchemaMap turns a schema as a client decoded it (the go-sdk leaves a
// tool's schemas as any) into a JSON object: v itself when it is a
// map[string]any (not copied), else v encoded and decoded as JSON. It is
// nil when v is nil or does not encode to a JSON object.
func SchemaMap(v any) map[string]any {
	switch s := v.(type) {
	case nil:
		return nil
	case map[string]any:
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// InputSchema is the input schema of a tool as a server sent it, made a
// JSON object (SchemaMap) and sanitized (SanitizeSchema, so a new map):
// {"type":"object"} when the server sent none usable.
func InputSchema(v any) map[string]any {
	if m := SanitizeSchema(SchemaMap(v)); m != nil {
		return m
	}
	return map[string]any{"type": "object"}
}
