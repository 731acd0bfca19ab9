package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/testserver"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
)

// lines counts the lines of a file (0 when it does not exist).
func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// Waking projects the stored catalogue with no request to the HTTP server
// and no launch of the stdio server; Reconcile then corrects the map in
// place, and a turn's earlier snapshot is routed by the corrected map.
func TestWakeZeroRoundTripsThenCorrect(t *testing.T) {
	dir := t.TempDir()
	httpFile, stdioFile := filepath.Join(dir, "http.json"), filepath.Join(dir, "stdio.json")
	starts := filepath.Join(dir, "starts")
	writeTools(t, httpFile, bankV1()...)
	writeTools(t, stdioFile, tool("a", "Tool a.", "x"), tool("b", "Tool b.", "y"))
	fx := startHTTP(t, "127.0.0.1:0", "-tools-file", httpFile)
	st := sqliteAt(t, filepath.Join(dir, "g.db"))
	servers := []Server{
		remote("bank", fx.URL(""), plugin.TransportStreamableHTTP),
		stdio("local", "-tools-file", stdioFile, "-starts", starts),
	}

	cold := open(t, servers, &Options{Store: st})
	want := tools(t, cold)
	cold.Close()
	if len(want) != 6 || lines(t, starts) != 1 {
		t.Fatalf("cold start: %v, %d launches", keys(want), lines(t, starts))
	}

	// The servers change while the process sleeps.
	writeTools(t, httpFile, bankV2()...)
	fx.Restart()
	writeTools(t, stdioFile, tool("a", "Tool a, changed. "+poison, "x"))
	reqs := len(fx.Requests())

	var changed atomic.Int64
	ts := open(t, servers, &Options{Store: st, Wake: true, DeferReconcile: true, OnChange: func() { changed.Add(1) }})
	snap, err := ts.Tools(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(fx.Requests()); got != reqs {
		t.Fatalf("the wake made %d HTTP requests", got-reqs)
	}
	if got := lines(t, starts); got != 1 {
		t.Fatalf("the wake launched the stdio server (%d launches)", got)
	}
	if len(snap) != len(want) {
		t.Fatalf("woken map %d tools, want %d", len(snap), len(want))
	}
	for _, ti := range snap {
		w := want[ti.Name]
		if w.Description != ti.Description || w.State != ti.State || w.ServerID != ti.ServerID || w.ContractHash != ti.ContractHash {
			t.Fatalf("woken %+v, cold %+v", ti, w)
		}
	}
	if ds := ts.Diagnostics(); len(ds) != 0 {
		t.Fatalf("wake diagnostics %v", ds)
	}

	if err := ts.Reconcile(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if lines(t, starts) != 2 || len(fx.Requests()) == reqs {
		t.Fatal("Reconcile did not reach the servers")
	}
	if changed.Load() == 0 {
		t.Error("OnChange not called")
	}
	m := tools(t, ts)
	if m["bank__transfer"].State != Quarantined || m["local__a"].State != Quarantined || m["bank__balance"].State != Active {
		t.Fatalf("corrected map %v", m)
	}
	for _, n := range []string{"bank__old", "local__b", "bank__added", "bank__lookup"} {
		if _, ok := m[n]; ok {
			t.Errorf("%s still in the map", n)
		}
	}
	// The snapshot a turn holds is unchanged...
	for _, ti := range snap {
		if ti.State != Active {
			t.Fatalf("snapshot changed under the caller: %+v", ti)
		}
	}
	// ...and calls from it are routed by the corrected map.
	if _, err := ts.Call(ctxT(t), "local__b", nil, CallInfo{}); !errors.Is(err, ErrToolWithdrawn) ||
		err.(*Error).Reason() != "MCP tool local__b is no longer published by server local" {
		t.Fatalf("local__b: %v", err)
	}
	if _, err := ts.Call(ctxT(t), "bank__transfer", nil, CallInfo{}); !errors.Is(err, ErrQuarantined) {
		t.Fatalf("bank__transfer: %v", err)
	}
	if got := call(t, ts, "bank__balance", map[string]any{"text": "b"}); got != "b" {
		t.Fatal(got)
	}
}

// The default wake reconciles in the background: the map is there while
// the server has not answered anything, and corrected once it has.
func TestWakeBackgroundReconcile(t *testing.T) {
	dir := t.TempDir()
	f1, f2 := filepath.Join(dir, "v1.json"), filepath.Join(dir, "v2.json")
	writeTools(t, f1, bankV1()...)
	writeTools(t, f2, bankV2()...)
	var cur atomic.Pointer[http.Handler]
	h1 := testserver.New(testserver.Config{ToolsFile: f1}).Handler(false, nil)
	cur.Store(&h1)
	open := make(chan struct{})
	close(open)
	var gate atomic.Pointer[chan struct{}]
	gate.Store(&open)
	var completed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-*gate.Load()
		(*cur.Load()).ServeHTTP(w, r)
		completed.Add(1)
	}))
	t.Cleanup(srv.Close) // after the toolsets' Close (cleanups run last-in first-out)
	st := sqliteAt(t, filepath.Join(dir, "g.db"))
	servers := []Server{remote("bank", srv.URL+"/mcp", plugin.TransportStreamableHTTP)}

	cold := openTS(t, servers, &Options{Store: st})
	tools(t, cold)
	cold.Close()

	h2 := testserver.New(testserver.Config{ToolsFile: f2}).Handler(false, nil)
	cur.Store(&h2)
	shut := make(chan struct{})
	gate.Store(&shut)
	completed.Store(0)
	var changes atomic.Int64
	ts := openTS(t, servers, &Options{Store: st, Wake: true, OnChange: func() { changes.Add(1) }})
	m := tools(t, ts)
	if completed.Load() != 0 {
		t.Fatal("a round trip completed before the woken map was returned")
	}
	if len(m) != 4 || m["bank__transfer"].State != Active {
		t.Fatalf("woken map %v", keys(m))
	}
	close(shut)
	if err := ts.AwaitReconcile(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if completed.Load() == 0 || changes.Load() == 0 {
		t.Fatalf("reconcile: %d round trips, %d changes", completed.Load(), changes.Load())
	}
	m = tools(t, ts)
	if m["bank__transfer"].State != Quarantined {
		t.Fatalf("not corrected: %v", m)
	}
	if _, err := ts.Call(ctxT(t), "bank__old", nil, CallInfo{}); !errors.Is(err, ErrToolWithdrawn) {
		t.Fatalf("old: %v", err)
	}
}

func openTS(t *testing.T, servers []Server, opts *Options) *Toolset { return open(t, servers, opts) }

// A wake is not a cold start: no row, a mismatched row, and a catalogue
// that does not parse.
func TestWakeRefusals(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tools.json")
	starts := filepath.Join(dir, "starts")
	writeTools(t, file, bankV1()...)
	fx := startHTTP(t, "127.0.0.1:0", "-tools-file", file)
	st := sqliteAt(t, filepath.Join(dir, "g.db"))
	bank := remote("bank", fx.URL(""), plugin.TransportStreamableHTTP)
	local := stdio("local", "-tools-file", file, "-starts", starts)

	// Empty store: empty map, a diagnostic per server, nothing contacted.
	ts := open(t, []Server{bank, local}, &Options{Store: st, Wake: true})
	if m := tools(t, ts); len(m) != 0 {
		t.Fatalf("empty store woke %v", keys(m))
	}
	if err := ts.AwaitReconcile(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := ts.Reconcile(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if ds := ts.Diagnostics(); ruleCount(ds, diag.ConnectionFailure, "a wake never falls back to connecting") != 2 {
		t.Fatalf("diagnostics %v", ds)
	}
	if _, err := ts.Call(ctxT(t), "bank__balance", nil, CallInfo{}); !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("call: %v", err)
	}
	ts.Close()
	if len(fx.Requests()) != 0 || lines(t, starts) != 0 {
		t.Fatal("a server was contacted")
	}

	// Rows that no longer match the config are refused.
	cat, err := json.Marshal(map[string]any{"format": "gatehouse/catalogue/v1", "tools": bankV1()})
	if err != nil {
		t.Fatal(err)
	}
	put := func(s store.Server) {
		t.Helper()
		if err := st.PutServer(ctxT(t), s); err != nil {
			t.Fatal(err)
		}
	}
	put(store.Server{ID: "config:bank", Name: "bank", Type: "sse", URL: bank.Config.URL, Catalogue: cat})
	put(store.Server{ID: "config:local", Name: "local", Type: "stdio", URL: "http://127.0.0.1:1/mcp", Catalogue: cat})
	ts = open(t, []Server{bank, local}, &Options{Store: st, Wake: true})
	if m := tools(t, ts); len(m) != 0 {
		t.Fatalf("mismatched rows woke %v", keys(m))
	}
	if err := ts.AwaitReconcile(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if ds := ts.Diagnostics(); ruleCount(ds, diag.ConnectionFailure, "does not match the configuration") != 2 {
		t.Fatalf("diagnostics %v", ds)
	}
	ts.Close()
	if len(fx.Requests()) != 0 || lines(t, starts) != 0 {
		t.Fatal("a refused server was contacted")
	}

	// A catalogue that no longer parses is dropped; the reconcile refills.
	put(store.Server{ID: "config:bank", Name: "bank", Type: string(plugin.TransportStreamableHTTP), URL: bank.Config.URL, Catalogue: []byte(`{"format":"gatehouse/catalogue/v1","tools":[{"name":`)})
	ts = open(t, []Server{bank}, &Options{Store: st, Wake: true, DeferReconcile: true})
	if m := tools(t, ts); len(m) != 0 {
		t.Fatalf("a broken catalogue woke %v", keys(m))
	}
	if ds := ts.Diagnostics(); ruleCount(ds, diag.ConnectionFailure, "stored tool catalogue of server \"bank\" is dropped") != 1 {
		t.Fatalf("diagnostics %v", ds)
	}
	if err := ts.Reconcile(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if m := tools(t, ts); len(m) != 4 || m["bank__transfer"].State != Active {
		t.Fatalf("after reconcile %v", keys(m))
	}
	row, _ := st.GetServer(ctxT(t), "config:bank")
	if !json.Valid(row.Catalogue) || !bytes.Contains(row.Catalogue, []byte(`"transfer"`)) {
		t.Fatalf("catalogue not rewritten: %s", row.Catalogue)
	}
}

// A re-trust made through another store handle (as `gatehouse trust` in
// another process) is noticed by WatchTrust.
func TestWatchTrustSeesRetrustFromAnotherHandle(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tools.json")
	db := filepath.Join(dir, "g.db")
	st1, st2 := sqliteAt(t, db), sqliteAt(t, db)
	srv := []Server{stdio("bank", "-tools-file", file)}
	writeTools(t, file, bankV1()...)
	first := open(t, srv, &Options{Store: st1})
	tools(t, first)
	first.Close()

	writeTools(t, file, bankV2()...)
	var changes atomic.Int64
	a := open(t, srv, &Options{Store: st1, OnChange: func() { changes.Add(1) }})
	if m := tools(t, a); m["bank__transfer"].State != Quarantined {
		t.Fatalf("a: %+v", m["bank__transfer"])
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.WatchTrust(ctx, 20*time.Millisecond) }()

	b := open(t, srv, &Options{Store: st2})
	if _, err := b.Retrust(ctxT(t), "config:bank"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the watcher to re-apply the new baseline", func() bool {
		m := tools(t, a)
		return m["bank__transfer"].State == Active && m["bank__added"].State == Active && m["bank__find"].State == Active
	})
	if changes.Load() == 0 {
		t.Error("OnChange not called")
	}
	if got := call(t, a, "bank__added", map[string]any{"text": "hi"}); got != "hi" {
		t.Fatal(got)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("WatchTrust returned %v", err)
	}
	// After Close, a watcher ends by itself.
	go func() { done <- b.WatchTrust(context.Background(), 10*time.Millisecond) }()
	time.Sleep(30 * time.Millisecond)
	b.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("WatchTrust after Close returned %v", err)
	}
}

// pgStore opens a PostgreSQL store in a fresh schema dropped at cleanup.
func pgStore(t *testing.T) *postgres.Store {
	t.Helper()
	dsn := pgtest.Schema(t, "gh_toolset_test", "the PostgreSQL drift test")
	st, err := postgres.Open(ctxT(t), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestDriftPostgres(t *testing.T) {
	st := pgStore(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "tools.json")
	srv := []Server{stdio("bank", "-tools-file", file)}
	writeTools(t, file, bankV1()...)
	ts := open(t, srv, &Options{Store: st})
	tools(t, ts)
	ts.Close()

	writeTools(t, file, bankV2()...)
	ts = open(t, srv, &Options{Store: st, Wake: true, DeferReconcile: true})
	if m := tools(t, ts); len(m) != 4 || m["bank__old"].State != Active {
		t.Fatalf("woken from PostgreSQL: %v", keys(m))
	}
	if err := ts.Reconcile(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	m := tools(t, ts)
	if m["bank__transfer"].State != Quarantined || strings.Contains(m["bank__transfer"].Description, "POISON") {
		t.Fatalf("transfer %+v", m["bank__transfer"])
	}
	if _, ok := m["bank__added"]; ok {
		t.Fatal("added not withheld")
	}
	if _, err := ts.Retrust(ctxT(t), "bank"); err != nil {
		t.Fatal(err)
	}
	if m := tools(t, ts); m["bank__transfer"].State != Active || m["bank__added"].State != Active {
		t.Fatalf("after re-trust %v", m)
	}
	v, err := st.BaselineVersion(ctxT(t), "config:bank")
	if err != nil || v < 2 {
		t.Fatalf("baseline version %d %v", v, err)
	}
}

var _ = mcp.Tool{}
