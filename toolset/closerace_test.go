package toolset

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/plugin"
)

// TestCloseWhileListChangedArrives: a real go-sdk server over streamable
// HTTP on 127.0.0.1 announces two notifications/tools/list_changed; the
// first one's hook holds its handler until Close has begun, so the second
// is handled while Close is closing the session. Close must return: it
// once held the server's lock while the go-sdk waited for the session's
// handlers, and the second handler waited for that lock (a deadlock seen
// in a gateway test's cleanup).
func TestCloseWhileListChangedArrives(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "storm"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "stormed"}}}, nil, nil
	})
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"name":"storm"`)) {
				w = &stormWriter{ResponseWriter: w, n: 2}
			}
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)

	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ts, err := Open(context.Background(), []Server{remote("s", hs.URL, plugin.TransportStreamableHTTP)}, &Options{
		ConnectTimeout: 20 * time.Second,
		SessionHooks: &SessionHooks{ListChanged: func(string, ListChange) {
			first := false
			once.Do(func() { first = true })
			if first {
				close(entered)
				<-release
			}
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tools(t, ts)["s__storm"]; !ok {
		t.Fatal("s__storm is not listed")
	}
	called := make(chan struct{})
	go func() { // its answer follows the notifications; it may fail once closed
		defer close(called)
		_, _ = ts.Call(context.Background(), "s__storm", nil, CallInfo{})
	}()
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the first list_changed never reached its hook")
	}
	closed := make(chan error, 1)
	go func() { closed <- ts.Close() }()
	time.Sleep(300 * time.Millisecond) // let Close reach the session (not an assertion)
	close(release)
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return: it waits for a list_changed handler that waits for Close")
	}
	<-called
}
