package anthropic_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/gatehouse-dev/gatehouse/adapters/anthropic"
	"github.com/gatehouse-dev/gatehouse/adapters/anthropic/anthropictest"
	"github.com/gatehouse-dev/gatehouse/adapters/internal/agentcrash"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// unionArgs are the model's arguments to the union server's tool: the count branch
// of its oneOf, with a number float64 cannot hold.
const unionArgs = `{"count":9007199254740993,"note":"twice"}`

// TestTopLevelOneOf runs loop.Run over Model with a real MCP server's tool
// whose input schema has a top-level oneOf, which the Messages API refuses
// (anthropictest refuses it as the API does): the request is taken, the
// schema sent is one object schema with the branches' properties and the
// description says the alternatives, and the model's call reaches the
// server with the model's arguments, byte for byte. The tool runner's
// tools (NewRunnerTools) carry the same schema and description.
func TestTopLevelOneOf(t *testing.T) {
	mcpSrv := agentcrash.StartUnion(t)
	ts := mcpSrv.Toolset(t)
	tools, err := loop.ToolsetTools(ctxT(t), ts)
	if err != nil {
		t.Fatal(err)
	}
	srv, client := wire(t,
		anthropictest.Reply{Calls: []anthropictest.Call{{ID: "toolu_u", Name: agentcrash.UnionTool, Args: unionArgs}}},
		anthropictest.Reply{Text: "Done."},
	)
	model := &anthropic.Model{Client: client, Params: sdk.MessageNewParams{Model: "claude-test", MaxTokens: 512}}
	dir := t.TempDir()
	res, err := loop.Run(ctxT(t), loop.Options{RunID: "union", Journal: newJournal(t, openStore(t, filepath.Join(dir, "a.db"))),
		Model: model, Tools: tools, Prompt: "Count twice."})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Text != "Done." {
		t.Fatalf("text %q", res.Text)
	}
	if got := mcpSrv.Args(); len(got) != 1 || string(got[0]) != unionArgs {
		t.Fatalf("the server received %q, want %s", got, unionArgs)
	}
	var sent *anthropictest.Tool
	for i, tl := range request(t, srv, 0).Tools {
		if tl.Name == agentcrash.UnionTool {
			sent = &request(t, srv, 0).Tools[i]
		}
	}
	if sent == nil {
		t.Fatalf("tool %s not sent", agentcrash.UnionTool)
	}
	checkUnion(t, sent.InputSchema, sent.Description)

	ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "r", Journal: newJournal(t, openStore(t, filepath.Join(dir, "b.db"))), Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := anthropic.NewRunnerTools(ex)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range rt.Tools() {
		if tl.Name() == agentcrash.UnionTool {
			b, err := json.Marshal(tl.InputSchema())
			if err != nil {
				t.Fatal(err)
			}
			checkUnion(t, b, tl.Description())
		}
	}
}

// checkUnion checks the schema and description sent for the union server's tool.
func checkUnion(t *testing.T, schema json.RawMessage, desc string) {
	t.Helper()
	var params map[string]any
	if err := json.Unmarshal(schema, &params); err != nil {
		t.Fatal(err)
	}
	props, _ := params["properties"].(map[string]any)
	for _, k := range []string{"to", "cc", "count", "note"} {
		if _, ok := props[k]; !ok {
			t.Errorf("property %q not sent: %s", k, schema)
		}
	}
	if _, ok := params["oneOf"]; ok || params["type"] != "object" || params["required"] != nil {
		t.Errorf("schema sent %s", schema)
	}
	if !strings.HasSuffix(desc, "\n\n"+agentcrash.UnionNote) {
		t.Errorf("description %q does not end with the note", desc)
	}
}
