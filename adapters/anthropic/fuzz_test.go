package anthropic_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	anthropic "github.com/gatehouse-dev/gatehouse/adapters/anthropic"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// FuzzToolParams: a schema ToolParams takes reaches the wire whole — the
// input_schema the SDK sends is the schema given, with "type":"object",
// its top-level combinators merged by toolset.ProviderSchema (never one
// at the top level, which the API refuses) — and one it refuses is
// refused with ErrInvalidTool.
func FuzzToolParams(f *testing.F) {
	f.Add([]byte(richSchema))
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`))
	f.Add([]byte(`{"oneOf":[{"required":["a"]},{"required":["b"]}]}`))
	f.Add([]byte(`{"type":"object","required":[]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, schema []byte) {
		p, err := anthropic.ToolParams([]loop.ToolDef{{Name: "t", InputSchema: schema}})
		if err != nil {
			if !errors.Is(err, anthropic.ErrInvalidTool) {
				t.Fatalf("error not ErrInvalidTool: %v", err)
			}
			return
		}
		b, err := json.Marshal(p[0])
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		var sent struct {
			InputSchema map[string]any `json:"input_schema"`
		}
		if err := json.Unmarshal(b, &sent); err != nil {
			t.Fatal(err)
		}
		given := map[string]any{}
		if len(schema) == 0 {
			// no schema: {"type":"object"}
		} else if err := json.Unmarshal(schema, &given); err != nil {
			t.Fatalf("accepted a schema that does not decode: %v", err)
		}
		given, _ = toolset.ProviderSchema(given)
		given["type"] = "object"
		if len(given) == 1 {
			given["properties"] = map[string]any{}
		}
		for _, k := range []string{"oneOf", "anyOf", "allOf"} {
			if _, ok := sent.InputSchema[k]; ok {
				t.Fatalf("sent a top-level %s: %v", k, sent.InputSchema)
			}
		}
		if !reflect.DeepEqual(sent.InputSchema, given) {
			t.Fatalf("sent %v, given %v", sent.InputSchema, given)
		}
	})
}
