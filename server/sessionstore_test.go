package server

//lint:file-ignore SA1019 a session's log level (deprecated by SEP-2577, still in 2025-11-25) is part of what a replica rebuilds.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// replica is one of several servers sharing a store: its own go-sdk
// server, its own handle on the SQLite file, its own listener on
// 127.0.0.1.
type replica struct {
	srv    *Server
	ts     *httptest.Server
	served atomic.Int64 // requests it answered
}

// kill stops the replica the hard way for its callers: connections cut,
// listener closed, sessions gone.
func (r *replica) kill() {
	r.ts.CloseClientConnections()
	r.ts.Close()
	r.srv.Close()
}

// cluster is replicas behind a proxy that sends each request to the next
// live replica (round robin per request, not per connection), as a load
// balancer without sticky sessions does.
type cluster struct {
	t        testing.TB
	path     string // the SQLite file
	eff      *effects
	replicas []*replica
	next     atomic.Int64
	down     sync.Map // *replica → true
	proxy    *httptest.Server
	mod      func(*Options)
	// open opens a replica's handle on the store (nil: the SQLite file
	// at path).
	open func() store.Store
}

func newCluster(t *testing.T, n int) *cluster { return newClusterOpts(t, n, nil) }

// newBenchCluster is two replicas whose check never comes due in a
// benchmark's time.
func newBenchCluster(b *testing.B) *cluster {
	c := newClusterOpts(b, 2, nil)
	for _, r := range c.replicas {
		r.srv.shared.Load().check = time.Hour
	}
	return c
}

func newClusterOpts(t testing.TB, n int, mod func(*Options)) *cluster {
	return newClusterStore(t, n, mod, nil)
}

func newClusterStore(t testing.TB, n int, mod func(*Options), open func() store.Store) *cluster {
	t.Helper()
	c := &cluster{t: t, path: filepath.Join(t.TempDir(), "gatehouse.db"), eff: &effects{}, mod: mod, open: open}
	for range n {
		c.add()
	}
	c.proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bufferBody(r)
		for range len(c.replicas) {
			rp := c.replicas[int(c.next.Add(1))%len(c.replicas)]
			if _, isDown := c.down.Load(rp); isDown {
				continue
			}
			u, _ := url.Parse(rp.ts.URL)
			p := httputil.NewSingleHostReverseProxy(u)
			p.FlushInterval = -1 // event streams pass as they are written
			p.ServeHTTP(w, r)
			return
		}
		http.Error(w, "no replica", http.StatusBadGateway)
	}))
	t.Cleanup(c.proxy.Close)
	return c
}

// bufferBody reads r's body before a reverse proxy forwards it, as a load
// balancer does. Streamed, the proxy's transport may still be reading the
// body's end when the replica's answer starts: Go's HTTP/1 server then
// closes the body, the transport drops the replica's connection with the
// answer on it, and the caller's SSE stream ends without its response (a
// test flake under load, not something a client of a real balancer sees).
func bufferBody(r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	b, _ := io.ReadAll(r.Body) // cut short: the replica refuses what arrived
	r.Body = io.NopCloser(bytes.NewReader(b))
}

// add starts one more replica on the cluster's store.
func (c *cluster) add() *replica {
	t := c.t
	var st store.Store
	if c.open != nil {
		st = c.open()
	} else {
		s, err := sqlite.Open(t.Context(), c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		st = s
	}
	t.Cleanup(func() { st.Close() })
	tools := testTools(c.eff, nil)
	tools["ask"] = NewTool(&mcp.Tool{Description: "asks its caller"}, func(ctx context.Context, _ Caller, req *mcp.CallToolRequest, in struct {
		Nonce string `json:"nonce"`
	}) (*mcp.CallToolResult, map[string]string, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: in.Nonce, RequestedSchema: map[string]any{"type": "object",
			"properties": map[string]any{"answer": map[string]any{"type": "string"}}}})
		if err != nil {
			return nil, nil, err
		}
		return nil, map[string]string{"action": res.Action, "answer": fmt.Sprint(res.Content["answer"])}, nil
	})
	tools["block"] = NewTool(&mcp.Tool{Description: "waits to be cancelled"}, func(ctx context.Context, _ Caller, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, map[string]string, error) {
		c.eff.add("blocking")
		select {
		case <-ctx.Done():
			c.eff.add("cancelled")
			return nil, nil, ctx.Err()
		case <-time.After(20 * time.Second):
			return nil, map[string]string{"done": "late"}, nil
		}
	})
	tools["steps"] = NewTool(&mcp.Tool{Description: "reports progress"}, func(ctx context.Context, _ Caller, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, map[string]string, error) {
		for i := range 3 {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i + 1), Total: 3}); err != nil {
				return nil, nil, err
			}
		}
		return nil, map[string]string{"steps": "3"}, nil
	})
	tools["shout"] = NewTool(&mcp.Tool{Description: "logs at debug"}, func(ctx context.Context, _ Caller, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, map[string]string, error) {
		err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "debug", Data: "shouted"})
		return nil, map[string]string{"logged": fmt.Sprint(err == nil)}, nil
	})
	tools["murmur"] = NewTool(&mcp.Tool{Description: "logs outside its request"}, func(ctx context.Context, _ Caller, req *mcp.CallToolRequest, in struct {
		Size int `json:"size"`
	}) (*mcp.CallToolResult, map[string]string, error) {
		// Not in the call's context: for the caller's standalone stream.
		err := req.Session.Log(context.Background(), &mcp.LoggingMessageParams{Level: "info", Logger: "murmur", Data: strings.Repeat("m", max(in.Size, 1))})
		return nil, map[string]string{"logged": fmt.Sprint(err == nil)}, nil
	})
	o := Options{Tools: tools, Identify: identify, AllowTool: testAllow, Logger: quietLogger()}
	if c.mod != nil {
		c.mod(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Handler(&HTTPOptions{Verifier: verifier, Sessions: st})
	if err != nil {
		t.Fatal(err)
	}
	s.shared.Load().check = 20 * time.Millisecond
	r := &replica{srv: s}
	r.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.served.Add(1)
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(func() { r.ts.Close(); s.Close() })
	c.replicas = append(c.replicas, r)
	return r
}

// charge calls charge through cs and returns its sequence number on the
// replica that ran it.
func charge(t *testing.T, cs *mcp.ClientSession, amount int) {
	t.Helper()
	res := callTool(t, cs, "charge", map[string]any{"account": "acct", "amount": amount}, nil)
	if res.IsError {
		t.Fatalf("charge %d: %+v", amount, res.Content)
	}
	if m := structured(t, res); m["subject"] != "alice" || m["amount"] != float64(amount) {
		t.Fatalf("charge %d answered %v", amount, m)
	}
}

// listOn posts a tools/list on session sid to url with token and returns
// the status and body.
func listOn(t testing.TB, url, sid, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// One session, opened through a proxy that sends each request to the next
// of three replicas: every call is answered and runs once, every replica
// serves some, and the session goes on when the replica that opened it is
// killed.
func TestSessionAcrossReplicas(t *testing.T) {
	c := newCluster(t, 3)
	cs := connect(t, c.proxy.URL+"/mcp", "tok-alice")
	for i := range 12 {
		charge(t, cs, i+1)
		if _, err := cs.ListTools(t.Context(), nil); err != nil {
			t.Fatalf("list %d: %v", i, err)
		}
	}
	for i := range 12 {
		if n := c.eff.get(fmt.Sprintf("alice/acct/%d", i+1)); n != 1 {
			t.Errorf("charge %d ran %d times", i+1, n)
		}
	}
	for i, r := range c.replicas {
		if r.served.Load() < 5 {
			t.Errorf("replica %d served %d requests: the proxy did not spread the session", i, r.served.Load())
		}
	}
	// The replica that opened the session goes away; the others go on.
	opener := -1
	for i, r := range c.replicas {
		if r.srv.shared.Load().lookup(cs.ID()) != nil && r.srv.shared.Load().lookup(cs.ID()).t == nil {
			opener = i
		}
	}
	if opener < 0 {
		t.Fatal("no replica holds the session as its opener")
	}
	c.down.Store(c.replicas[opener], true)
	c.replicas[opener].kill()
	for i := range 6 {
		charge(t, cs, 100+i)
	}
	// A replica started now, on the same store, serves it too.
	c.add()
	for i := range 6 {
		charge(t, cs, 200+i)
	}
	if got := c.replicas[3].served.Load(); got == 0 {
		t.Error("the new replica served none of the session's requests")
	}
	if total := c.eff.total(); total != 24 {
		t.Errorf("%d effects, want 24 (each call once)", total)
	}
}

// Another user's token on the session is refused by every replica, the
// one that opened it and those that never held it (which must not rebuild
// it for them); its owner is served everywhere.
func TestSessionOtherUserRefusedEverywhere(t *testing.T) {
	c := newCluster(t, 3)
	cs := connect(t, c.proxy.URL+"/mcp", "tok-alice")
	for i, r := range c.replicas {
		if code, body := listOn(t, r.ts.URL+"/mcp", cs.ID(), "tok-mallory"); code != http.StatusForbidden {
			t.Errorf("replica %d answered mallory %d %q, want 403", i, code, body)
		}
	}
	for i, r := range c.replicas {
		if code, body := listOn(t, r.ts.URL+"/mcp", cs.ID(), "tok-alice"); code != http.StatusOK || !strings.Contains(body, "charge") {
			t.Errorf("replica %d answered alice %d %q", i, code, body)
		}
	}
	// An ID no one issued is not found anywhere.
	if code, _ := listOn(t, c.replicas[0].ts.URL+"/mcp", "no-such-session", "tok-alice"); code != http.StatusNotFound {
		t.Errorf("an unknown session: %d, want 404", code)
	}
}

// A DELETE through one replica ends the session on every replica: its row
// is closed at once, and a replica that had rebuilt it drops it at its
// next check.
func TestSessionDeleteEndsEverywhere(t *testing.T) {
	c := newCluster(t, 3)
	cs := connect(t, c.proxy.URL+"/mcp", "tok-alice")
	sid := cs.ID()
	for i, r := range c.replicas { // each holds it now
		if code, _ := listOn(t, r.ts.URL+"/mcp", sid, "tok-alice"); code != http.StatusOK {
			t.Fatalf("replica %d: %d", i, code)
		}
	}
	req, _ := http.NewRequest(http.MethodDelete, c.replicas[1].ts.URL+"/mcp", nil)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Authorization", "Bearer tok-alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	st, err := sqlite.Open(t.Context(), c.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if row, ok, err := st.Session(t.Context(), sid, time.Now()); err != nil || !ok || !row.Closed {
		t.Fatalf("the row after DELETE: %+v, %v, %v", row, ok, err)
	}
	time.Sleep(50 * time.Millisecond) // past the replicas' check
	for i, r := range c.replicas {
		if code, body := listOn(t, r.ts.URL+"/mcp", sid, "tok-alice"); code != http.StatusNotFound {
			t.Errorf("replica %d after DELETE: %d %q, want 404", i, code, body)
		}
	}
}

// What a rebuilt session needs is in its row, and nothing else: the
// caller's user and subject, its initialize parameters and revision, its
// log level once set; never a token. A level set through one replica
// holds on the others: a debug message logged by a call that another
// replica runs reaches the caller.
func TestSessionRowHoldsNoToken(t *testing.T) {
	c := newCluster(t, 2)
	cs, logged := shoutListener(t, c.proxy.URL+"/mcp")
	// Before any level: no debug message reaches the caller.
	for range 4 {
		callTool(t, cs, "shout", map[string]any{}, nil)
	}
	if n := logged.Load(); n != 0 {
		t.Fatalf("%d debug messages before the level was set", n)
	}
	if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // past the replicas' check
	for range 6 {
		callTool(t, cs, "shout", map[string]any{}, nil)
	}
	// Notifications are handled as they arrive, not with the answer.
	for deadline := time.Now().Add(2 * time.Second); logged.Load() < 6 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := logged.Load(); n != 6 {
		t.Errorf("%d of 6 debug messages reached the caller across the replicas", n)
	}
	st, err := sqlite.Open(t.Context(), c.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	row, ok, err := st.Session(t.Context(), cs.ID(), time.Now())
	if err != nil || !ok {
		t.Fatalf("row: %v, %v", ok, err)
	}
	var saved savedSession
	if err := json.Unmarshal(row.State, &saved); err != nil {
		t.Fatal(err)
	}
	if row.Subject != "alice" || row.UserID != "alice" || saved.LogLevel != "debug" || saved.Protocol == "" ||
		saved.Initialize == nil || saved.Initialize.ClientInfo == nil || saved.Initialize.ClientInfo.Name != "test-client" {
		t.Fatalf("row %+v, state %s", row, row.State)
	}
	if strings.Contains(string(row.State), "tok-alice") {
		t.Fatalf("the row holds the token: %s", row.State)
	}
}

// shoutListener connects alice through url without a standalone stream,
// counting the "shouted" log messages (the shout tool's) it hears.
func shoutListener(t *testing.T, url string) (*mcp.ClientSession, *atomic.Int64) {
	t.Helper()
	logged := new(atomic.Int64)
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			if req.Params.Data == "shouted" {
				logged.Add(1)
			}
		},
	})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearer{token: "tok-alice", base: tr}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, logged
}

// The session cap holds across replicas: sessions opened on two replicas
// count on a third, and one ended by DELETE frees its slot everywhere.
func TestSessionCapAcrossReplicas(t *testing.T) {
	c := newClusterOpts(t, 3, func(o *Options) { o.MaxSessionsPerSubject = 2 })
	a := connect(t, c.replicas[0].ts.URL+"/mcp", "tok-alice")
	connect(t, c.replicas[1].ts.URL+"/mcp", "tok-alice")
	open := func() error {
		cl := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		cs, err := cl.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: c.replicas[2].ts.URL + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{token: "tok-alice", base: tr}}, DisableStandaloneSSE: true}, nil)
		if err == nil {
			cs.Close()
		}
		return err
	}
	if err := open(); err == nil || !strings.Contains(err.Error(), "too many open sessions") {
		t.Fatalf("a third session on a third replica: %v, want the session cap", err)
	}
	// Bob has slots of his own.
	connect(t, c.replicas[2].ts.URL+"/mcp", "tok-bob")
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := open(); err != nil {
		t.Fatalf("after a DELETE freed a slot: %v", err)
	}
}

// BenchmarkSessionReplicas: what a session across replicas costs a
// request (tools/list over real HTTP, SQLite NORMAL): on the replica that
// opened it; on another that holds it already (rebuilt before); and on one
// that must rebuild it from its row first (each request: the session is
// dropped there before).
func BenchmarkSessionReplicas(b *testing.B) {
	run := func(b *testing.B, which string) {
		c := newBenchCluster(b)
		cs := connect(b, c.replicas[0].ts.URL+"/mcp", "tok-alice")
		sid := cs.ID()
		target := c.replicas[0]
		if which != "opener" {
			target = c.replicas[1]
		}
		url := target.ts.URL + "/mcp"
		x := target.srv.shared.Load()
		b.ResetTimer()
		for b.Loop() {
			if which == "rebuild" {
				if h := x.lookup(sid); h != nil {
					_ = h.ss.Close()
					x.forget(sid, h)
				}
			}
			if code, _ := listOn(b, url, sid, "tok-alice"); code != http.StatusOK {
				b.Fatalf("status %d", code)
			}
		}
	}
	for _, which := range []string{"opener", "holder", "rebuild"} {
		b.Run(which, func(b *testing.B) { run(b, which) })
	}
}

// Progress of a call reaches the caller whichever replica runs the call:
// it travels on the call's own stream.
func TestSessionProgressAcrossReplicas(t *testing.T) {
	c := newCluster(t, 3)
	var progress atomic.Int64
	cl := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
	})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cs, err := cl.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: c.proxy.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token: "tok-alice", base: tr}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for i := range 6 {
		p := &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{}}
		p.SetProgressToken(fmt.Sprintf("p%d", i))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := cs.CallTool(ctx, p)
		cancel()
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %+v", i, err, res)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); progress.Load() < 18 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := progress.Load(); n != 18 {
		t.Fatalf("%d of 18 progress notifications reached the caller", n)
	}
	served := 0
	for _, r := range c.replicas {
		if r.served.Load() > 0 {
			served++
		}
	}
	if served < 2 {
		t.Fatalf("%d replicas served the session", served)
	}
}
