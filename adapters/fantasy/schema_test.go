package fantasy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	ghfantasy "github.com/gatehouse-dev/gatehouse/adapters/fantasy"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

func info(t testing.TB, schema string) (props string, required []string, desc string) {
	t.Helper()
	ti, err := ghfantasy.ToolInfo(loop.ToolDef{Name: "t", Description: "Do it.", InputSchema: json.RawMessage(schema)})
	if err != nil {
		t.Fatalf("%s: %v", schema, err)
	}
	b, err := json.Marshal(ti.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), ti.Required, ti.Description
}

// TestToolInfoRefusesWhatIsNotASchema: each way a tool's input schema can
// be unusable as a whole is refused with ErrSchema, naming the tool, by
// ToolInfo and by FunctionTools.
func TestToolInfoRefusesWhatIsNotASchema(t *testing.T) {
	for _, c := range []struct{ schema, want string }{
		{`{"type":`, "not JSON"},
		{`{"type":"object"} {}`, "not JSON"},
		{`[{"type":"object"}]`, "an array"},
		{`"object"`, "a string"},
		{`42`, "a number"},
		{`null`, "null"},
		{`false`, "a boolean"},
	} {
		d := loop.ToolDef{Name: "bad_tool", InputSchema: json.RawMessage(c.schema)}
		_, err := ghfantasy.ToolInfo(d)
		_, err2 := ghfantasy.FunctionTools([]loop.ToolDef{d})
		for _, err := range []error{err, err2} {
			if !errors.Is(err, ghfantasy.ErrSchema) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"bad_tool"`) {
				t.Errorf("%s: %v, want ErrSchema saying %q", c.schema, err, c.want)
			}
		}
	}
}

// TestToolInfoFlattens: what fantasy's ToolInfo cannot carry (it keeps
// properties and required) is inlined or merged, and what cannot be
// expanded is said in the description.
func TestToolInfoFlattens(t *testing.T) {
	for _, c := range []struct {
		name, schema, props string
		required            []string
		note                string
	}{
		{"root ref (zod's shape)",
			`{"$ref":"#/definitions/Args","definitions":{"Args":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}}`,
			`{"a":{"type":"string"}}`, []string{"a"}, ""},
		{"recursive ref cut at its recursion",
			`{"type":"object","$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#/$defs/node","description":"the next node"}}}},"properties":{"head":{"$ref":"#/$defs/node"}}}`,
			`{"head":{"properties":{"next":{"description":"the next node"},"v":{"type":"integer"}},"type":"object"}}`, []string{},
			"Not expanded (any value accepted here, the server checks it): #/$defs/node."},
		{"oneOf merged, a property in two branches as anyOf, required what every branch requires",
			`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"oneOf":[{"properties":{"x":{"type":"string"}},"required":["x"]},{"properties":{"x":{"type":"integer"},"y":{"type":"boolean"}},"required":["y"]}]}`,
			`{"id":{"type":"string"},"x":{"anyOf":[{"type":"string"},{"type":"integer"}]},"y":{"type":"boolean"}}`, []string{"id"},
			"Accepts exactly one of these argument sets: {x} | {y}."},
		{"oneOf: a name every branch requires is required",
			`{"type":"object","oneOf":[{"properties":{"kind":{"const":"a"},"a":{}},"required":["kind","a"]},{"properties":{"kind":{"const":"b"}},"required":["kind"]}]}`,
			`{"a":{},"kind":{"anyOf":[{"const":"a"},{"const":"b"}]}}`, []string{"kind"},
			"Accepts exactly one of these argument sets: {kind, a} | {kind}."},
		{"anyOf branches without required name their properties",
			`{"type":"object","anyOf":[{"properties":{"a":{}}},{"properties":{"b":{},"c":{}}},{"type":"string"}]}`,
			`{"a":{},"b":{},"c":{}}`, []string{}, "Accepts at least one of these argument sets: {a} | {b, c}."},
		{"allOf merged with required",
			`{"allOf":[{"$ref":"#/$defs/base"},{"properties":{"b":{"type":"integer"}},"required":["b"]}],"$defs":{"base":{"properties":{"a":{"type":"string"}},"required":["a"]}}}`,
			`{"a":{"type":"string"},"b":{"type":"integer"}}`, []string{"a", "b"}, ""},
		{"unresolvable and external refs",
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"},"b":{"$ref":"https://example.com/s.json"},"c":{"$ref":"#/properties/d"},"d":{"type":"number"}}}`,
			`{"a":{},"b":{},"c":{"type":"number"},"d":{"type":"number"}}`, []string{},
			"Not expanded (any value accepted here, the server checks it): #/$defs/missing, https://example.com/s.json."},
		{"a ref's siblings: annotations merged, constraints as allOf",
			`{"type":"object","$defs":{"n":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/n","description":"A."},"b":{"$ref":"#/$defs/n","minimum":3}}}`,
			`{"a":{"description":"A.","type":"integer"},"b":{"allOf":[{"type":"integer"},{"minimum":3}]}}`, []string{}, ""},
		{"data is not a reference; pointers unescape",
			`{"type":"object","$defs":{"a/b":{"type":"string"}},"properties":{"k":{"const":{"$ref":"#/$defs/x"}},"e":{"$ref":"#/$defs/a~1b"}}}`,
			`{"e":{"type":"string"},"k":{"const":{"$ref":"#/$defs/x"}}}`, []string{}, ""},
		{"numbers as numbers",
			`{"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":9007199254740993,"multipleOf":0.5,"default":123456789012345678901234567890,"exclusiveMaximum":1e999}}}`,
			`{"n":{"default":123456789012345678901234567890,"exclusiveMaximum":1e999,"maximum":9007199254740993,"minimum":0,"multipleOf":0.5,"type":"integer"}}`, []string{}, ""},
		{"absent", ``, `{}`, []string{}, ""},
	} {
		schema := c.schema
		props, req, desc := info(t, schema)
		if props != c.props || !reflect.DeepEqual(req, c.required) {
			t.Errorf("%s:\n props %s\n want  %s\n required %v, want %v", c.name, props, c.props, req, c.required)
		}
		wantDesc := "Do it."
		if c.note != "" {
			wantDesc += "\n\n" + c.note
		}
		if desc != wantDesc {
			t.Errorf("%s: description %q, want %q", c.name, desc, wantDesc)
		}
	}
}

// TestToolInfoBoundsExpansion: definitions that use each other twice per
// level would inline to 2^40 nodes; the expansion stops at its bound and
// says so.
func TestToolInfoBoundsExpansion(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"root":{"$ref":"#/$defs/d0"}},"$defs":{`)
	for i := range 40 {
		if i > 0 {
			b.WriteString(",")
		}
		next := `{"type":"string"}`
		if i < 39 {
			next = `{"$ref":"#/$defs/d` + strconv.Itoa(i+1) + `"}`
		}
		b.WriteString(`"d` + strconv.Itoa(i) + `":{"type":"object","properties":{"l":` + next + `,"r":` + next + `}}`)
	}
	b.WriteString(`}}`)
	props, _, desc := info(t, b.String())
	if len(props) > 4<<20 || !strings.Contains(desc, "Not expanded") {
		t.Fatalf("%d bytes of properties, description %q", len(props), desc)
	}
}

// FuzzToolInfo: any input schema is either refused with ErrSchema (not
// JSON, or not an object) or flattened: the properties encode as JSON,
// hold no local $ref outside data keywords, and keep every property the
// input names at its top level.
func FuzzToolInfo(f *testing.F) {
	for _, s := range []string{`{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"type":"string"}}}`,
		`{"$ref":"#"}`, `{"oneOf":[{"properties":{"x":{}}},{"required":["y"]}]}`, `{"properties":{"a":{"$ref":"#/properties/a"}}}`,
		`[]`, `{"a":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(bytes.TrimSpace(data)) == 0 {
			return
		}
		ti, err := ghfantasy.ToolInfo(loop.ToolDef{Name: "t", InputSchema: json.RawMessage(data)})
		trimmed := bytes.TrimSpace(data)
		if err != nil {
			if !errors.Is(err, ghfantasy.ErrSchema) {
				t.Fatalf("%q: %v is not ErrSchema", data, err)
			}
			if json.Valid(data) && trimmed[0] == '{' {
				t.Fatalf("%q: a JSON object refused: %v", data, err)
			}
			return
		}
		if !json.Valid(data) || trimmed[0] != '{' {
			t.Fatalf("%q: accepted", data)
		}
		if _, err := json.Marshal(ti.Parameters); err != nil {
			t.Fatalf("%q: properties do not encode: %v", data, err)
		}
		if ref, ok := findRef(ti.Parameters); ok {
			t.Fatalf("%q: a local $ref %q is left", data, ref)
		}
		var in struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if json.Unmarshal(data, &in) == nil {
			for k := range in.Properties {
				if _, ok := ti.Parameters[k]; !ok {
					t.Fatalf("%q: property %q lost", data, k)
				}
			}
		}
	})
}

// findRef returns a local $ref left in v, outside data keywords.
func findRef(v any) (string, bool) {
	switch v := v.(type) {
	case map[string]any:
		if r, ok := v["$ref"].(string); ok && strings.HasPrefix(r, "#") {
			return r, true
		}
		for k, e := range v {
			if k == "const" || k == "enum" || k == "default" || k == "examples" {
				continue
			}
			if r, ok := findRef(e); ok {
				return r, true
			}
		}
	case []any:
		for _, e := range v {
			if r, ok := findRef(e); ok {
				return r, true
			}
		}
	}
	return "", false
}
