package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/testserver"
)

// gwReplica is one gateway of several on one store, on its own listener.
type gwReplica struct {
	name string
	hs   *httptest.Server
	g    *Gateway
	once sync.Once
}

// kill stops the replica the hard way for its callers: connections cut,
// listener closed, gateway closed.
func (r *gwReplica) kill() {
	r.once.Do(func() {
		r.hs.CloseClientConnections()
		r.hs.Close()
		_ = r.g.Close()
	})
}

// subsReplica serves a gateway on its own handle of the store at dsn, in
// front of the upstream at upURL (no prefix), for alice and bob.
func subsReplica(t *testing.T, dsn, name, upURL string) *gwReplica {
	t.Helper()
	dir := t.TempDir()
	yml := fmt.Sprintf(`listen: 127.0.0.1:0
auth:
  tokens:
    - {sha256: %s, subject: alice}
    - {sha256: %s, subject: bob}
servers:
  up:
    type: streamable-http
    url: %s
    prefix: ""
`, hashOf("alice-token"), hashOf("bob-token"), upURL)
	cfg, err := ParseConfig([]byte(yml), filepath.Join(dir, "gatehouse.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := New(ctx, cfg, &Options{Store: openTestStore(t, dsn), Instance: name})
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Handler()
	if err != nil {
		t.Fatal(err)
	}
	r := &gwReplica{name: name, hs: httptest.NewServer(h), g: g}
	t.Cleanup(r.kill)
	return r
}

// rrProxy sends each request to the next live replica (per request, not
// per connection), and records which replica opened each session's
// standalone stream last.
type rrProxy struct {
	hs     *httptest.Server
	mu     sync.Mutex
	live   []*gwReplica
	next   int
	stream map[string]*gwReplica // session → the replica its GET stream opened on
}

func newRRProxy(t *testing.T, replicas ...*gwReplica) *rrProxy {
	p := &rrProxy{live: replicas, stream: map[string]*gwReplica{}}
	p.hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The body is read before it is forwarded, as a load balancer
		// does: streamed, the proxy's transport may still be reading its
		// end when the replica's answer starts, and Go's HTTP/1 server
		// then closes it, cutting the answer's stream (a flake under load).
		if r.Body != nil {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		p.mu.Lock()
		if len(p.live) == 0 {
			p.mu.Unlock()
			http.Error(w, "no replica", http.StatusBadGateway)
			return
		}
		g := p.live[p.next%len(p.live)]
		p.next++
		p.mu.Unlock()
		u, _ := url.Parse(g.hs.URL)
		rp := httputil.NewSingleHostReverseProxy(u)
		rp.FlushInterval = -1
		rp.ServeHTTP(&openedWriter{ResponseWriter: w, opened: func(code int) {
			if r.Method == http.MethodGet && code == http.StatusOK {
				p.mu.Lock()
				p.stream[r.Header.Get("Mcp-Session-Id")] = g
				p.mu.Unlock()
			}
		}}, r)
	}))
	t.Cleanup(p.hs.Close)
	return p
}

func (p *rrProxy) url() string { return p.hs.URL + "/mcp" }

// nextIs is the replica the next request goes to.
func (p *rrProxy) nextIs() *gwReplica {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.live[p.next%len(p.live)]
}

// remove takes g out of the table.
func (p *rrProxy) remove(g *gwReplica) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.live {
		if x == g {
			p.live = append(p.live[:i:i], p.live[i+1:]...)
		}
	}
}

// add puts g in the table.
func (p *rrProxy) add(g *gwReplica) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.live = append(p.live, g)
}

// holder waits for a live replica to hold sid's stream (other than not)
// and returns it.
func (p *rrProxy) holder(t *testing.T, sid string, not *gwReplica) *gwReplica {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		p.mu.Lock()
		g := p.stream[sid]
		p.mu.Unlock()
		if g != nil && g != not {
			return g
		}
	}
	t.Fatal("the caller's stream did not open")
	return nil
}

// avoid pings through cs until the next request goes to a replica other
// than g, and returns that one.
func (p *rrProxy) avoid(t *testing.T, cs *mcp.ClientSession, g *gwReplica) *gwReplica {
	t.Helper()
	for p.nextIs() == g {
		if err := cs.Ping(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
	return p.nextIs()
}

type openedWriter struct {
	http.ResponseWriter
	opened func(int)
	wrote  bool
}

func (o *openedWriter) WriteHeader(code int) {
	if !o.wrote {
		o.wrote = true
		o.opened(code)
	}
	o.ResponseWriter.WriteHeader(code)
}

func (o *openedWriter) Flush() {
	if f, ok := o.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// TestSubscriptionAcrossReplicas: three gateways on one PostgreSQL behind
// a proxy that picks a replica per request, one real upstream publishing
// a resource. A caller whose standalone stream one replica holds
// subscribes through another; each change of the resource (the
// upstream's touch tool, called through any replica) reaches it exactly
// once; the replica that served the subscribe is killed and changes still
// reach it; a fourth replica comes, the replica holding its stream is
// killed, the caller opens its stream on another, and changes still
// reach it once. Another
// caller's session, which subscribed to nothing, hears none.
func TestSubscriptionAcrossReplicas(t *testing.T) {
	dsn := pgtest.Schema(t, "subrep", "subscriptions across gateway replicas on PostgreSQL")
	const doc = "fx://doc"
	up := testserver.New(testserver.Config{Resources: []string{doc}})
	ups := httptest.NewServer(up.Handler(false, nil))
	t.Cleanup(ups.Close)
	replicas := []*gwReplica{
		subsReplica(t, dsn, "replica-a", ups.URL),
		subsReplica(t, dsn, "replica-b", ups.URL),
		subsReplica(t, dsn, "replica-c", ups.URL),
	}
	p := newRRProxy(t, replicas...)

	var updates, overheard atomic.Int64
	alice := sessionWith(t, p.url(), "alice-token", &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		if req.Params.URI == doc {
			updates.Add(1)
		}
	}})
	bob := sessionWith(t, p.url(), "bob-token", &mcp.ClientOptions{ResourceUpdatedHandler: func(context.Context, *mcp.ResourceUpdatedNotificationRequest) {
		overheard.Add(1)
	}})
	holder := p.holder(t, alice.ID(), nil)
	p.holder(t, bob.ID(), nil)

	served := p.avoid(t, alice, holder)
	if err := alice.Subscribe(t.Context(), &mcp.SubscribeParams{URI: doc}); err != nil {
		t.Fatal(err)
	}
	touch := func(want int64) {
		t.Helper()
		res, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{"uri": doc}})
		if err != nil || res.IsError {
			t.Fatalf("touch: %v %+v", err, res)
		}
		for deadline := time.Now().Add(5 * time.Second); updates.Load() < want && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond) // a second copy would come now
		if n := updates.Load(); n != want {
			t.Fatalf("%d updates reached the caller, want %d", n, want)
		}
	}
	for i := range 3 {
		touch(int64(i + 1))
	}

	// The replica that served the subscribe goes.
	p.remove(served)
	served.kill()
	for i := range 2 {
		touch(int64(4 + i))
	}

	// A replica that never saw the session comes; the one holding the
	// caller's stream goes: the caller opens it on another, which makes
	// the subscription from the row.
	p.add(subsReplica(t, dsn, "replica-d", ups.URL))
	p.remove(holder)
	holder.kill()
	p.holder(t, alice.ID(), holder)
	for i := range 2 {
		touch(int64(6 + i))
	}
	if n := overheard.Load(); n != 0 {
		t.Fatalf("bob's session, subscribed to nothing, heard %d updates", n)
	}
}
