package toolset

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/plugin"
)

// TestStreamEndedText: the go-sdk exports no value for the error of a call
// whose response stream the server ended without answering and without an
// event ID; StreamEnded reads its text, in this one place. This test fails
// when the go-sdk's text changes: a real go-sdk server ends the stream, the
// go-sdk's client must report it so that StreamEnded sees it, and Call
// must turn it into ErrStreamEnded.
func TestStreamEndedText(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "hangup", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if ex := req.GetExtra(); ex != nil && ex.CloseSSEStream != nil {
			ex.CloseSSEStream(mcp.CloseSSEStreamArgs{}) // no event store: no event ID
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "too late"}}}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	defer func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	}()

	// The go-sdk's client itself.
	ctx := ctxT(t)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "hangup", Arguments: map[string]any{}})
	cs.Close()
	if err == nil || !StreamEnded(err) {
		t.Fatalf("the go-sdk's error for an ended stream is %v: StreamEnded no longer recognises it (did the go-sdk's text change?)", err)
	}
	if StreamEnded(errors.New("connection closed")) || StreamEnded(nil) {
		t.Fatal("StreamEnded recognises other errors")
	}

	// Through a toolset.
	ts := open(t, []Server{{Config: plugin.ServerConfig{Name: "up", Type: plugin.TransportStreamableHTTP, URL: hs.URL}}}, nil)
	_, err = ts.Call(ctx, "up__hangup", nil, CallInfo{})
	if !errors.Is(err, ErrStreamEnded) || !errors.Is(err, ErrCallFailed) {
		t.Fatalf("Call: %v, want ErrStreamEnded inside call_failed", err)
	}
}
