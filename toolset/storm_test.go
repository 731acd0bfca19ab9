package toolset

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/plugin"
)

// stormWriter writes n notifications/tools/list_changed events into an SSE
// answer before the answer's first bytes: a server that announces a storm
// of changes on the wire.
type stormWriter struct {
	http.ResponseWriter
	n    int
	done bool
}

func (w *stormWriter) Write(p []byte) (int, error) {
	if !w.done {
		w.done = true
		if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			ev := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"
			if _, err := io.WriteString(w.ResponseWriter, strings.Repeat(ev, w.n)); err != nil {
				return 0, err
			}
		}
	}
	return w.ResponseWriter.Write(p)
}

func (w *stormWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *stormWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestListChangedStormOneRelist: a real go-sdk server over streamable HTTP
// on 127.0.0.1 removes a tool, then announces 1,000
// notifications/tools/list_changed in one burst (written on the wire before
// the answer of the call that removed it). The server is listed again a
// few times at most, not once per notification, and the tool map follows
// the final listing.
func TestListChangedStormOneRelist(t *testing.T) {
	const storm = 1000
	srv := mcp.NewServer(&mcp.Implementation{Name: "storm", Version: "1"}, nil)
	var lists atomic.Int64
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				lists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	noop := func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "keep"}, noop)
	mcp.AddTool(srv, &mcp.Tool{Name: "gone"}, noop)
	mcp.AddTool(srv, &mcp.Tool{Name: "storm"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		srv.RemoveTools("gone")
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "stormed"}}}, nil, nil
	})
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"name":"storm"`)) {
				w = &stormWriter{ResponseWriter: w, n: storm}
			}
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)

	var told atomic.Int64
	ts := open(t, []Server{remote("s", hs.URL, plugin.TransportStreamableHTTP)}, &Options{
		SessionHooks: &SessionHooks{ListChanged: func(_ string, what ListChange) {
			if what == ToolsChanged {
				told.Add(1)
			}
		}},
	})
	m := tools(t, ts)
	if _, ok := m["s__gone"]; !ok || len(m) != 3 {
		t.Fatalf("tools before the storm: %v", m)
	}
	before := lists.Load()
	if got := call(t, ts, "s__storm", nil); got != "stormed" {
		t.Fatalf("storm = %q", got)
	}
	// Every notification of the burst was read; then whatever they
	// started ends.
	waitFor(t, "the storm to be read", func() bool { return told.Load() >= storm })
	ts.bg.Wait()

	relists := lists.Load() - before
	t.Logf("%d list_changed, %d re-listings", storm, relists)
	if relists < 1 || relists > 3 {
		t.Errorf("tools/list requests after %d list_changed = %d, want 1 to 3", storm, relists)
	}
	m = tools(t, ts)
	if _, ok := m["s__gone"]; ok {
		t.Errorf("the tool map still has s__gone after the final listing: %v", m)
	}
	if _, ok := m["s__keep"]; !ok {
		t.Errorf("the tool map lost s__keep: %v", m)
	}
}
