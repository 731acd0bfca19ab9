package toolset_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// decodeSchema decodes a schema as the adapters do (numbers exact).
func decodeSchema(t testing.TB, s string) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return m
}

func encode(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// openAIRefuses is OpenAI's documented rule for function parameters (non
// strict): a JSON Schema object of type "object" without "oneOf",
// "anyOf", "allOf", "enum" or "not" at the top level. The message is the
// API's.
func openAIRefuses(s map[string]any) string {
	if s["type"] != "object" {
		return fmt.Sprintf("schema must be a JSON Schema of 'type: \"object\"', got 'type: \"%v\"'.", s["type"])
	}
	for _, k := range []string{"oneOf", "anyOf", "allOf", "enum", "not"} {
		if _, ok := s[k]; ok {
			return "schema must have type 'object' and not have 'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the top level."
		}
	}
	return ""
}

// anthropicRefuses is Anthropic's rule for a tool's input_schema: type
// "object", no "oneOf", "allOf" or "anyOf" at the top level, properties an
// object.
func anthropicRefuses(s map[string]any) string {
	if s["type"] != "object" {
		return "input_schema.type: Input should be 'object'"
	}
	for _, k := range []string{"oneOf", "allOf", "anyOf"} {
		if _, ok := s[k]; ok {
			return "input_schema does not support oneOf, allOf, or anyOf at the top level"
		}
	}
	if p, ok := s["properties"]; ok {
		if _, isMap := p.(map[string]any); !isMap {
			return "input_schema.properties: Input should be an object"
		}
	}
	return ""
}

func TestProviderSchema(t *testing.T) {
	cases := []struct {
		name, in, want, note string
	}{
		{"oneOf of objects",
			`{"type":"object","oneOf":[{"type":"object","properties":{"to":{"type":"string"}},"required":["to"],"additionalProperties":false},{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}]}`,
			`{"type":"object","properties":{"count":{"type":"integer"},"to":{"type":"string"}}}`,
			"Accepts exactly one of these argument sets: {to} | {count}."},
		{"anyOf with overlapping properties of different types, required in common",
			`{"anyOf":[{"properties":{"id":{"type":"string"},"x":{"type":"string"}},"required":["id","x"]},{"properties":{"id":{"type":"string"},"x":{"type":"integer"}},"required":["x","id"]},{"properties":{"x":{"type":"boolean"},"id":{"type":"string"}},"required":["id"]}]}`,
			`{"type":"object","properties":{"id":{"type":"string"},"x":{"anyOf":[{"type":"string"},{"type":"integer"},{"type":"boolean"}]}},"required":["id"]}`,
			"Accepts at least one of these argument sets: {id, x} | {x, id} | {id}."},
		{"the top level's own properties and required kept, a branch's redeclaration as allOf",
			`{"type":"object","description":"D.","properties":{"kind":{"type":"string"},"n":{"type":"integer"}},"required":["kind"],"oneOf":[{"properties":{"kind":{"const":"a"},"a":{}},"required":["kind","a"]},{"properties":{"kind":{"const":"b"}},"required":["kind"]}]}`,
			`{"type":"object","description":"D.","properties":{"a":{},"kind":{"allOf":[{"type":"string"},{"anyOf":[{"const":"a"},{"const":"b"}]}]},"n":{"type":"integer"}},"required":["kind"]}`,
			"Accepts exactly one of these argument sets: {kind, a} | {kind}."},
		{"branches that only require (at least one of some properties)",
			`{"type":"object","properties":{"title":{"type":"string"},"body":{"type":"string"},"project":{"type":"string"}},"required":["project"],"anyOf":[{"required":["title"]},{"required":["body"]}]}`,
			`{"type":"object","properties":{"body":{"type":"string"},"project":{"type":"string"},"title":{"type":"string"}},"required":["project"]}`,
			"Accepts at least one of these argument sets: {title} | {body}."},
		{"branches without required name what they declare",
			`{"oneOf":[{"properties":{"b":{},"a":{}}},{}]}`,
			`{"type":"object","properties":{"a":{},"b":{}}}`,
			"Accepts exactly one of these argument sets: {a, b} | {}."},
		{"allOf: properties merged, required united",
			`{"allOf":[{"properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"a":{"maxLength":3},"b":{"type":"integer"}},"required":["b"]}]}`,
			`{"type":"object","properties":{"a":{"allOf":[{"type":"string"},{"maxLength":3}]},"b":{"type":"integer"}},"required":["a","b"]}`,
			""},
		{"$ref branches resolved one level, $defs kept",
			`{"$defs":{"byName":{"type":"object","properties":{"name":{"type":"string"},"where":{"$ref":"#/$defs/place"}},"required":["name"]},"place":{"type":"string"}},"definitions":{"by~1id":{"properties":{"id":{"type":"integer"}},"required":["id"]}},"oneOf":[{"$ref":"#/$defs/byName"},{"$ref":"#/definitions/by~01id"},{"$ref":"#/definitions/by~01id","description":"By ID."},{"$ref":"#/$defs/missing"}]}`,
			`{"type":"object","$defs":{"byName":{"type":"object","properties":{"name":{"type":"string"},"where":{"$ref":"#/$defs/place"}},"required":["name"]},"place":{"type":"string"}},"definitions":{"by~1id":{"properties":{"id":{"type":"integer"}},"required":["id"]}},"properties":{"id":{"type":"integer"},"name":{"type":"string"},"where":{"$ref":"#/$defs/place"}}}`,
			"Accepts exactly one of these argument sets: {name} | {id} | {id} | #/$defs/missing."},
		{"nested combinators below the top level left alone",
			`{"type":"object","properties":{"shape":{"oneOf":[{"type":"string"},{"type":"object","anyOf":[{"required":["r"]}]}]}},"allOf":[{"properties":{"n":{"not":{"type":"null"},"enum":[1,2]}}}]}`,
			`{"type":"object","properties":{"n":{"not":{"type":"null"},"enum":[1,2]},"shape":{"oneOf":[{"type":"string"},{"type":"object","anyOf":[{"required":["r"]}]}]}}}`,
			""},
		{"a combinator inside a branch merged too",
			`{"allOf":[{"properties":{"a":{}},"required":["a"]},{"oneOf":[{"properties":{"b":{}},"required":["b"]},{"properties":{"c":{}},"required":["c"]}]}]}`,
			`{"type":"object","properties":{"a":{},"b":{},"c":{}},"required":["a"]}`,
			"Accepts exactly one of these argument sets: {b} | {c}."},
		{"branches that cannot be objects dropped",
			`{"oneOf":[{"type":"string"},{"type":["null","integer"]},true,{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]},{"type":["object","null"],"properties":{"r":{}}}]}`,
			`{"type":"object","properties":{"q":{"type":"string"},"r":{}}}`,
			"Accepts exactly one of these argument sets: {q} | {r}."},
		{"only non-object branches: an object with what the top level declares",
			`{"type":"object","properties":{"x":{}},"oneOf":[{"type":"string"},{"type":"number"}]}`,
			`{"type":"object","properties":{"x":{}}}`,
			""},
		{"top-level enum and not dropped, enum's values in the note",
			`{"type":"object","properties":{"a":{"type":"integer"}},"enum":[{"a":1},{"a":2}],"not":{"required":["b"]}}`,
			`{"type":"object","properties":{"a":{"type":"integer"}}}`,
			`Accepts only these arguments: {"a":1} | {"a":2}.`},
		{"numbers kept exact, other keywords kept",
			`{"type":"object","additionalProperties":false,"title":"T","oneOf":[{"properties":{"n":{"maximum":9007199254740993}}}]}`,
			`{"type":"object","additionalProperties":false,"title":"T","properties":{"n":{"maximum":9007199254740993}}}`,
			"Accepts exactly one of these argument sets: {n}."},
		{"oneOf and anyOf together: both notes, required from both",
			`{"oneOf":[{"required":["a","x"]},{"required":["a","y"]}],"anyOf":[{"required":["b"]},{"required":["b","c"]}]}`,
			`{"type":"object","properties":{},"required":["a","b"]}`,
			"Accepts exactly one of these argument sets: {a, x} | {a, y}. Accepts at least one of these argument sets: {b} | {b, c}."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := decodeSchema(t, c.in)
			before := encode(t, in)
			out, note := toolset.ProviderSchema(in)
			if got := encode(t, out); !reflect.DeepEqual(decodeSchema(t, got), decodeSchema(t, c.want)) {
				t.Errorf("schema\n got %s\nwant %s", got, c.want)
			}
			if note != c.note {
				t.Errorf("note\n got %q\nwant %q", note, c.note)
			}
			if encode(t, in) != before {
				t.Errorf("input modified:\n%s\nwas\n%s", encode(t, in), before)
			}
			if msg := openAIRefuses(out); msg != "" {
				t.Errorf("OpenAI would refuse: %s", msg)
			}
			if msg := anthropicRefuses(out); msg != "" {
				t.Errorf("Anthropic would refuse: %s", msg)
			}
			if msg := openAIRefuses(in); msg == "" {
				t.Errorf("the input already passes OpenAI's rule: not a case")
			}
		})
	}
}

// TestProviderSchemaUnchanged: a schema without a top-level combinator is
// returned itself, whatever else it holds.
func TestProviderSchemaUnchanged(t *testing.T) {
	for _, s := range []string{
		`{}`,
		`{"type":"object","properties":{"a":{"oneOf":[{"type":"string"},{"type":"null"}]}},"$defs":{"x":{"anyOf":[]}}}`,
		`{"type":"string"}`,
	} {
		in := decodeSchema(t, s)
		out, note := toolset.ProviderSchema(in)
		if reflect.ValueOf(out).Pointer() != reflect.ValueOf(in).Pointer() || note != "" {
			t.Errorf("%s: got a new map (%s) or a note %q", s, encode(t, out), note)
		}
	}
	if out, note := toolset.ProviderSchema(nil); out != nil || note != "" {
		t.Errorf("nil: %v %q", out, note)
	}
}

// TestProviderSchemaDoesNotShareMadeLists: merging a third branch into a
// property's anyOf does not write into the input's lists.
func TestProviderSchemaDoesNotShareMadeLists(t *testing.T) {
	s := `{"oneOf":[{"properties":{"x":{"anyOf":[{"type":"string"}]}}},{"properties":{"x":{"type":"integer"}}},{"properties":{"x":{"type":"boolean"}}}]}`
	in := decodeSchema(t, s)
	out, _ := toolset.ProviderSchema(in)
	if encode(t, in) != encode(t, decodeSchema(t, s)) {
		t.Fatalf("input modified: %s", encode(t, in))
	}
	want := `{"properties":{"x":{"anyOf":[{"anyOf":[{"type":"string"}]},{"type":"integer"},{"type":"boolean"}]}},"type":"object"}`
	if got := encode(t, out); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// TestProviderSchemaBounded: branches that refer to a definition with a
// thousand branches of its own, which refer to it again, would be 10^12
// merges; the merge stops at its bound.
func TestProviderSchemaBounded(t *testing.T) {
	var refs []string
	for range 1000 {
		refs = append(refs, `{"$ref":"#/$defs/a"}`)
	}
	list := "[" + strings.Join(refs, ",") + "]"
	in := decodeSchema(t, `{"oneOf":`+list+`,"$defs":{"a":{"properties":{"x":{}},"oneOf":`+list+`}}}`)
	done := make(chan map[string]any, 1)
	go func() { out, _ := toolset.ProviderSchema(in); done <- out }()
	select {
	case out := <-done:
		if msg := openAIRefuses(out); msg != "" {
			t.Fatal(msg)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no result in 30s")
	}
}

func BenchmarkProviderSchemaUnchanged(b *testing.B) {
	in := decodeSchema(b, `{"type":"object","properties":{"a":{"type":"string"},"b":{"oneOf":[{"type":"integer"},{"type":"null"}]}},"required":["a"]}`)
	b.ReportAllocs()
	for b.Loop() {
		if out, _ := toolset.ProviderSchema(in); len(out) != len(in) {
			b.Fatal("changed")
		}
	}
}

// TestProviderSchemaUnchangedAllocatesNothing is the benchmark's claim as
// a test: the per-request path pays nothing for schemas without a
// top-level combinator.
func TestProviderSchemaUnchangedAllocatesNothing(t *testing.T) {
	in := decodeSchema(t, `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`)
	if n := testing.AllocsPerRun(100, func() { toolset.ProviderSchema(in) }); n != 0 {
		t.Errorf("%v allocations per call, want 0", n)
	}
}

func BenchmarkProviderSchemaOneOf(b *testing.B) {
	in := decodeSchema(b, `{"type":"object","oneOf":[{"properties":{"to":{"type":"string"}},"required":["to"]},{"properties":{"count":{"type":"integer"}},"required":["count"]}]}`)
	b.ReportAllocs()
	for b.Loop() {
		toolset.ProviderSchema(in)
	}
}

// FuzzProviderSchema checks ProviderSchema's invariants on any JSON
// object: the result has type "object", properties, and none of the
// keywords the providers refuse at the top level; the input is not
// modified; the result is deterministic; a schema without those keywords
// comes back as the same map.
func FuzzProviderSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","oneOf":[{"properties":{"a":{}},"required":["a"]},{"properties":{"a":{"type":"string"}}}]}`,
		`{"allOf":[{"$ref":"#/$defs/x"},{"anyOf":[{"required":["q"]}]}],"$defs":{"x":{"properties":{"q":{}}}}}`,
		`{"enum":[{"a":1}],"not":{},"properties":3}`,
		`{"type":"object","properties":{"x":{"oneOf":[]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		var in map[string]any
		if d.Decode(&in) != nil || in == nil {
			return
		}
		before, err := json.Marshal(in)
		if err != nil {
			return
		}
		out, note := toolset.ProviderSchema(in)
		after, _ := json.Marshal(in)
		if !bytes.Equal(before, after) {
			t.Fatalf("input modified:\n%s\nwas\n%s", after, before)
		}
		changed := false
		for _, k := range []string{"oneOf", "anyOf", "allOf", "enum", "not"} {
			if _, ok := in[k]; ok {
				changed = true
			}
		}
		if !changed {
			if reflect.ValueOf(out).Pointer() != reflect.ValueOf(in).Pointer() || note != "" {
				t.Fatalf("unchanged schema copied or noted: %q", note)
			}
			return
		}
		if msg := openAIRefuses(out); msg != "" {
			t.Fatalf("OpenAI would refuse %s: %s", encode(t, out), msg)
		}
		if msg := anthropicRefuses(out); msg != "" {
			t.Fatalf("Anthropic would refuse %s: %s", encode(t, out), msg)
		}
		if _, ok := out["properties"].(map[string]any); !ok {
			t.Fatalf("no properties object: %s", encode(t, out))
		}
		first, err := json.Marshal(out)
		if err != nil {
			t.Fatalf("result does not encode: %v", err)
		}
		again, note2 := toolset.ProviderSchema(in)
		if second, _ := json.Marshal(again); !bytes.Equal(first, second) || note != note2 {
			t.Fatalf("not deterministic:\n%s %q\n%s %q", first, note, second, note2)
		}
	})
}
