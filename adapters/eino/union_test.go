package eino_test

import (
	"encoding/json"
	"strings"
	"testing"

	gheino "github.com/gatehouse-dev/gatehouse/adapters/eino"
	"github.com/gatehouse-dev/gatehouse/adapters/eino/einotest"
	"github.com/gatehouse-dev/gatehouse/adapters/internal/agentcrash"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// unionArgs are the model's arguments to the union server's tool: the count branch
// of its oneOf, with a number float64 cannot hold.
const unionArgs = `{"count":9007199254740993,"note":"twice"}`

// TestTopLevelOneOf runs loop.Run over NewModel (eino-ext's OpenAI chat
// provider) with a real MCP server's tool whose input schema has a
// top-level oneOf, which OpenAI refuses (einotest refuses it as the API
// does): the request is taken, the schema sent is one object schema with
// the branches' properties and the description says the alternatives, and
// the model's call reaches the server with the model's arguments, byte for
// byte.
func TestTopLevelOneOf(t *testing.T) {
	mcpSrv := agentcrash.StartUnion(t)
	tools, err := loop.ToolsetTools(agentcrash.Ctx(t), mcpSrv.Toolset(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := wireServer(t,
		einotest.Reply{Calls: []einotest.Call{{ID: "call_u", Name: agentcrash.UnionTool, Args: unionArgs}}},
		einotest.Reply{Text: "Done."},
	)
	res, err := loop.Run(agentcrash.Ctx(t), loop.Options{RunID: "union",
		Journal: agentcrash.NewJournal(t, agentcrash.OpenStore(t, t.TempDir()+"/gatehouse.db")),
		Model:   gheino.NewModel(chatModel(t, srv)), Tools: tools, Prompt: "Count twice."})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Text != "Done." {
		t.Fatalf("text %q", res.Text)
	}
	if got := mcpSrv.Args(); len(got) != 1 || string(got[0]) != unionArgs {
		t.Fatalf("the server received %q, want %s", got, unionArgs)
	}
	var sent *einotest.Function
	for _, tl := range request(t, srv, 0).Tools {
		if tl.Function.Name == agentcrash.UnionTool {
			sent = &tl.Function
		}
	}
	if sent == nil {
		t.Fatalf("tool %s not sent", agentcrash.UnionTool)
	}
	var params map[string]any
	if err := json.Unmarshal(sent.Parameters, &params); err != nil {
		t.Fatal(err)
	}
	props, _ := params["properties"].(map[string]any)
	for _, k := range []string{"to", "cc", "count", "note"} {
		if _, ok := props[k]; !ok {
			t.Errorf("property %q not sent: %s", k, sent.Parameters)
		}
	}
	if _, ok := params["oneOf"]; ok || params["type"] != "object" {
		t.Errorf("parameters sent %s", sent.Parameters)
	}
	if !strings.HasSuffix(sent.Description, "\n\n"+agentcrash.UnionNote) {
		t.Errorf("description %q does not end with the note", sent.Description)
	}
}
