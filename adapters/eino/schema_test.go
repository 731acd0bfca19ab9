package eino_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	gheino "github.com/gatehouse-dev/gatehouse/adapters/eino"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// wireSchema returns the input schema of ToolInfo(def) as eino's models
// put it on the wire.
func wireSchema(t testing.TB, schema string) ([]byte, error) {
	t.Helper()
	ti, err := gheino.ToolInfo(loop.ToolDef{Name: "t", InputSchema: json.RawMessage(schema)})
	if err != nil {
		return nil, err
	}
	js, err := ti.ToJSONSchema()
	if err != nil {
		t.Fatalf("ToJSONSchema: %v", err)
	}
	b, err := json.Marshal(js)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return b, nil
}

// sameValue compares two JSON texts as values, numbers by their text.
func sameValue(a, b []byte) bool {
	dec := func(b []byte) (any, error) {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		err := d.Decode(&v)
		return v, err
	}
	x, err1 := dec(a)
	y, err2 := dec(b)
	return err1 == nil && err2 == nil && reflect.DeepEqual(x, y)
}

// TestToolInfoRefusesWhatIsNotASchema: each way a tool's input schema can
// be unusable as a whole is refused with ErrSchema, naming the tool.
func TestToolInfoRefusesWhatIsNotASchema(t *testing.T) {
	for _, c := range []struct{ schema, want string }{
		{`{"type":`, "not JSON"},
		{`{"type":"object"} {}`, "not JSON"},
		{`[{"type":"object"}]`, "an array"},
		{`"object"`, "a string"},
		{`42`, "a number"},
		{`null`, "null"},
		{`true`, "a boolean"},
	} {
		_, err := gheino.ToolInfo(loop.ToolDef{Name: "bad_tool", InputSchema: json.RawMessage(c.schema)})
		if !errors.Is(err, gheino.ErrSchema) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"bad_tool"`) {
			t.Errorf("%s: %v, want ErrSchema saying %q", c.schema, err, c.want)
		}
	}
}

// TestToolInfoCarriesSchemasWhole: what eino's schema struct cannot hold
// as such — keywords it has no field for, older forms, values its fields
// would change or drop, malformed members — reaches the wire as it was;
// what it can hold is in its fields (for eino components that read them).
func TestToolInfoCarriesSchemasWhole(t *testing.T) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"array","items":[{"type":"string"},{"type":"integer"}]}}}`,
		`{"type":"object","properties":{"n":{"type":"number","maximum":10,"exclusiveMaximum":true}}}`,
		`{"type":"object","properties":{"n":{"const":12345678901234567890,"default":1.0e400}}}`,
		`{"type":"object","properties":{"b":{"type":"array","uniqueItems":false,"minItems":0}}}`,
		`{"type":"object","required":[],"properties":{"e":{"enum":[]}}}`,
		`{"type":"object","properties":{"p":5,"q":"x"}}`,
		`{"type":"object","properties":{"w":{"oneOf":{"required":["a"]},"anyOf":[1,2]}}}`,
		`{"type":"object","properties":{"x":{},"y":true,"z":false}}`,
		`{"type":"object","properties":{"a":{"type":"string"}},"properties":{"b":{"type":"string"}}}`,
		`{"type":"object","dependencies":{"a":["b"]},"unevaluatedProperties":false,"nullable":true,"x-ext":{"k":[1,{"j":null}]}}`,
		`{"type":["object","null"],"$schema":"http://json-schema.org/draft-07/schema#","$id":"urn:x","title":"","description":"d"}`,
		`{"type":"object","properties":{"m":{"maxLength":-1,"minLength":1.5,"pattern":""}}}`,
		`{}`,
	} {
		got, err := wireSchema(t, s)
		if err != nil {
			t.Errorf("%s: %v", s, err)
			continue
		}
		if !sameValue(got, []byte(s)) { // a repeated key: its last value, as a decoder reads it
			t.Errorf("schema changed on the way:\n in  %s\n out %s", s, got)
		}
	}

	// The struct's fields hold what they can, properties in order (of a
	// schema without a top-level oneOf, which ToolInfo would merge).
	noOneOf := strings.Replace(richSchema, `"oneOf": [{"required": ["to"]}, {"required": ["count"]}],`, ``, 1)
	ti, err := gheino.ToolInfo(loop.ToolDef{Name: "t", InputSchema: json.RawMessage(noOneOf)})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := ti.ToJSONSchema()
	var keys []string
	for p := js.Properties.Oldest(); p != nil; p = p.Next() {
		keys = append(keys, p.Key)
	}
	if noOneOf == richSchema || js.Type != "object" || strings.Join(keys, ",") != "to,count,mode,items" || len(js.OneOf) != 0 ||
		js.Definitions["address"] == nil || js.Extras["definitions"] == nil {
		t.Fatalf("fields: type %q, properties %v, oneOf %d, $defs %v, extras %v", js.Type, keys, len(js.OneOf), js.Definitions, js.Extras)
	}
	// An absent schema is an object with no properties.
	if got, err := wireSchema(t, ""); err != nil || string(got) != `{"type":"object"}` {
		t.Fatalf("absent schema: %s, %v", got, err)
	}
}

// FuzzToolInfo: any input schema is either refused with ErrSchema (not
// JSON, or not an object) or carried whole: the schema eino's models send
// is the input, as a JSON value.
func FuzzToolInfo(f *testing.F) {
	for _, s := range []string{richSchema, `{}`, `{"type":"object","properties":{"a":{"items":[true]}}}`,
		`{"properties":{"x":{"const":1e999}}}`, `[]`, `{"a":`,
		`{"type":"object","oneOf":[{"properties":{"a":{"maximum":1e999}},"required":["a"]},{"$ref":"#/$defs/b"}],"$defs":{"b":{"properties":{"b":{}}}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(bytes.TrimSpace(data)) == 0 {
			return
		}
		got, err := wireSchema(t, string(data))
		trimmed := bytes.TrimSpace(data)
		if err != nil {
			if !errors.Is(err, gheino.ErrSchema) {
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
		want := data
		d := json.NewDecoder(bytes.NewReader(trimmed))
		d.UseNumber()
		var m map[string]any
		if d.Decode(&m) == nil {
			for _, k := range []string{"oneOf", "anyOf", "allOf", "enum", "not"} {
				if _, ok := m[k]; ok {
					merged, _ := toolset.ProviderSchema(m) // a top-level combinator: merged
					want = []byte(mustJSON(t, merged))
					break
				}
			}
		}
		if !sameValue(got, want) {
			t.Fatalf("schema changed:\n in  %s\n out %s\n want %s", data, got, want)
		}
	})
}
