package server

//lint:file-ignore SA1019 roots (deprecated by SEP-2577, still in 2025-11-25) are among the requests a replica sends its caller.

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
)

// A replica that does not hold the caller's standalone stream sends the
// caller a request outside any request of the caller's (as a gateway does
// for an upstream that elicits or lists roots of its own accord): the
// holder of the stream asks it, the caller's answer comes back to the
// replica that asked, and a refusal comes back as the caller's error.
// Before, the request failed at once ("write to closed stream").
func TestRequestOutsideACallReachesTheStreamsReplica(t *testing.T) {
	c := newPGSubsCluster(t, 2)
	var elicited atomic.Int64
	cl := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicited.Add(1)
			if req.Params.Message == "refuse" {
				return nil, &jsonrpc.Error{Code: 4242, Message: "no, thanks"}
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "re:" + req.Params.Message}}, nil
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "local", Role: "assistant", Content: &mcp.TextContent{Text: "sampled " + req.Params.SystemPrompt}}, nil
		},
	})
	cl.AddRoots(&mcp.Root{URI: "file:///work", Name: "work"})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cs, err := cl.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: c.proxy.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token: "tok-alice", base: tr}, Timeout: 0}, MaxRetries: 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	holder := c.holder(t, cs.ID())
	var other *replica
	for _, r := range c.replicas {
		if r != holder {
			other = r
		}
	}
	// The other replica serves the session too (a copy rebuilt there).
	for other.srv.shared.Load().lookup(cs.ID()) == nil {
		if err := cs.Ping(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
	ss := other.srv.shared.Load().lookup(cs.ID()).ss
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	res, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: "outside", RequestedSchema: map[string]any{"type": "object",
		"properties": map[string]any{"answer": map[string]any{"type": "string"}}}})
	if err != nil {
		t.Fatalf("an elicitation outside a call, from the replica without the stream: %v", err)
	}
	if res.Action != "accept" || res.Content["answer"] != "re:outside" {
		t.Fatalf("the answer: %+v", res)
	}
	roots, err := ss.ListRoots(ctx, nil)
	if err != nil || len(roots.Roots) != 1 || roots.Roots[0].URI != "file:///work" {
		t.Fatalf("roots outside a call: %+v, %v", roots, err)
	}
	msg, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{SystemPrompt: "aloud", MaxTokens: 10,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
	if err != nil || msg.Model != "local" || msg.Content.(*mcp.TextContent).Text != "sampled aloud" {
		t.Fatalf("sampling outside a call: %+v, %v", msg, err)
	}
	_, err = ss.Elicit(ctx, &mcp.ElicitParams{Message: "refuse", RequestedSchema: map[string]any{"type": "object"}})
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) || wire.Code != 4242 || !strings.Contains(wire.Message, "no, thanks") {
		t.Fatalf("a refusal: %v, want the caller's error 4242", err)
	}
	if n := elicited.Load(); n != 2 {
		t.Fatalf("the caller was asked %d times, want 2 (each request once)", n)
	}
	if n := other.srv.shared.Load().asked.Load(); n != 4 {
		t.Fatalf("%d requests passed on to the holder, want 4", n)
	}
}

// cutBus is a replica's PostgreSQL store whose messages out can be cut,
// as a replica that crashed or lost its network goes silent: what it
// sends then is lost, without an error.
type cutBus struct {
	*postgres.Store
	cut atomic.Bool
}

func (b *cutBus) Send(ctx context.Context, box string, msg []byte) error {
	if b.cut.Load() {
		return nil
	}
	return b.Store.Send(ctx, box, msg)
}

// A request passed on to the replica holding the caller's stream fails
// soon when that replica goes silent, instead of after askWait (5
// minutes): while the caller takes its time the holder's heartbeats keep
// the request waiting past the first-word and quiet windows; once they
// stop, it fails with errHolderGone within the quiet window; a holder
// silent from the start fails it within the first-word window. Heard
// again, the next request is answered.
func TestRequestPassedOnToAHolderGoneSilent(t *testing.T) {
	dsn := pgtest.Schema(t, "sessask", "requests passed on between replicas through PostgreSQL")
	var buses []*cutBus
	c := newClusterStore(t, 2, nil, func() store.Store {
		st, err := postgres.Open(t.Context(), dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		b := &cutBus{Store: st}
		buses = append(buses, b)
		return b
	})
	entered, release := make(chan struct{}, 4), make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	cl := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Message == "slow" {
				entered <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "re:" + req.Params.Message}}, nil
		},
	})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cs, err := cl.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: c.proxy.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token: "tok-alice", base: tr}}, MaxRetries: 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	t.Cleanup(free) // before the session closes: the caller's slow answer ends
	holder := c.holder(t, cs.ID())
	var other *replica
	var holderBus *cutBus
	for i, r := range c.replicas {
		if r != holder {
			other = r
		} else {
			holderBus = buses[i]
		}
	}
	for other.srv.shared.Load().lookup(cs.ID()) == nil {
		if err := cs.Ping(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
	timing := &askTiming{first: 2 * time.Second, beat: 200 * time.Millisecond, quiet: 2 * time.Second}
	holder.srv.shared.Load().askTimes.Store(timing)
	other.srv.shared.Load().askTimes.Store(timing)
	ss := other.srv.shared.Load().lookup(cs.ID()).ss
	elicit := func(msg string) (*mcp.ElicitResult, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		return ss.Elicit(ctx, &mcp.ElicitParams{Message: msg, RequestedSchema: map[string]any{"type": "object",
			"properties": map[string]any{"answer": map[string]any{"type": "string"}}}})
	}

	// The caller takes its time: the heartbeats keep the request waiting.
	type result struct {
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	go func() {
		start := time.Now()
		_, err := elicit("slow")
		done <- result{err, time.Since(start)}
	}()
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the caller was never asked")
	}
	select {
	case r := <-done:
		t.Fatalf("the request ended while the holder was still asking: %v", r.err)
	case <-time.After(timing.first + timing.quiet):
	}
	// The holder goes silent: the request fails within the quiet window.
	holderBus.cut.Store(true)
	cutAt := time.Now()
	select {
	case r := <-done:
		if !errors.Is(r.err, errHolderGone) || !strings.Contains(r.err.Error(), "went quiet") {
			t.Fatalf("after the holder went silent: %v, want errHolderGone (went quiet)", r.err)
		}
		if since := time.Since(cutAt); since > timing.quiet+5*time.Second {
			t.Fatalf("failed %s after the holder went silent, want about %s", since, timing.quiet)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the request still waits for a holder gone silent")
	}
	// The caller answers at last: the holder's request ends (its reply is
	// lost, as a silent replica's), and nothing waits when the session
	// closes.
	free()

	// Silent from the start: fails within the first-word window.
	start := time.Now()
	_, err = elicit("quick")
	if !errors.Is(err, errHolderGone) || !strings.Contains(err.Error(), "did not take the request") {
		t.Fatalf("a holder silent from the start: %v, want errHolderGone (did not take it)", err)
	}
	if took := time.Since(start); took > timing.first+5*time.Second {
		t.Fatalf("took %s, want about %s", took, timing.first)
	}

	// Heard again: answered.
	holderBus.cut.Store(false)
	res, err := elicit("again")
	if err != nil || res.Content["answer"] != "re:again" {
		t.Fatalf("after the holder is heard again: %+v, %v", res, err)
	}
}
