package transport

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTappedNilOpensStandaloneSSE: a Detached streamable HTTP transport
// through Tapped without a tap (Upstream.Connect's sessions) still gets the
// go-sdk's own connection, which opens the standalone SSE stream once
// initialized: a notification the server sends outside any request (here
// tools/list_changed) arrives. A wrapped connection never opened it.
func TestTappedNilOpensStandaloneSSE(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()
	changed := make(chan struct{}, 1)
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	ctx := context.Background()
	life, stop := context.WithCancel(ctx)
	defer stop()
	sess, err := c.Connect(ctx, &Tapped{Inner: &Detached{Inner: &mcp.StreamableClientTransport{Endpoint: ts.URL}, Life: life}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if _, err := sess.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// Keep adding until the notification arrives: the standalone stream may
	// open just after the handshake returns.
	deadline := time.After(30 * time.Second)
	for i := 0; ; i++ {
		mcp.AddTool(srv, &mcp.Tool{Name: "t" + string(rune('a'+i%26)), InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
				return nil, nil, nil
			})
		select {
		case <-changed:
			return
		case <-deadline:
			t.Fatal("no tools/list_changed: the standalone SSE stream was never opened")
		case <-time.After(100 * time.Millisecond):
		}
	}
}
