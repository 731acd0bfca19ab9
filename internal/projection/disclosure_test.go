package projection

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/diag"
)

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fromJSON(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

const richSchema = `{
  "type": "object",
  "title": "Transfer",
  "description": "Moves money.",
  "properties": {
    "amount": {"type": "number", "description": "How much.", "minimum": 0, "examples": [10]},
    "currency": {"type": "string", "enum": ["EUR", "USD"], "default": "EUR", "format": "iso-4217"},
    "count": {"type": "integer"},
    "dry": {"type": "boolean", "title": "Dry run"},
    "memo": {"type": ["string", "null"], "maxLength": 140},
    "to": {"type": "object", "properties": {"iban": {"type": "string", "description": "nested prose"}}, "required": ["iban"]},
    "tags": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
    "either": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "string"}]},
    "ref": {"$ref": "#/$defs/x"},
    "boolschema": true,
    "weird": {"type": "uuid"}
  },
  "required": ["amount", "to", "ghost", "amount", 7],
  "$defs": {"x": {"type": "string"}},
  "additionalProperties": false
}`

func TestReduceSchemaNames(t *testing.T) {
	in := fromJSON(t, richSchema)
	before := mustJSON(t, in)
	snapshot := fromJSON(t, before)

	got := ReduceSchema(in, Names)
	want := `{"properties":{"amount":{"type":"number"},"boolschema":{},"count":{"type":"integer"},` +
		`"currency":{"type":"string"},"dry":{"type":"boolean"},"either":{"type":["string","integer"]},` +
		`"memo":{"type":["string","null"]},"ref":{},"tags":{"type":"array"},"to":{"type":"object"},"weird":{}},` +
		`"required":["amount","to"],"type":"object"}`
	if s := mustJSON(t, got); s != want {
		t.Errorf("Names:\n got %s\nwant %s", s, want)
	}
	if !reflect.DeepEqual(in, snapshot) {
		t.Errorf("ReduceSchema mutated its input:\n%s", mustJSON(t, in))
	}
}

func TestReduceSchemaTiers(t *testing.T) {
	tests := []struct {
		name   string
		schema string // "" = nil
		tier   Tier
		want   string
	}{
		{"bare", richSchema, Bare, `{"type":"object"}`},
		{"unknown tier is bare", richSchema, Tier("everything"), `{"type":"object"}`},
		{"empty tier is bare", richSchema, "", `{"type":"object"}`},
		{"nil inline", "", Inline, `null`},
		{"nil names", "", Names, `{"properties":{},"type":"object"}`},
		{"nil bare", "", Bare, `{"type":"object"}`},
		{"no properties", `{"type":"object","description":"x"}`, Names, `{"properties":{},"type":"object"}`},
		{"properties not an object", `{"type":"object","properties":[1,2],"required":["a"]}`, Names, `{"properties":{},"type":"object"}`},
		{"required not a list", `{"properties":{"a":{"type":"string"}},"required":"a"}`, Names, `{"properties":{"a":{"type":"string"}},"type":"object"}`},
		{"only unknown types", `{"properties":{"a":{"type":["date",5]}}}`, Names, `{"properties":{"a":{}},"type":"object"}`},
		{"oneOf", `{"properties":{"a":{"oneOf":[{"type":"null"},{"enum":[1]},{"type":"boolean"}]}}}`, Names, `{"properties":{"a":{"type":["null","boolean"]}},"type":"object"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var in map[string]any
			if tc.schema != "" {
				in = fromJSON(t, tc.schema)
			}
			if got := mustJSON(t, ReduceSchema(in, tc.tier)); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestReduceSchemaInlineIsDeepCopy(t *testing.T) {
	in := fromJSON(t, richSchema)
	in["typed"] = []string{"a"}
	in["maps"] = []map[string]any{{"k": "v"}}
	snapshot := ReduceSchema(in, Inline)
	if !reflect.DeepEqual(in, snapshot) {
		t.Fatalf("Inline is not equal to its input")
	}
	out := ReduceSchema(in, Inline)
	// Mutate every level of the copy; the input must not change.
	out["type"] = "changed"
	props := out["properties"].(map[string]any)
	props["amount"].(map[string]any)["description"] = "changed"
	props["to"].(map[string]any)["properties"].(map[string]any)["iban"] = "changed"
	out["required"].([]any)[0] = "changed"
	props["tags"].(map[string]any)["items"].(map[string]any)["type"] = "changed"
	out["typed"].([]string)[0] = "changed"
	out["maps"].([]map[string]any)[0]["k"] = "changed"
	if !reflect.DeepEqual(in, snapshot) {
		t.Fatalf("mutating the Inline copy changed the input: %s", mustJSON(t, in))
	}
	// And the Names result shares nothing either.
	n := ReduceSchema(in, Names)
	n["properties"].(map[string]any)["amount"].(map[string]any)["type"] = "changed"
	n["required"].([]any)[0] = "changed"
	if !reflect.DeepEqual(in, snapshot) {
		t.Fatalf("mutating the Names result changed the input")
	}
}

func TestReduceSchemaRequiredStrings(t *testing.T) {
	in := map[string]any{
		"properties": map[string]any{"a": map[string]any{"type": []string{"string"}}, "b": map[string]any{}},
		"required":   []string{"b", "zz", "a", "b"},
	}
	if got, want := mustJSON(t, ReduceSchema(in, Names)), `{"properties":{"a":{"type":"string"},"b":{}},"required":["b","a"],"type":"object"}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestEstimate(t *testing.T) {
	// By hand: floor "s__t"+"abcd" = 8 bytes = 2 tokens; inline adds
	// {"type":"object"} (17) = 25 bytes = 7 tokens; names adds
	// {"properties":{},"type":"object"} (33) = 41 bytes = 11 tokens.
	got := Estimate([]Tool{{Name: "s__t", Description: "abcd", InputSchema: map[string]any{"type": "object"}}})
	if want := (Cost{Floor: 2, Inline: 7, Names: 11, Bare: 7}); got != want {
		t.Fatalf("Estimate = %+v, want %+v", got, want)
	}
}

// bigServer builds n tools, each with a 200-byte description and a schema
// of 12 documented parameters with enums and nested bodies.
func bigServer(n int) []Tool {
	desc := strings.Repeat("Returns the ledger entries of an account. ", 5)[:200]
	tools := make([]Tool, n)
	for i := range tools {
		props := map[string]any{}
		var req []any
		for p := 0; p < 12; p++ {
			name := fmt.Sprintf("param_%02d", p)
			props[name] = map[string]any{
				"type":        "string",
				"description": strings.Repeat("A long explanation of this parameter. ", 4),
				"enum":        []any{"alpha", "beta", "gamma", "delta"},
				"examples":    []any{"alpha"},
			}
			if p%3 == 0 {
				req = append(req, name)
			}
		}
		props["filter"] = map[string]any{"type": "object", "properties": map[string]any{
			"since": map[string]any{"type": "string", "format": "date-time", "description": "Lower bound."},
			"until": map[string]any{"type": "string", "format": "date-time", "description": "Upper bound."},
		}}
		tools[i] = Tool{
			Name:        fmt.Sprintf("big__tool_%03d", i), // 13 bytes
			Server:      "big",
			RemoteName:  fmt.Sprintf("tool_%03d", i),
			Description: desc,
			InputSchema: map[string]any{"type": "object", "description": desc, "properties": props, "required": req},
		}
	}
	return tools
}

func TestPlan300Tools(t *testing.T) {
	tools := bigServer(300)
	// Floor by hand: 300 * (13 + 200) = 63900 bytes = 15975 tokens.
	c := Estimate(tools)
	if c.Floor != 15975 {
		t.Fatalf("floor = %d tokens, want 15975", c.Floor)
	}
	if !(c.Floor < c.Bare && c.Bare < c.Names && c.Names < c.Inline) {
		t.Fatalf("costs not ordered: %+v", c)
	}
	t.Logf("costs of 300 tools: %+v", c)
	tests := []struct {
		name     string
		budget   int
		want     Tier
		wantDiag bool
	}{
		{"300k: inline", 300000, Inline, false},
		{"60k: names", 60000, Names, false},
		{"20k: bare", 20000, Bare, false},
		{"10k: bare and floor diagnostic", 10000, Bare, true},
		{"inline fits", c.Inline, Inline, false},
		{"inline one token over", c.Inline - 1, Names, false},
		{"names fits exactly", c.Names, Names, false},
		{"names one token over", c.Names - 1, Bare, false},
		{"default budget 20000", 0, Bare, false},
		{"negative is default", -5, Bare, false},
		{"floor fits exactly", c.Floor, Bare, false},
		{"floor over budget", c.Floor - 1, Bare, true},
		{"floor far over budget", 1000, Bare, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := mustJSON(t, tools[0].InputSchema)
			tier, ds := Plan("big", tools, tc.budget)
			if tier != tc.want {
				t.Errorf("Plan(budget %d) = %s, want %s", tc.budget, tier, tc.want)
			}
			if mustJSON(t, tools[0].InputSchema) != before {
				t.Errorf("Plan changed a schema")
			}
			if !tc.wantDiag {
				if len(ds) != 0 {
					t.Errorf("unexpected diagnostics %v", ds)
				}
				return
			}
			if len(ds) != 1 {
				t.Fatalf("want one diagnostic, got %v", ds)
			}
			d := ds[0]
			if d.Rule != diag.DisclosureBudgetExceeded || d.Origin != "big" || d.Section != "" {
				t.Errorf("diagnostic %+v", d)
			}
			for _, s := range []string{"300 tools", "15975 tokens", fmt.Sprintf("budget of %d tokens", tc.budget),
				"narrow it with the server's allow/block filter"} {
				if !strings.Contains(d.Message, s) {
					t.Errorf("message %q lacks %q", d.Message, s)
				}
			}
		})
	}
	// The filter is the way down: allowing fewer tools brings back inline.
	var kept []Tool
	f := Filter{Allow: []string{"tool_000", "big__tool_001"}}
	for _, tl := range tools {
		if f.Keep(tl.RemoteName, tl.Name) {
			kept = append(kept, tl)
		}
	}
	if tier, ds := Plan("big", kept, 2000); len(kept) != 2 || tier != Inline || len(ds) != 0 {
		t.Fatalf("filtered: %d tools, tier %s, %v", len(kept), tier, ds)
	}
}

func TestPlanEmptyServer(t *testing.T) {
	if tier, ds := Plan("none", nil, 0); tier != Inline || ds != nil {
		t.Fatalf("got %s %v", tier, ds)
	}
}

func TestDescribeTool(t *testing.T) {
	d := DescribeTool()
	if DescribeToolName != "mcp__describe_tool" || d.Name != DescribeToolName || !IsLegalName(d.Name) || d.Description == "" {
		t.Fatalf("%+v", d)
	}
	want := `{"additionalProperties":false,"properties":{"name":{"description":"The tool's name exactly as listed.","type":"string"}},"required":["name"],"type":"object"}`
	if got := mustJSON(t, d.InputSchema); got != want {
		t.Fatalf("schema %s", got)
	}
	// Each call returns a fresh value.
	d.InputSchema["type"] = "changed"
	if DescribeTool().InputSchema["type"] != "object" {
		t.Fatal("DescribeTool shares its schema between calls")
	}
}
