package server

//lint:file-ignore SA1019 a caller's log messages (deprecated by SEP-2577, still in 2025-11-25) are among what reaches its stream.

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
)

const docURI = "test://doc"

// withDoc has every replica publish docURI with subscriptions, as a
// gateway publishes its upstreams' resources: an update of it reaches the
// sessions subscribed on that replica (published runs it on every live
// replica, as each replica hears its upstream).
func withDoc(o *Options) {
	o.ServerOptions = &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	}
	o.Setup = func(m *mcp.Server, _ bool) {
		m.AddResource(&mcp.Resource{URI: docURI, Name: "doc"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "doc"}}}, nil
		})
	}
}

// published announces an update of docURI on every live replica.
func (c *cluster) published(t *testing.T) {
	t.Helper()
	for _, r := range c.replicas {
		if _, isDown := c.down.Load(r); isDown {
			continue
		}
		if err := r.srv.MCPServer().ResourceUpdated(t.Context(), &mcp.ResourceUpdatedNotificationParams{URI: docURI}); err != nil {
			t.Fatal(err)
		}
	}
}

// listener is a caller that keeps its standalone stream open (the go-sdk
// client's default) and counts the updates and log messages it hears.
type listener struct {
	cs              *mcp.ClientSession
	updates, murmur atomic.Int64
}

func listen(t *testing.T, url, token string) *listener {
	t.Helper()
	l := &listener{}
	cl := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if req.Params.URI == docURI {
				l.updates.Add(1)
			}
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			if req.Params.Logger == "murmur" {
				l.murmur.Add(1)
			}
		},
	})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cs, err := cl.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearer{token: token, base: tr}}, MaxRetries: 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	l.cs = cs
	return l
}

// holder waits until a live replica holds the standalone stream of sid
// and returns it.
func (c *cluster) holder(t *testing.T, sid string) *replica {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, r := range c.replicas {
			if _, isDown := c.down.Load(r); isDown {
				continue
			}
			if h := r.srv.shared.Load().lookup(sid); h != nil && h.streams.Load() > 0 {
				return r
			}
		}
	}
	t.Fatal("no replica holds the caller's stream")
	return nil
}

// madeOn reports whether r's copy of session sid is subscribed to docURI.
func madeOn(r *replica, sid string) bool {
	h := r.srv.shared.Load().lookup(sid)
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.subs[docURI]
}

// nextIs reports the replica the proxy sends the next request to.
func (c *cluster) nextIs() *replica {
	for i := int64(1); i <= int64(len(c.replicas)); i++ {
		rp := c.replicas[int(c.next.Load()+i)%len(c.replicas)]
		if _, isDown := c.down.Load(rp); !isDown {
			return rp
		}
	}
	return nil
}

// avoid sends pings through the proxy until its next request goes to a
// replica other than r.
func (c *cluster) avoid(t *testing.T, cs *mcp.ClientSession, r *replica) {
	t.Helper()
	for c.nextIs() == r {
		if err := cs.Ping(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
}

// settle waits until n reaches want, then a little longer for any more,
// and returns n.
func settle(n *atomic.Int64, want int64) int64 {
	for deadline := time.Now().Add(5 * time.Second); n.Load() < want && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // a duplicate would come now
	return n.Load()
}

// row reads the replicated part of session sid's row through a store of
// the cluster's.
func (c *cluster) row(t *testing.T, sid string) replicated {
	t.Helper()
	x := c.replicas[len(c.replicas)-1].srv.shared.Load()
	s, ok, err := x.st.Session(t.Context(), sid, time.Now())
	if err != nil || !ok {
		t.Fatalf("the session's row: %v, %v", ok, err)
	}
	var saved savedSession
	if err := json.Unmarshal(s.State, &saved); err != nil {
		t.Fatal(err)
	}
	return saved.replicated
}

func newPGSubsCluster(t *testing.T, n int) *cluster {
	dsn := pgtest.Schema(t, "sesssub", "subscriptions across replicas through PostgreSQL")
	return newClusterStore(t, n, withDoc, func() store.Store {
		st, err := postgres.Open(t.Context(), dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}

// A caller whose standalone stream one replica holds subscribes through
// another: the subscription is recorded in the session's row, the holder
// makes it on its own copy before the subscribe is answered, and each
// update reaches the caller once (the replica that served the subscribe
// drops its own: it holds no stream). The replica that served the
// subscribe goes and updates still arrive; the holder goes, the caller
// opens its stream on another replica, which makes the subscription
// again from the row; an unsubscribe through yet another replica ends
// them. A bystander session hears none of it.
func TestSubscriptionFollowsTheStream(t *testing.T) {
	c := newPGSubsCluster(t, 4)
	url := c.proxy.URL + "/mcp"
	alice := listen(t, url, "tok-alice")
	sid := alice.cs.ID()
	bystander := listen(t, url, "tok-bob")
	holder := c.holder(t, sid)
	c.holder(t, bystander.cs.ID())

	c.avoid(t, alice.cs, holder)
	served := c.nextIs()
	if err := alice.cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: docURI}); err != nil {
		t.Fatal(err)
	}
	if !madeOn(served, sid) {
		t.Fatal("the subscribe was not served where the proxy sent it")
	}
	// Answered once the holder made it: no wait here.
	if !madeOn(holder, sid) {
		t.Fatal("the subscribe was answered before the replica holding the stream made it")
	}
	if row := c.row(t, sid); !slices.Equal(row.Subscriptions, []string{docURI}) || row.Stream != holder.srv.shared.Load().tag {
		t.Fatalf("the row records %+v", row)
	}
	c.published(t)
	if n := settle(&alice.updates, 1); n != 1 {
		t.Fatalf("%d updates reached the caller, want 1", n)
	}

	// The replica that served the subscribe goes.
	c.down.Store(served, true)
	served.kill()
	c.published(t)
	if n := settle(&alice.updates, 2); n != 2 {
		t.Fatalf("after the subscribe's replica went: %d updates, want 2", n)
	}

	// The holder goes: the caller opens its stream again elsewhere.
	c.down.Store(holder, true)
	holder.kill()
	next := c.holder(t, sid)
	// It makes them as the stream opens, before its first event.
	for deadline := time.Now().Add(5 * time.Second); !madeOn(next, sid) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if !madeOn(next, sid) {
		t.Fatal("the new holder of the stream did not make the row's subscription")
	}
	c.published(t)
	if n := settle(&alice.updates, 3); n != 3 {
		for i, r := range c.replicas {
			_, isDown := c.down.Load(r)
			h := r.srv.shared.Load().lookup(sid)
			if h != nil {
				t.Logf("replica %d down=%v next=%v streams=%d made=%v", i, isDown, r == next, h.streams.Load(), madeOn(r, sid))
			}
		}
		t.Fatalf("after the holder went: %d updates, want 3", n)
	}

	// Unsubscribed through a replica that does not hold the stream.
	c.avoid(t, alice.cs, next)
	if err := alice.cs.Unsubscribe(t.Context(), &mcp.UnsubscribeParams{URI: docURI}); err != nil {
		t.Fatal(err)
	}
	if row := c.row(t, sid); len(row.Subscriptions) != 0 {
		t.Fatalf("after the unsubscribe the row records %v", row.Subscriptions)
	}
	c.published(t)
	if n := settle(&alice.updates, 3); n != 3 {
		t.Fatalf("after the unsubscribe: %d updates, want 3", n)
	}
	if n := bystander.updates.Load(); n != 0 {
		t.Fatalf("the bystander heard %d updates", n)
	}
}

// A log message not tied to a request, logged by a replica that does not
// hold the caller's stream, reaches the caller once through the replica
// that does; one too large for a NOTIFY is dropped there and counted.
func TestNotificationReachesTheStreamsReplica(t *testing.T) {
	c := newPGSubsCluster(t, 3)
	alice := listen(t, c.proxy.URL+"/mcp", "tok-alice")
	holder := c.holder(t, alice.cs.ID())
	c.avoid(t, alice.cs, holder)
	if err := alice.cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // past the replicas' check: the level holds everywhere
	var onHolder int64
	count := func(size int) {
		before := holder.served.Load()
		callTool(t, alice.cs, "murmur", map[string]any{"size": size}, nil)
		if holder.served.Load() > before {
			onHolder++
		}
	}
	for range 6 {
		count(10)
	}
	if n := settle(&alice.murmur, 6); n != 6 {
		for i, r := range c.replicas {
			x := r.srv.shared.Load()
			h := x.lookup(alice.cs.ID())
			var st string
			var lv mcp.LoggingLevel
			if h != nil {
				h.mu.Lock()
				st, lv = h.saved.Stream, h.saved.LogLevel
				h.mu.Unlock()
			}
			t.Logf("replica %d (%s, holder %v): notes %d, stream %q, level %q", i, x.tag, r == holder, x.notes.Load(), st, lv)
		}
		t.Fatalf("%d of 6 log messages reached the caller (%d logged on the holder)", n, onHolder)
	}
	var notes, dropped int64
	for _, r := range c.replicas {
		notes += r.srv.shared.Load().notes.Load()
	}
	if notes != 6-onHolder || notes == 0 {
		t.Fatalf("%d messages passed on, %d logged on the holder", notes, onHolder)
	}

	onHolder = 0
	for range 3 {
		count(store.MaxMessage)
	}
	got := settle(&alice.murmur, 6+onHolder) - 6
	for _, r := range c.replicas {
		dropped += r.srv.shared.Load().notesDropped.Load()
	}
	if got != onHolder || dropped != 3-onHolder || dropped == 0 {
		t.Fatalf("large messages: %d reached the caller (%d logged on the holder), %d dropped", got, onHolder, dropped)
	}
}

// Without a Messenger (SQLite) a subscription made through a replica that
// does not hold the caller's stream is made by the one that does at its
// next check, and reaches the caller once.
func TestSubscriptionFollowedAtCheck(t *testing.T) {
	c := newClusterOpts(t, 3, withDoc)
	alice := listen(t, c.proxy.URL+"/mcp", "tok-alice")
	sid := alice.cs.ID()
	holder := c.holder(t, sid)
	c.avoid(t, alice.cs, holder)
	if err := alice.cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: docURI}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond) // past the holder's check
	if code, _ := listOn(t, holder.ts.URL+"/mcp", sid, "tok-alice"); code != http.StatusOK {
		t.Fatalf("a request to the holder: %d", code)
	}
	if !madeOn(holder, sid) {
		t.Fatal("the holder did not make the subscription at its check")
	}
	c.published(t)
	if n := settle(&alice.updates, 1); n != 1 {
		t.Fatalf("%d updates reached the caller, want 1", n)
	}
}
