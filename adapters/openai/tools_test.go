package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	oai "github.com/openai/openai-go/v3"

	"github.com/gatehouse-dev/gatehouse/adapters/openai"
	"github.com/gatehouse-dev/gatehouse/adapters/openai/openaitest"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// shapeSchema has what a flattening adapter loses: $defs and $ref, a
// oneOf, nested objects, and a number float64 cannot hold.
const shapeSchema = `{"type":"object","$defs":{"point":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"]}},
"properties":{"shape":{"oneOf":[
 {"type":"object","properties":{"circle":{"type":"object","properties":{"center":{"$ref":"#/$defs/point"},"r":{"type":"number","maximum":9007199254740993}}}}},
 {"type":"object","properties":{"poly":{"type":"array","items":{"$ref":"#/$defs/point"}}}}]}},"required":["shape"]}`

// oddNames are tool names no provider takes as they are.
var oddNames = []string{"get.weather/v2", strings.Repeat("very_long_tool_name_", 6), "überprüfen", "a b c", "x"}

// serveOdd serves a real MCP server over streamable HTTP on 127.0.0.1:
// tools with odd names, and "shape" with shapeSchema.
func serveOdd(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "odd", Version: "1"}, nil)
	handler := func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Params.Name + " ok"}}}, nil
	}
	for _, n := range oddNames {
		srv.AddTool(&mcp.Tool{Name: n, Description: "odd " + n, InputSchema: json.RawMessage(`{"type":"object"}`)}, handler)
	}
	srv.AddTool(&mcp.Tool{Name: "shape", Description: "Draw a shape.", InputSchema: json.RawMessage(shapeSchema)}, handler)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

func openOdd(t *testing.T, opts *toolset.Options) *toolset.Toolset {
	t.Helper()
	if opts == nil {
		opts = &toolset.Options{}
	}
	opts.AllowedHosts = []string{"127.0.0.1"}
	ts, err := toolset.Open(ctxT(t), []toolset.Server{{Config: plugin.ServerConfig{
		Name: "odd.server", Type: plugin.TransportStreamableHTTP, URL: serveOdd(t)}}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	return ts
}

// oneTurn runs a one-turn run (the model answers text) and returns the
// error and the first request body.
func oneTurn(t *testing.T, api string, tools []loop.Tool, tune func(loop.Model)) ([]byte, error) {
	t.Helper()
	srv := openaitest.NewServer(openaitest.Reply{Text: "fine"})
	defer srv.Close()
	m := newModel(api, srv)
	if tune != nil {
		tune(m)
	}
	_, err := loop.Run(ctxT(t), loop.Options{RunID: "names", Journal: newJournal(t, sqliteStore(t, "")), Model: m, Tools: tools, Prompt: "Hi."})
	b := srv.Bodies()
	if len(b) == 0 {
		t.Fatal("no request reached the server")
	}
	return b[0], err
}

// TestNamesProviderLegal sends the tools of a server with odd names (a
// dot and a slash, 120 characters, non-ASCII, spaces) through each API:
// through a toolset every name sent matches ^[a-zA-Z0-9_-]{1,64}$ and the
// server takes the request; the same tools with their raw names (a
// session without projection) are refused, so the check is real.
func TestNamesProviderLegal(t *testing.T) {
	ts := openOdd(t, nil)
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			b, err := oneTurn(t, api, toolsetTools(t, ts), nil)
			if err != nil {
				t.Fatalf("projected names refused: %v", err)
			}
			names := toolNames(t, b)
			if len(names) != len(oddNames)+1 {
				t.Fatalf("sent %d tools %q, want %d", len(names), names, len(oddNames)+1)
			}
			for _, n := range names {
				if !legalName.MatchString(n) {
					t.Errorf("name %q is not legal for OpenAI", n)
				}
			}

			cs, err := mcp.NewClient(&mcp.Implementation{Name: "raw", Version: "1"}, nil).Connect(ctxT(t),
				&mcp.StreamableClientTransport{Endpoint: serveOdd(t)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			raw, err := loop.SessionTools(ctxT(t), cs, "odd", "")
			if err != nil {
				t.Fatal(err)
			}
			var apiErr *oai.Error
			if _, err := oneTurn(t, api, raw, nil); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest ||
				!strings.Contains(apiErr.Message, "does not match pattern") {
				t.Fatalf("raw names: err %v, want the API's 400 on the name", err)
			}
		})
	}
}

// canonical decodes JSON with exact numbers, for comparison.
func canonical(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSchemaCarriedWhole checks that a tool's input schema reaches the
// wire as the toolset gives it: $defs, $ref, oneOf, nested objects, and
// numbers as numbers. (The toolset hands schemas over as decoded JSON, so
// 9007199254740993, 2^53+1, arrives already rounded; a Go tool's schema
// shows that the adapter itself keeps it exact.)
func TestSchemaCarriedWhole(t *testing.T) {
	ts := openOdd(t, nil)
	tools := toolsetTools(t, ts)
	var shape loop.Tool
	for _, tl := range tools {
		if tl.RemoteName == "shape" {
			shape = tl
		}
	}
	if !bytes.Contains(shape.InputSchema, []byte(`"$defs"`)) || !bytes.Contains(shape.InputSchema, []byte(`"oneOf"`)) {
		t.Fatalf("the toolset's schema lost parts already: %s", shape.InputSchema)
	}
	goTool := loop.Tool{Name: "go_shape", InputSchema: json.RawMessage(shapeSchema),
		Call: func(context.Context, json.RawMessage, string) (*mcp.CallToolResult, error) { return nil, nil }}
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			b, err := oneTurn(t, api, []loop.Tool{shape, goTool}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var req struct {
				Tools []struct {
					Parameters json.RawMessage `json:"parameters"`
					Function   struct {
						Parameters json.RawMessage `json:"parameters"`
					} `json:"function"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(b, &req); err != nil {
				t.Fatal(err)
			}
			for i, want := range []json.RawMessage{shape.InputSchema, goTool.InputSchema} {
				params := req.Tools[i].Parameters
				if api == "chat" {
					params = req.Tools[i].Function.Parameters
				}
				if !reflect.DeepEqual(canonical(t, params), canonical(t, want)) {
					t.Fatalf("parameters sent\n%s\nwant\n%s", params, want)
				}
			}
			if !bytes.Contains(b, []byte(`"maximum":9007199254740993`)) {
				t.Fatalf("the Go tool's number was not sent exactly: %s", b)
			}
		})
	}
}

// TestDeferredLoading: a toolset whose server is over the disclosure
// budget cuts the schemas and adds mcp__describe_tool; for the Responses
// API, DeferredToolsetTools gives the full schemas back with the tools
// deferred, and the request carries defer_loading and a tool_search tool
// (the wire server refuses deferred functions without one). A deferred
// tool is called like any other: one effect.
func TestDeferredLoading(t *testing.T) {
	ctx := ctxT(t)
	ts, file := openEffects(t, &toolset.Options{Budget: 1})
	plain := toolsetTools(t, ts)
	hasDescribe := false
	for _, tl := range plain {
		hasDescribe = hasDescribe || tl.Name == toolset.DescribeToolName
	}
	if !hasDescribe {
		t.Fatalf("the toolset did not cut the schemas (no %s): budget too big for the test", toolset.DescribeToolName)
	}
	tools, deferred, err := openai.DeferredToolsetTools(ctx, ts)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != len(plain)-1 {
		t.Fatalf("%d tools, want %d (all but %s)", len(tools), len(plain)-1, toolset.DescribeToolName)
	}
	for _, tl := range tools {
		sum, err := ts.Describe(ctx, tl.Name)
		if err != nil {
			t.Fatal(err)
		}
		full, _ := json.Marshal(sum.InputSchema)
		if !deferred(tl.Name) || !reflect.DeepEqual(canonical(t, tl.InputSchema), canonical(t, full)) {
			t.Fatalf("%s: deferred %v, schema %s, want %s", tl.Name, deferred(tl.Name), tl.InputSchema, full)
		}
	}

	srv := openaitest.NewServer(openaitest.Reply{Calls: []openaitest.Call{{ID: "call_d", Name: "pay__charge_once", Args: `{"amount":4}`}}},
		openaitest.Reply{Text: "done"})
	defer srv.Close()
	m := openai.NewResponsesModel(client(srv), "gpt-test")
	m.Tools.Deferred = deferred
	res, err := loop.Run(ctx, loop.Options{RunID: "run-d", Journal: newJournal(t, sqliteStore(t, "")), Model: m, Tools: tools, Prompt: "Pay 4."})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "done" {
		t.Fatalf("text %q", res.Text)
	}
	if got := effects(t, file); len(got) != 1 || got["run-d:call_d"] != 1 {
		t.Fatalf("effects %v", got)
	}
	var req struct {
		Tools []struct {
			Type         string `json:"type"`
			Name         string `json:"name"`
			DeferLoading *bool  `json:"defer_loading"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(srv.Bodies()[0], &req); err != nil {
		t.Fatal(err)
	}
	if n := len(req.Tools); n != len(tools)+1 || req.Tools[n-1].Type != "tool_search" {
		t.Fatalf("tools sent %+v", req.Tools)
	}
	for _, tl := range req.Tools[:len(tools)] {
		if tl.Type != "function" || tl.DeferLoading == nil || !*tl.DeferLoading {
			t.Fatalf("tool %+v not deferred", tl)
		}
	}
}

// TestBadSchema: a tool whose schema is not a JSON object is an error
// naming it, before anything is sent.
func TestBadSchema(t *testing.T) {
	for _, schema := range []string{`[]`, `"object"`, `null`, `{"type":`, `42`, `{"type":"object"} {}`} {
		defs := []loop.ToolDef{{Name: "ok", InputSchema: json.RawMessage(`{"type":"object"}`)}, {Name: "bad", InputSchema: json.RawMessage(schema)}}
		if _, err := openai.ResponsesTools(defs, nil); !errors.Is(err, openai.ErrSchema) || !strings.Contains(err.Error(), `"bad"`) {
			t.Errorf("responses, schema %s: err %v", schema, err)
		}
		if _, err := openai.ChatTools(defs, nil); !errors.Is(err, openai.ErrSchema) || !strings.Contains(err.Error(), `"bad"`) {
			t.Errorf("chat, schema %s: err %v", schema, err)
		}
	}
	// No schema, or one without a type: an object, as the API requires.
	tools, err := openai.ResponsesTools([]loop.ToolDef{{Name: "none"}, {Name: "untyped", InputSchema: json.RawMessage(`{"properties":{}}`)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.OfFunction.Parameters["type"] != "object" {
			t.Errorf("%s: parameters %v", tl.OfFunction.Name, tl.OfFunction.Parameters)
		}
	}
}
