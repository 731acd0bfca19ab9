package relay

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/relay/internal/upsub"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/testserver"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// modern asks every upstream for 2026-07-28, where the go-sdk subscribes
// by subscriptions/listen streams.
func modern() *toolset.Options { return &toolset.Options{ProtocolVersion: "2026-07-28"} }

// serveStateless serves s over stateless streamable HTTP on 127.0.0.1 (a
// stateful go-sdk server settles on 2025-11-25 whatever is asked).
func serveStateless(t *testing.T, s *mcp.Server) string {
	t.Helper()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// TestListenResubscribeHolds: on a 2026-07-28 upstream a subscribe is
// answered once the server holds it (one update sent right after it
// arrives), also when the same URI was unsubscribed upstream just before:
// over stdio the go-sdk's teardown of the old stream would undo the new
// one on the session they share (stateless HTTP has a session a request).
func TestListenResubscribeHolds(t *testing.T) {
	for _, mode := range []string{"stdio", "http-stateless"} {
		t.Run(mode, func(t *testing.T) {
			up := stdio("a", "-resource", "x://r", "-resource", "x://warm")
			if mode != "stdio" {
				f := testserver.New(testserver.Config{Resources: []string{"x://r", "x://warm"}})
				up = remote("a", serveStateless(t, f.Server()))
			}
			r := openRelay(t, []toolset.Server{up}, modern(), nil)
			resubscribeHolds(t, r)
		})
	}
}

// subscriber is a caller of r's front that hears resource updates, and a
// way to make server "a" announce one (its touch tool).
type subscriber struct {
	t  *testing.T
	r  *Relay
	c  *mcp.ClientSession
	ch chan string
}

func newSubscriber(t *testing.T, r *Relay) *subscriber {
	_, url := front(t, r, false)
	sb := &subscriber{t: t, r: r, ch: make(chan string, 64)}
	sb.c = dial(t, url, "2025-11-25", &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		sb.ch <- req.Params.URI
	}})
	return sb
}

func (sb *subscriber) touch(ctx context.Context, uri string) error {
	res, err := sb.r.Toolset().Call(ctx, "a__touch", map[string]any{"uri": uri}, toolset.CallInfo{})
	if err == nil && res.IsError {
		err = fmt.Errorf("touch: %+v", res.Content)
	}
	return err
}

// await touches uri until its update arrives (failed touches too, while
// a server restarts), then empties the channel.
func (sb *subscriber) await(ctx context.Context, uri, what string) {
	sb.t.Helper()
	for {
		_ = sb.touch(ctx, uri)
		select {
		case got := <-sb.ch:
			if got != uri {
				sb.t.Fatalf("%s: update of %q, want %q", what, got, uri)
			}
			time.Sleep(50 * time.Millisecond)
			for len(sb.ch) > 0 {
				<-sb.ch
			}
			return
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			sb.t.Fatalf("%s: no update of %s arrived", what, uri)
		}
	}
}

func resubscribeHolds(t *testing.T, r *Relay) {
	ctx := ctxT(t)
	sb := newSubscriber(t, r)
	c, ch := sb.c, sb.ch
	touch := func(uri string) {
		t.Helper()
		if err := sb.touch(ctx, uri); err != nil {
			t.Fatalf("touch %s: %v", uri, err)
		}
	}
	// The caller's own standalone stream opens in the background: an
	// update of another URI, sent until it arrives, shows it open.
	if err := c.Subscribe(ctx, &mcp.SubscribeParams{URI: "x://warm"}); err != nil {
		t.Fatal(err)
	}
	sb.await(ctx, "x://warm", "warming up")
	once := func(what string) {
		t.Helper()
		touch("x://r")
		select {
		case got := <-ch:
			if got != "x://r" {
				t.Fatalf("%s: update of %q, want x://r", what, got)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the one update sent after the subscribe was answered did not arrive", what)
		}
	}
	if err := c.Subscribe(ctx, &mcp.SubscribeParams{URI: "x://r"}); err != nil {
		t.Fatal(err)
	}
	once("first subscribe")
	// The caller, the last subscriber, leaves and comes back at once (in
	// the relay, without the round trips of a caller in between): the
	// upstream stream is cancelled, and a new one opened right after.
	// The caller stays subscribed on the front all along.
	cl := callerFor(t, r, c)
	for round := range 3 {
		if err := r.unsubscribe(ctx, cl, "x://r", nil); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := r.subscribe(ctx, cl, "x://r", nil); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > upsub.DefaultSettle+upsub.DefaultAckWait {
			t.Fatalf("round %d: the subscribe took %v", round, d)
		}
		once(fmt.Sprintf("subscribed again, round %d", round))
	}
}

// TestListenRefused: a 2026-07-28 server that refuses a subscription (it
// sends no acknowledgement) or offers none gets the caller a specific
// error, and the caller is not left registered.
func TestListenRefused(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "picky", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			if req.Params.URI == "x://no" {
				return errors.New("not this one")
			}
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	none := mcp.NewServer(&mcp.Implementation{Name: "none", Version: "1"}, nil)
	read := func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "x"}}}, nil
	}
	for _, u := range []string{"x://no", "x://yes"} {
		s.AddResource(&mcp.Resource{URI: u, Name: u}, read)
	}
	none.AddResource(&mcp.Resource{URI: "y://r", Name: "r"}, read)
	r := openRelay(t, []toolset.Server{remote("picky", serveStateless(t, s)), remote("none", serveStateless(t, none))}, modern(), nil)
	ctx := ctxT(t)
	c := &Caller{id: "c"}

	err := r.subscribe(ctx, c, "y://r", nil)
	if err == nil || !strings.Contains(err.Error(), `server "none" does not offer resource subscriptions`) {
		t.Fatalf("subscribe on a server without subscriptions: %v", err)
	}
	start := time.Now()
	err = r.subscribe(ctx, c, "x://no", nil)
	if err == nil || !strings.Contains(err.Error(), `server "picky" did not acknowledge the subscription to x://no`) {
		t.Fatalf("a refused subscribe: %v", err)
	}
	if d := time.Since(start); d < upsub.DefaultAckWait {
		t.Fatalf("the refusal was reported after %v, before the %v wait", d, upsub.DefaultAckWait)
	}
	r.mu.Lock()
	n := len(r.subs)
	r.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d URIs have subscribers after two failed subscribes", n)
	}
	if err := r.subscribe(ctx, c, "x://yes", nil); err != nil {
		t.Fatalf("subscribe after a refusal: %v", err)
	}
	if err := r.unsubscribe(ctx, c, "x://yes", nil); err != nil {
		t.Fatal(err)
	}
	r.release(c.id)
	if n := r.leftovers(); n != 0 {
		t.Fatalf("%d entries left after the caller was released", n)
	}
}

// TestSubscriptionsSurviveRestart: when a stdio server dies and is started
// again, the relay renews its subscriptions on the new session
// (SessionHooks.Reconnected), at either revision.
func TestSubscriptionsSurviveRestart(t *testing.T) {
	for _, proto := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(proto, func(t *testing.T) {
			pidf := filepath.Join(t.TempDir(), "pid")
			r := openRelay(t, []toolset.Server{stdio("a", "-resource", "x://r", "-pidfile", pidf)}, &toolset.Options{ProtocolVersion: proto}, nil)
			ctx := ctxT(t)
			sb := newSubscriber(t, r)
			if err := sb.c.Subscribe(ctx, &mcp.SubscribeParams{URI: "x://r"}); err != nil {
				t.Fatal(err)
			}
			sb.await(ctx, "x://r", "before the restart")
			pid := readPid(t, pidf)
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			sb.await(ctx, "x://r", "after the restart")
			if now := readPid(t, pidf); now == pid {
				t.Fatalf("the update came from the killed process %d", pid)
			}
		})
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	return pid
}
