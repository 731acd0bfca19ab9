package server

//lint:file-ignore SA1019 a session's log level (deprecated by SEP-2577, still in 2025-11-25) is part of what every replica follows.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
)

// newPGCluster is n replicas on one PostgreSQL schema, each with a pool of
// its own, behind the round-robin proxy.
func newPGCluster(t *testing.T, n int) *cluster {
	dsn := pgtest.Schema(t, "sessbus", "the replicas' messages through PostgreSQL")
	return newClusterStore(t, n, nil, func() store.Store {
		st, err := postgres.Open(t.Context(), dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}

// asker connects through the proxy with a client that answers each
// elicitation with the message it was asked (the call's nonce).
func asker(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	cl := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "re:" + req.Params.Message}}, nil
		},
	})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cs, err := cl.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearer{token: "tok-alice", base: tr}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func ask(t *testing.T, cs *mcp.ClientSession, nonce string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"nonce": nonce}})
	if err != nil {
		return err
	}
	if m := structured(t, res); m["action"] != "accept" || m["answer"] != "re:"+nonce {
		return fmt.Errorf("call %s answered %v", nonce, m)
	}
	return nil
}

// A replica's elicitation is answered by its caller through whichever
// replica the load balancer picks: the answer reaches the replica that
// asked, and the call goes on there.
func TestElicitationAnsweredThroughAnotherReplica(t *testing.T) {
	c := newPGCluster(t, 2)
	cs := asker(t, c.proxy.URL+"/mcp")
	for i := range 6 {
		if err := ask(t, cs, fmt.Sprintf("n%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var forwarded int64
	for _, r := range c.replicas {
		forwarded += r.srv.shared.Load().forwarded.Load()
	}
	if forwarded == 0 {
		t.Fatal("no answer went through another replica: the proxy did not spread the session")
	}
}

// Two replicas elicit at once in one session: each numbers its requests
// from 1, and each answer still reaches the call that asked.
func TestTwoReplicasElicitAtOnce(t *testing.T) {
	c := newPGCluster(t, 2)
	cs := asker(t, c.proxy.URL+"/mcp")
	for round := range 3 {
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() { errs[i] = ask(t, cs, fmt.Sprintf("r%d-c%d", round, i)) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, r := range c.replicas {
		if r.served.Load() == 0 {
			t.Errorf("replica %d served nothing", i)
		}
	}
}

// An answer naming a replica is refused for another user's token: only
// the session's caller answers its requests.
func TestForwardedAnswerNeedsTheSessionsUser(t *testing.T) {
	c := newPGCluster(t, 2)
	cs := asker(t, c.proxy.URL+"/mcp")
	other := c.replicas[0].srv.shared.Load()
	req, _ := http.NewRequest(http.MethodPost, c.replicas[1].ts.URL+"/mcp",
		strings.NewReader(fmt.Sprintf(`{"jsonrpc":"2.0","id":"gh-%s-1","result":{"action":"accept","content":{"answer":"forged"}}}`, other.tag)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Authorization", "Bearer tok-mallory")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("mallory's answer: %d, want 403", resp.StatusCode)
	}
	if n := c.replicas[1].srv.shared.Load().forwarded.Load(); n != 0 {
		t.Fatalf("%d answers forwarded for mallory", n)
	}
}

// A caller's cancellation reaches the call on whichever replica runs it,
// wherever the load balancer sends the notification.
func TestCancellationReachesTheRunningReplica(t *testing.T) {
	c := newPGCluster(t, 2)
	cs := asker(t, c.proxy.URL+"/mcp")
	for i := range 4 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "block", Arguments: map[string]any{}})
			done <- err
		}()
		for deadline := time.Now().Add(10 * time.Second); c.eff.get("blocking") <= i; {
			if time.Now().After(deadline) {
				t.Fatal("the call never started")
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		<-done
		for deadline := time.Now().Add(10 * time.Second); c.eff.get("cancelled") <= i; {
			if time.Now().After(deadline) {
				t.Fatalf("call %d: the cancellation never reached the replica running it", i)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// A log level set through one replica holds at once on another that
// already serves a copy of the session, not at its next check (an hour
// here): the debug messages of calls it runs right after reach the
// caller. Without the announcement the copy filters them for a check.
func TestLogLevelReachesEveryReplicaAtOnce(t *testing.T) {
	c := newPGCluster(t, 2)
	for _, r := range c.replicas {
		r.srv.shared.Load().check = time.Hour
	}
	cs, logged := shoutListener(t, c.proxy.URL+"/mcp")
	// Both replicas serve the session before the level is set.
	for range 4 {
		callTool(t, cs, "shout", map[string]any{}, nil)
	}
	for i, r := range c.replicas {
		if r.srv.shared.Load().lookup(cs.ID()) == nil {
			t.Fatalf("replica %d holds no copy of the session", i)
		}
	}
	if n := logged.Load(); n != 0 {
		t.Fatalf("%d debug messages before the level was set", n)
	}
	if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	// The announcement is asynchronous: wait until each copy has the
	// level (bounded), then call through both.
	for deadline := time.Now().Add(5 * time.Second); ; {
		behind := 0
		for _, r := range c.replicas {
			h := r.srv.shared.Load().lookup(cs.ID())
			h.mu.Lock()
			if h.saved.LogLevel != "debug" {
				behind++
			}
			h.mu.Unlock()
		}
		if behind == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d replica(s) still without the level after 5 s", behind)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for range 6 {
		callTool(t, cs, "shout", map[string]any{}, nil)
	}
	for deadline := time.Now().Add(2 * time.Second); logged.Load() < 6 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := logged.Load(); n != 6 {
		t.Errorf("%d of 6 debug messages reached the caller across the replicas", n)
	}
}
