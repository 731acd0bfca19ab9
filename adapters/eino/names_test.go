package eino_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/adapters/internal/agentcrash"

	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	gheino "github.com/gatehouse-dev/gatehouse/adapters/eino"
	"github.com/gatehouse-dev/gatehouse/adapters/eino/einotest"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/store/memory"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// richSchema has what a provider must carry whole: $defs with a $ref to
// them, a top-level oneOf, nested objects, a draft-07 "definitions" and
// an extension keyword eino's schema struct has no field for.
const richSchema = `{
 "type": "object",
 "$defs": {"address": {"type": "object", "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"},
   "geo": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}, "required": ["lat", "lon"]}},
   "required": ["zip"]}},
 "definitions": {"legacy": {"type": "integer", "minimum": 0}},
 "properties": {
  "to": {"$ref": "#/$defs/address"},
  "count": {"$ref": "#/definitions/legacy"},
  "mode": {"oneOf": [{"const": "air"}, {"const": "sea"}], "x-display": "Mode"},
  "items": {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "exclusiveMinimum": 0}}}}
 },
 "oneOf": [{"required": ["to"]}, {"required": ["count"]}],
 "additionalProperties": false
}`

// oddServer is a real MCP server (go-sdk, streamable HTTP on 127.0.0.1)
// whose tool names no provider takes as they are, and one tool with a
// rich schema.
func oddServer(t *testing.T) (*httptest.Server, []string) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "odd", Version: "1"}, nil)
	names := []string{
		"files.read/v2", "has space", "résumé-lookup",
		strings.Repeat("very_long_tool_name_", 6), strings.Repeat("very_long_tool_name_", 6) + "2",
	}
	obj := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)
	for _, n := range names {
		srv.AddTool(&mcp.Tool{Name: n, Description: "odd " + n, InputSchema: obj},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran " + req.Params.Name}}}, nil
			})
	}
	srv.AddTool(&mcp.Tool{Name: "ship", Description: "Ship items.", InputSchema: json.RawMessage(richSchema)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "shipped"}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs, names
}

// TestNamesLegalAndSchemasWhole: a toolset over a server with odd and long
// tool names and a schema with $defs, oneOf, nested objects, a draft-07
// "definitions" and an extension keyword. On the wire (eino-ext's OpenAI
// model, Chat Completions) every name is provider-legal and distinct and
// the rich schema arrives as the toolset gives it, every keyword kept but
// the top-level oneOf, merged (toolset.ProviderSchema);
// the model's call of an odd tool reaches the server's tool.
func TestNamesLegalAndSchemasWhole(t *testing.T) {
	hs, names := oddServer(t)
	ts, err := toolset.Open(agentcrash.Ctx(t), []toolset.Server{{Config: plugin.ServerConfig{
		Name: "odd", Type: plugin.TransportStreamableHTTP, URL: hs.URL,
	}}}, &toolset.Options{AllowedHosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	tools := agentcrash.Tools(t, ts)
	if len(tools) != len(names)+1 {
		t.Fatalf("%d tools: %+v", len(tools), tools)
	}
	var ship, long loop.Tool
	for _, tl := range tools {
		switch tl.RemoteName {
		case "ship":
			ship = tl
		case names[3]:
			long = tl
		}
	}
	for _, kw := range []string{`"$defs"`, `"oneOf"`, `"definitions"`, `"x-display"`, `"geo"`} {
		if !strings.Contains(string(ship.InputSchema), kw) {
			t.Fatalf("the toolset dropped %s: %s", kw, ship.InputSchema)
		}
	}

	srv := wireServer(t,
		einotest.Reply{Calls: []einotest.Call{{ID: "c1", Name: long.Name, Args: `{"q":"x"}`}}},
		einotest.Reply{Text: "ok"})
	m := gheino.NewModel(chatModel(t, srv))
	ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "names", Journal: agentcrash.NewJournal(t, memStore(t)), Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Turn(agentcrash.Ctx(t), loop.ModelRequest{Messages: []loop.Message{{Role: loop.RoleUser, Content: "go"}}, Tools: ex.Tools()})
	if err != nil {
		t.Fatalf("Turn: %v", err)
	}
	// ship's schema has a top-level oneOf: merged (toolset.ProviderSchema).
	var given map[string]any
	if err := json.Unmarshal(ship.InputSchema, &given); err != nil {
		t.Fatal(err)
	}
	merged, note := toolset.ProviderSchema(given)
	want := []byte(mustJSON(t, merged))
	r := request(t, srv, 0)
	seen := map[string]bool{}
	for _, wt := range r.Tools {
		if !agentcrash.LegalName.MatchString(wt.Function.Name) || seen[wt.Function.Name] {
			t.Errorf("name %q on the wire is not legal or not unique", wt.Function.Name)
		}
		seen[wt.Function.Name] = true
		if wt.Function.Name == ship.Name && (!sameJSON(t, wt.Function.Parameters, want) || !strings.HasSuffix(wt.Function.Description, "\n\n"+note)) {
			t.Errorf("ship's schema on the wire:\n%s\nwant\n%s\ndescription %q", wt.Function.Parameters, want, wt.Function.Description)
		}
	}
	if len(seen) != len(tools) || !seen[ship.Name] {
		t.Fatalf("tools on the wire: %v", seen)
	}

	// The model's call of the long-named tool, through a ToolsNode.
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != long.Name {
		t.Fatalf("response: %+v", resp)
	}
	etools, err := gheino.Tools(ex)
	if err != nil {
		t.Fatal(err)
	}
	node, err := compose.NewToolNode(agentcrash.Ctx(t), &compose.ToolsNodeConfig{Tools: etools})
	if err != nil {
		t.Fatal(err)
	}
	msg := schema.AssistantMessage("", []schema.ToolCall{{ID: "c1", Type: "function",
		Function: schema.FunctionCall{Name: long.Name, Arguments: `{"q":"x"}`}}})
	outs, err := node.Invoke(agentcrash.Ctx(t), msg)
	if err != nil || len(outs) != 1 || outs[0].Content != "ran "+names[3] || outs[0].ToolCallID != "c1" {
		t.Fatalf("ToolsNode: %+v, %v", outs, err)
	}
}

func memStore(t testing.TB) *memory.Store {
	t.Helper()
	s, err := memory.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
