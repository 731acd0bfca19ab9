package openai_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/adapters/internal/agentcrash"
	"github.com/gatehouse-dev/gatehouse/adapters/openai/openaitest"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// unionArgs are the model's arguments to the union server's tool: the count branch
// of its oneOf, with a number float64 cannot hold.
const unionArgs = `{"count":9007199254740993,"note":"twice"}`

// TestTopLevelOneOf runs loop.Run over each API with a real MCP server's
// tool whose input schema has a top-level oneOf, which the API refuses
// (openaitest refuses it as the API does): the request is taken, the
// schema sent is one object schema with the branches' properties and the
// description says the alternatives, and the model's call reaches the
// server with the model's arguments, byte for byte.
func TestTopLevelOneOf(t *testing.T) {
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			mcpSrv := agentcrash.StartUnion(t)
			tools := toolsetTools(t, mcpSrv.Toolset(t))
			srv := openaitest.NewServer(
				openaitest.Reply{Calls: []openaitest.Call{{ID: "call_u", Name: agentcrash.UnionTool, Args: unionArgs}}},
				openaitest.Reply{Text: "done"},
			)
			defer srv.Close()
			res, err := loop.Run(ctxT(t), loop.Options{RunID: "union-" + api, Journal: newJournal(t, sqliteStore(t, "")),
				Model: newModel(api, srv), Tools: tools, Prompt: "Count twice."})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if res.Text != "done" {
				t.Fatalf("text %q", res.Text)
			}
			if got := mcpSrv.Args(); len(got) != 1 || string(got[0]) != unionArgs {
				t.Fatalf("the server received %q, want %s", got, unionArgs)
			}
			var params map[string]any
			var desc string
			for _, x := range body(t, srv.Bodies()[0])["tools"].([]any) {
				tool := x.(map[string]any)
				if f, ok := tool["function"].(map[string]any); ok {
					tool = f
				}
				if tool["name"] == agentcrash.UnionTool {
					params, _ = tool["parameters"].(map[string]any)
					desc, _ = tool["description"].(string)
				}
			}
			if params == nil {
				t.Fatalf("tool %s not sent", agentcrash.UnionTool)
			}
			props, _ := params["properties"].(map[string]any)
			for _, k := range []string{"to", "cc", "count", "note"} {
				if _, ok := props[k]; !ok {
					t.Errorf("property %q not sent: %v", k, params)
				}
			}
			if _, ok := params["oneOf"]; ok || params["type"] != "object" || params["required"] != nil {
				t.Errorf("parameters sent %v", params)
			}
			if !strings.HasSuffix(desc, "\n\n"+agentcrash.UnionNote) {
				t.Errorf("description %q does not end with the note", desc)
			}
		})
	}
}
