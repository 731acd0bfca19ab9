package gateway

//lint:file-ignore SA1019 sampling, roots and logging are deprecated as of 2026-07-28 and still served to callers of the revisions that have them

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSetLevelKeepsUpdates: a subscribed caller keeps getting the resource
// updates a server sends it after it set a logging level, in either order
// (subscribe then logging/setLevel, logging/setLevel then subscribe), at
// both stateful revisions, over stdio and HTTP upstreams. The upstream
// (scopedUpstream) sends the updates its touch tool makes only on the
// session that called it, about that session's subscriptions, as
// server-everything's toggle-subscriber-updates does: a level gives the
// caller an upstream session of its own, which its calls then take, so
// its subscriptions must be held there too (before the fix they stayed on
// the shared session, and the caller heard 0 updates). Each touch answers
// how many subscriptions its session holds (1: the call and the
// subscription met), and the caller hears each update exactly once; a
// bystander subscribed to the same URI through the shared session hears
// none of a caller's own.
func TestSetLevelKeepsUpdates(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			dir := t.TempDir()
			yml := fmt.Sprintf("listen: 127.0.0.1:0\nstore: sqlite:%s\nservers:\n%s", filepath.Join(dir, "g.db"), scopedServerYAML(t, dir, transport))
			_, url := serveGateway(t, yml, dir)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			by := newListener(ctx, t, url, "2025-11-25")
			if err := by.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "x://r"}); err != nil {
				t.Fatal(err)
			}
			for _, rev := range []string{"2025-11-25", "2025-06-18"} {
				for _, order := range []string{"subscribe-then-level", "level-then-subscribe", "no-level"} {
					t.Run(rev+"/"+order, func(t *testing.T) {
						l := newListener(ctx, t, url, rev)
						setLevel := func() {
							if err := l.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
								t.Fatalf("setLevel: %v", err)
							}
						}
						subscribe := func() {
							if err := l.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "x://r"}); err != nil {
								t.Fatalf("subscribe: %v", err)
							}
						}
						switch order {
						case "subscribe-then-level":
							subscribe()
							setLevel()
						case "level-then-subscribe":
							setLevel()
							subscribe()
						default:
							subscribe()
						}
						heardBy := len(by.ch)
						const touches = 3
						for i := range touches {
							// Its updates on the call's response stream, then
							// on the upstream session's standalone stream.
							res, err := l.cs.CallTool(ctx, &mcp.CallToolParams{Name: "sc__touch", Arguments: map[string]any{"standalone": i%2 == 1}})
							if err != nil || res.IsError {
								t.Fatalf("touch %d: %v %+v", i, err, res)
							}
							if got := res.Content[0].(*mcp.TextContent).Text; got != "1" {
								t.Fatalf("touch %d: its upstream session holds %s subscriptions, want 1 (the caller's call and subscription went through different upstream sessions)", i, got)
							}
						}
						if got := l.count(touches); got != touches {
							t.Fatalf("heard %d updates of x://r, want %d", got, touches)
						}
						if order != "no-level" {
							// The bystander shares the upstream session the
							// updates of a shared caller's touch arrive on;
							// a caller's own session's are its alone.
							if got := len(by.ch) - heardBy; got != 0 {
								t.Fatalf("the bystander heard %d of the caller's own updates", got)
							}
						}
						if err := l.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "x://r"}); err != nil {
							t.Fatalf("unsubscribe: %v", err)
						}
						res, err := l.cs.CallTool(ctx, &mcp.CallToolParams{Name: "sc__touch"})
						if err != nil || res.IsError {
							t.Fatalf("touch after unsubscribe: %v %+v", err, res)
						}
						if order != "no-level" {
							if got := res.Content[0].(*mcp.TextContent).Text; got != "0" {
								t.Fatalf("after unsubscribe the caller's upstream session holds %s subscriptions, want 0", got)
							}
						}
						for len(by.ch) > 0 {
							<-by.ch
						}
					})
				}
			}
		})
	}
}

// listener is a calling session that counts the resource updates it hears.
type listener struct {
	cs *mcp.ClientSession
	ch chan string
}

// newListener connects to the gateway at url asking for revision rev.
func newListener(ctx context.Context, t *testing.T, url, rev string) *listener {
	t.Helper()
	l := &listener{ch: make(chan string, 100)}
	c := mcp.NewClient(&mcp.Implementation{Name: "listener", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { l.ch <- req.Params.URI },
		LoggingMessageHandler:  func(context.Context, *mcp.LoggingMessageRequest) {},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: rev})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != rev {
		t.Fatalf("negotiated %s, want %s", got, rev)
	}
	l.cs = cs
	return l
}

// count waits until want updates arrived (10 s at most), then a little
// longer for any beyond them, and returns how many arrived.
func (l *listener) count(want int) int {
	n := 0
	deadline := time.After(10 * time.Second)
	for n < want {
		select {
		case <-l.ch:
			n++
		case <-deadline:
			return n
		}
	}
	extra := time.After(300 * time.Millisecond)
	for {
		select {
		case <-l.ch:
			n++
		case <-extra:
			return n
		}
	}
}
