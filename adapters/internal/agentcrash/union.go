package agentcrash

// The union server: a real MCP server for the adapters' end-to-end tests
// of toolset.ProviderSchema.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// UnionSchema is the input schema of the union server's tool: a message
// to someone, or a count, as a top-level oneOf (what zod unions generate,
// and what OpenAI and Anthropic refuse).
const UnionSchema = `{"type":"object","properties":{"note":{"type":"string"}},
"oneOf":[
 {"type":"object","properties":{"to":{"type":"string"},"cc":{"type":"string"}},"required":["to"]},
 {"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}]}`

// UnionTool is the union server's tool's name through a toolset ("union"
// is the server's name); UnionNote is what toolset.ProviderSchema says of
// its schema.
const (
	UnionTool = "union__send"
	UnionNote = "Accepts exactly one of these argument sets: {to} | {count}."
)

// UnionServer is a running union server: the go-sdk's MCP server over
// streamable HTTP on 127.0.0.1, offering one tool, "send", with
// UnionSchema, and recording the arguments of every call as the bytes it
// received.
type UnionServer struct {
	// URL is the streamable HTTP endpoint.
	URL string

	mu   sync.Mutex
	args []json.RawMessage
}

// StartUnion starts a union server, closed at the end of the test.
func StartUnion(t testing.TB) *UnionServer {
	t.Helper()
	s := &UnionServer{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "union", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "send", Description: "Send a message or a count.", InputSchema: json.RawMessage(UnionSchema)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.mu.Lock()
			s.args = append(s.args, append(json.RawMessage(nil), req.Params.Arguments...))
			s.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sent"}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

// Args returns the arguments of the calls received, in order, as the bytes
// the server received.
func (s *UnionServer) Args() []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]json.RawMessage(nil), s.args...)
}

// Toolset opens a toolset over the server (named "union"), closed at the
// end of the test.
func (s *UnionServer) Toolset(t testing.TB) *toolset.Toolset {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ts, err := toolset.Open(ctx, []toolset.Server{{Config: plugin.ServerConfig{
		Name: "union", Type: plugin.TransportStreamableHTTP, URL: s.URL}}},
		&toolset.Options{AllowedHosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	return ts
}
