package fantasy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/adapters/internal/agentcrash"

	"charm.land/fantasy"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	ghfantasy "github.com/gatehouse-dev/gatehouse/adapters/fantasy"
	"github.com/gatehouse-dev/gatehouse/adapters/fantasy/fantasytest"
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

// TestNamesLegalAndSchemas: a toolset over a server with odd and long
// tool names and a schema with $defs, a top-level oneOf, nested objects, a
// draft-07 "definitions" and an extension keyword. Through the loop.Model
// (function tools) the schema reaches the wire whole but for its
// top-level oneOf, merged (toolset.ProviderSchema); through fantasy's
// agent (AgentTools, which keep only properties and required) it arrives
// with its $refs inlined, the oneOf's forms in the description, and no
// dangling $ref. Every name is provider-legal and distinct, and the
// agent's call of an odd tool reaches the server's tool.
func TestNamesLegalAndSchemas(t *testing.T) {
	hs, names := oddServer(t)
	ts, err := toolset.Open(agentcrash.Ctx(t), []toolset.Server{{Config: plugin.ServerConfig{
		Name: "odd", Type: plugin.TransportStreamableHTTP, URL: hs.URL,
	}}}, &toolset.Options{AllowedHosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	tools := agentcrash.Tools(t, ts)
	var ship, long loop.Tool
	for _, tl := range tools {
		switch tl.RemoteName {
		case "ship":
			ship = tl
		case names[3]:
			long = tl
		}
	}
	if len(tools) != len(names)+1 || !strings.Contains(string(ship.InputSchema), `"definitions"`) {
		t.Fatalf("tools: %+v", tools)
	}
	srv := wireServer(t,
		fantasytest.Reply{Calls: []fantasytest.Call{{ID: "c1", Name: long.Name, Args: `{"q":"x"}`}}},
		fantasytest.Reply{Text: "ok"})
	ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "names", Journal: agentcrash.NewJournal(t, memStore(t)), Tools: tools})
	if err != nil {
		t.Fatal(err)
	}

	// The loop's model: function tools, schemas whole.
	m := ghfantasy.NewModel(languageModel(t, srv), nil)
	if _, err := m.Turn(agentcrash.Ctx(t), loop.ModelRequest{Messages: []loop.Message{{Role: loop.RoleUser, Content: "go"}}, Tools: ex.Tools()}); err != nil {
		t.Fatalf("Turn: %v", err)
	}
	wireShip := func(r fantasytest.Request) fantasytest.Function {
		seen := map[string]bool{}
		var f fantasytest.Function
		for _, wt := range r.Tools {
			if !agentcrash.LegalName.MatchString(wt.Function.Name) || seen[wt.Function.Name] {
				t.Errorf("name %q on the wire is not legal or not unique", wt.Function.Name)
			}
			seen[wt.Function.Name] = true
			if wt.Function.Name == ship.Name {
				f = wt.Function
			}
		}
		if len(seen) != len(tools) || f.Name == "" {
			t.Fatalf("tools on the wire: %v", seen)
		}
		return f
	}
	var given map[string]any
	if err := json.Unmarshal(ship.InputSchema, &given); err != nil {
		t.Fatal(err)
	}
	merged, note := toolset.ProviderSchema(given)
	want := []byte(mustJSON(t, merged))
	if f := wireShip(request(t, srv, 0)); !sameJSON(t, f.Parameters, want) || !strings.HasSuffix(f.Description, "\n\n"+note) {
		t.Errorf("ship's schema on the wire:\n%s\nwant\n%s\ndescription %q", f.Parameters, want, f.Description)
	}

	// fantasy's agent: AgentTools.
	etools, err := ghfantasy.Tools(ex)
	if err != nil {
		t.Fatal(err)
	}
	res, err := fantasy.NewAgent(languageModel(t, srv), fantasy.WithTools(etools...)).Generate(agentcrash.Ctx(t), fantasy.AgentCall{Prompt: "go"})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	f := wireShip(request(t, srv, 1))
	if strings.Contains(string(f.Parameters), `"$ref"`) {
		t.Errorf("a $ref reached the agent's wire: %s", f.Parameters)
	}
	var p struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if err := json.Unmarshal(f.Parameters, &p); err != nil {
		t.Fatal(err)
	}
	to, _ := json.Marshal(p.Properties["to"])
	count, _ := json.Marshal(p.Properties["count"])
	if !strings.Contains(string(to), `"zip"`) || !strings.Contains(string(to), `"required":["lat","lon"]`) ||
		string(count) != `{"minimum":0,"type":"integer"}` || p.Properties["mode"]["x-display"] != "Mode" ||
		len(p.Properties) != 4 || len(p.Required) != 0 {
		t.Errorf("the agent's ship schema: %s", f.Parameters)
	}
	if !strings.HasSuffix(f.Description, "Accepts exactly one of these argument sets: {to} | {count}.") {
		t.Errorf("ship's description: %q", f.Description)
	}
	results := res.Steps[0].Content.ToolResults()
	if len(results) != 1 || results[0].ToolCallID != "c1" {
		t.Fatalf("results: %+v", results)
	}
	if out, ok := results[0].Result.(fantasy.ToolResultOutputContentText); !ok || out.Text != "ran "+names[3] {
		t.Fatalf("the long-named tool's result: %+v", results[0].Result)
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
