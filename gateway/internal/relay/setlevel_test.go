package relay

//lint:file-ignore SA1019 sampling, roots and logging are deprecated as of 2026-07-28 and still served to callers of the revisions that have them

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// TestSetLevelSkipsSubjectServers: logging/setLevel opens a session of the
// caller's own to a server whose content is the gateway's (a), and none to
// a server whose content is each subject's own (b): such a session would
// carry the gateway's credentials for the caller (the "service-account
// session to user-mode servers" of issue 38). Counted on the servers.
func TestSetLevelSkipsSubjectServers(t *testing.T) {
	a, b := newRoutedServer(t, "a", "a://x"), newRoutedServer(t, "b", "b://x")
	own := newRoutedServer(t, "own", "b://x")
	sc := &ownContent{url: own.url}
	t.Cleanup(func() {
		if sc.sess != nil {
			_ = sc.sess.Close()
		}
	})
	r := openRelay(t, []toolset.Server{a.server("a"), b.server("b")}, nil, &Options{
		Subjects: sc,
		Subject:  func(context.Context, mcp.Request, bool) (string, bool) { return "alice", true },
	})
	_, url := front(t, r, false)
	cs := dial(t, url, "2025-11-25", nil)
	ctx := ctxT(t)
	if _, err := cs.ListResources(ctx, nil); err != nil { // both shared sessions up
		t.Fatal(err)
	}
	sessions := func(rs *routedServer) int {
		n := 0
		for range rs.srv.Sessions() {
			n++
		}
		return n
	}
	beforeA, beforeB := sessions(a), sessions(b)
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if got := sessions(a); got != beforeA+1 {
		t.Errorf("a has %d sessions after setLevel, want %d (the caller's own)", got, beforeA+1)
	}
	if got := sessions(b); got != beforeB {
		t.Errorf("b has %d sessions after setLevel, want %d: a session was opened for the caller to a server whose content is each subject's own", got, beforeB)
	}
	// The caller's reads of b still go through its subject's session.
	if res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "b://x"}); err != nil || res.Contents[0].Text != "own:b://x" {
		t.Fatalf("b's read: %v %v", res, err)
	}
	if got := sessions(b); got != beforeB {
		t.Errorf("b has %d sessions after a read, want %d", got, beforeB)
	}
}

// TestOwnSubscriptionSurvivesRestart: a caller with a log level holds its
// subscription on its own upstream session; the server restarts (every
// session gone); the caller's next call re-establishes its own session,
// and the subscription is renewed there: the server's next update of the
// URI reaches the caller.
func TestOwnSubscriptionSurvivesRestart(t *testing.T) {
	fx := startHTTP(t, "127.0.0.1:0", "-tools", "echo", "-resource", "x://r")
	r := openRelay(t, []toolset.Server{remote("a", fx.URL(""))}, nil, nil)
	sb := newSubscriber(t, r)
	ctx := ctxT(t)
	if err := sb.c.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	if err := sb.c.Subscribe(ctx, &mcp.SubscribeParams{URI: "x://r"}); err != nil {
		t.Fatal(err)
	}
	caller := callerFor(t, r, sb.c)
	r.mu.Lock()
	st := r.callers[caller.id]
	r.mu.Unlock()
	held := func() *mcp.ClientSession {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.subs["x://r"].sess
	}
	first := held()
	if first == nil {
		t.Fatal("the subscription is not held on the caller's own session")
	}
	sb.await(ctx, "x://r", "before the restart")
	fx.Restart()
	tg, err := r.Toolset().Target(ctx, "a__echo")
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.CallTool(ctx, tg, Call{Args: []byte(`{"text":"hi"}`), Caller: caller})
	if err != nil || res.IsError {
		t.Fatalf("the caller's call after the restart: %v %+v", err, res)
	}
	if s := held(); s == nil || s == first {
		t.Fatalf("the subscription is held on %p (before: %p), want the caller's new session", s, first)
	}
	sb.await(ctx, "x://r", "after the restart")
}
