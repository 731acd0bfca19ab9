// Package conntest is the conformance suite of store.ConnectionStore (the
// token vault's rows, refresh leases and connect flows), beside package
// storetest: every store implementation runs it.
//
//	func TestConnectionConformance(t *testing.T) {
//		conntest.Run(t, func(t *testing.T) (store.Store, store.Store) {
//			path := filepath.Join(t.TempDir(), "gatehouse.db")
//			return openAt(t, path), openAt(t, path) // two handles on one database
//		})
//	}
//
// The store never interprets Sealed; the suite's blobs are made up.
package conntest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// Opener returns a fresh, empty store for one test and a second handle on
// the same database (another pool, another connection; the memory store
// returns itself twice), their Close registered with t.Cleanup.
type Opener func(t *testing.T) (s, other store.Store)

// Run runs the suite against stores made by open.
func Run(t *testing.T, open Opener) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s, other store.Store)
	}{
		{"PutGet", testPutGet},
		{"Invalid", testInvalid},
		{"List", testList},
		{"Delete", testDelete},
		{"Swap", testSwap},
		{"Account", testAccount},
		{"Purge", testPurge},
		{"Lease", testLease},
		{"LeaseRace", testLeaseRace},
		{"Flow", testFlow},
		{"FlowRace", testFlowRace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, other := open(t)
			tc.fn(t, s, other)
		})
	}
}

var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func conn(server, subject, blob string) store.Connection {
	return store.Connection{Server: server, Subject: subject, Sealed: []byte(blob), KeyID: "k1",
		CreatedAt: base, UpdatedAt: base}
}

func put(t *testing.T, s store.ConnectionStore, cs ...store.Connection) {
	t.Helper()
	for _, c := range cs {
		if err := s.PutConnection(ctxT(t), c); err != nil {
			t.Fatalf("PutConnection(%s/%q): %v", c.Server, c.Subject, err)
		}
	}
}

func get(t *testing.T, s store.ConnectionStore, server, subject string) (store.Connection, bool) {
	t.Helper()
	c, ok, err := s.Connection(ctxT(t), server, subject)
	if err != nil {
		t.Fatalf("Connection(%s/%q): %v", server, subject, err)
	}
	return c, ok
}

func names(cs []store.Connection) string {
	var b bytes.Buffer
	for _, c := range cs {
		fmt.Fprintf(&b, "%s/%s ", c.Server, c.Subject)
	}
	return b.String()
}

func testPutGet(t *testing.T, s, other store.Store) {
	if _, ok := get(t, s, "gh", "alice"); ok {
		t.Fatal("Connection of an empty store: found")
	}
	put(t, s, conn("gh", "alice", "blob-1"))
	c, ok := get(t, other, "gh", "alice")
	if !ok || c.Server != "gh" || c.Subject != "alice" || string(c.Sealed) != "blob-1" || c.KeyID != "k1" ||
		!c.CreatedAt.Equal(base) || !c.UpdatedAt.Equal(base) {
		t.Fatalf("Connection = %+v, %v", c, ok)
	}
	later := base.Add(time.Hour)
	put(t, s, store.Connection{Server: "gh", Subject: "alice", Sealed: []byte("blob-2"), KeyID: "k2", CreatedAt: later, UpdatedAt: later})
	c, _ = get(t, s, "gh", "alice")
	if string(c.Sealed) != "blob-2" || c.KeyID != "k2" || !c.CreatedAt.Equal(base) || !c.UpdatedAt.Equal(later) {
		t.Fatalf("after replace: %+v (CreatedAt must stay %v)", c, base)
	}
	// Zero times are filled from the store's clock.
	put(t, s, store.Connection{Server: "linear", Sealed: []byte("svc")})
	c, ok = get(t, s, "linear", "")
	if !ok || c.CreatedAt.IsZero() || c.UpdatedAt.IsZero() || c.Subject != "" {
		t.Fatalf("service connection = %+v, %v", c, ok)
	}
	if _, ok := get(t, s, "gh", "bob"); ok {
		t.Fatal("another subject's connection found")
	}
}

func testInvalid(t *testing.T, s, _ store.Store) {
	ctx := ctxT(t)
	for name, c := range map[string]store.Connection{
		"no server": {Subject: "a", Sealed: []byte("x")},
		"no sealed": {Server: "gh", Subject: "a"},
	} {
		if err := s.PutConnection(ctx, c); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("PutConnection(%s) = %v, want ErrInvalid", name, err)
		}
	}
	for name, f := range map[string]store.ConnectFlow{
		"no id":     {Server: "gh", ExpiresAt: base},
		"no server": {ID: "f", ExpiresAt: base},
		"no expiry": {ID: "f", Server: "gh"},
	} {
		if err := s.PutConnectFlow(ctx, f); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("PutConnectFlow(%s) = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := s.LeaseRefresh(ctx, "", "a", "h", base); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("LeaseRefresh without server = %v, want ErrInvalid", err)
	}
	if _, err := s.LeaseRefresh(ctx, "gh", "a", "", base); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("LeaseRefresh without holder = %v, want ErrInvalid", err)
	}
	cs, err := s.Connections(ctx, "")
	if err != nil || len(cs) != 0 {
		t.Fatalf("after refused puts: %v, %v", names(cs), err)
	}
}

func testList(t *testing.T, s, other store.Store) {
	put(t, s, conn("zeta", "alice", "1"), conn("gh", "bob", "2"), conn("gh", "alice", "3"), conn("gh", "", "svc"))
	all, err := other.Connections(ctxT(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(all); got != "gh/ gh/alice gh/bob zeta/alice " {
		t.Fatalf("Connections(all) = %q", got)
	}
	al, err := other.Connections(ctxT(t), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(al); got != "gh/alice zeta/alice " || string(al[0].Sealed) != "3" {
		t.Fatalf("Connections(alice) = %q", got)
	}
	none, err := s.Connections(ctxT(t), "nobody")
	if err != nil || none == nil || len(none) != 0 {
		t.Fatalf("Connections(nobody) = %#v, %v; want empty, non-nil", none, err)
	}
}

func testDelete(t *testing.T, s, other store.Store) {
	ctx := ctxT(t)
	put(t, s, conn("gh", "alice", "1"), conn("linear", "alice", "2"), conn("gh", "bob", "3"), conn("gh", "", "svc"))
	if ok, err := s.LeaseRefresh(ctx, "gh", "alice", "r1", time.Now().Add(time.Hour)); err != nil || !ok {
		t.Fatalf("LeaseRefresh = %v, %v", ok, err)
	}
	n, err := other.DeleteConnections(ctx, "gh", "alice")
	if err != nil || n != 1 {
		t.Fatalf("DeleteConnections(gh, alice) = %d, %v; want 1", n, err)
	}
	if _, ok := get(t, s, "gh", "alice"); ok {
		t.Fatal("deleted connection still there")
	}
	// The lease went with it: another holder takes it at once.
	if ok, err := s.LeaseRefresh(ctx, "gh", "alice", "r2", time.Now().Add(time.Hour)); err != nil || !ok {
		t.Fatalf("LeaseRefresh after delete = %v, %v; want the lease free", ok, err)
	}
	if n, err := s.DeleteConnections(ctx, "gh", "alice"); err != nil || n != 0 {
		t.Fatalf("second delete = %d, %v; want 0", n, err)
	}
	put(t, s, conn("gh", "alice", "1"))
	if n, err := s.DeleteConnections(ctx, "", "alice"); err != nil || n != 2 {
		t.Fatalf("DeleteConnections(all of alice) = %d, %v; want 2", n, err)
	}
	// server "" with subject "" deletes the service connections only.
	if n, err := s.DeleteConnections(ctx, "", ""); err != nil || n != 1 {
		t.Fatalf("DeleteConnections(service) = %d, %v; want 1", n, err)
	}
	rest, err := s.Connections(ctx, "")
	if err != nil || names(rest) != "gh/bob " {
		t.Fatalf("left = %q, %v; want bob's only", names(rest), err)
	}
}

func testSwap(t *testing.T, s, other store.Store) {
	ctx := ctxT(t)
	put(t, s, conn("gh", "alice", "old"))
	c := conn("gh", "alice", "new")
	c.KeyID = "k2"
	if ok, err := other.SwapConnection(ctx, c, []byte("stale")); err != nil || ok {
		t.Fatalf("Swap with a stale blob = %v, %v; want false", ok, err)
	}
	if ok, err := other.SwapConnection(ctx, c, []byte("old")); err != nil || !ok {
		t.Fatalf("Swap = %v, %v; want true", ok, err)
	}
	got, _ := get(t, s, "gh", "alice")
	if string(got.Sealed) != "new" || got.KeyID != "k2" {
		t.Fatalf("after swap: %+v", got)
	}
	if ok, err := s.SwapConnection(ctx, conn("gh", "nobody", "x"), []byte("old")); err != nil || ok {
		t.Fatalf("Swap of a missing row = %v, %v; want false", ok, err)
	}
	if _, ok := get(t, s, "gh", "nobody"); ok {
		t.Fatal("Swap created a row")
	}
}

// testAccount: a connection's Account is stored and read back (by the
// other store too, and listed); a put with an empty Account keeps the
// stored one (a refresh), a put with another replaces it; a swap (rekey)
// keeps it; a deleted row's account goes with it.
func testAccount(t *testing.T, s, other store.Store) {
	ctx := ctxT(t)
	c := conn("gh", "alice", "blob-1")
	c.Account = "octocat#1234"
	put(t, s, c)
	if got, ok := get(t, other, "gh", "alice"); !ok || got.Account != "octocat#1234" {
		t.Fatalf("Account read back = %+v, %v", got, ok)
	}
	cs, err := other.Connections(ctx, "alice")
	if err != nil || len(cs) != 1 || cs[0].Account != "octocat#1234" {
		t.Fatalf("Connections = %+v, %v", cs, err)
	}
	put(t, s, conn("gh", "alice", "blob-2")) // a refresh: no account
	if got, _ := get(t, other, "gh", "alice"); got.Account != "octocat#1234" || string(got.Sealed) != "blob-2" {
		t.Fatalf("after a put without an account: %+v", got)
	}
	c = conn("gh", "alice", "blob-3")
	c.Account = "other"
	put(t, s, c)
	if got, _ := get(t, other, "gh", "alice"); got.Account != "other" {
		t.Fatalf("after a put with another account: %+v", got)
	}
	if ok, err := other.SwapConnection(ctx, conn("gh", "alice", "blob-4"), []byte("blob-3")); err != nil || !ok {
		t.Fatalf("Swap = %v, %v", ok, err)
	}
	if got, _ := get(t, s, "gh", "alice"); got.Account != "other" {
		t.Fatalf("after a swap: %+v", got)
	}
	if _, err := s.DeleteConnections(ctx, "gh", "alice"); err != nil {
		t.Fatal(err)
	}
	put(t, s, conn("gh", "alice", "blob-5"))
	if got, _ := get(t, other, "gh", "alice"); got.Account != "" {
		t.Fatalf("a new row after a delete kept the old account: %+v", got)
	}
	// The service connection has none.
	put(t, s, conn("gh", "", "svc"))
	if got, _ := get(t, other, "gh", ""); got.Account != "" {
		t.Fatalf("service connection: %+v", got)
	}
}

func testPurge(t *testing.T, s, other store.Store) {
	ctx := ctxT(t)
	put(t, s, conn("gh", "alice", "1"), conn("linear", "alice", "2"), conn("gh", "bob", "3"), conn("gh", "", "svc"))
	exp := time.Now().Add(time.Hour)
	for _, f := range []store.ConnectFlow{
		{ID: "fa", Server: "gh", Subject: "alice", ExpiresAt: exp},
		{ID: "fb", Server: "gh", Subject: "bob", ExpiresAt: exp},
	} {
		if err := s.PutConnectFlow(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	n, err := other.Purge(ctx, "alice")
	if err != nil || n < 3 {
		t.Fatalf("Purge(alice) = %d, %v; want at least 3 rows (2 connections, 1 flow)", n, err)
	}
	if cs, _ := s.Connections(ctx, "alice"); len(cs) != 0 {
		t.Fatalf("alice's connections after purge: %q", names(cs))
	}
	if _, ok, _ := s.TakeConnectFlow(ctx, "fa", time.Now()); ok {
		t.Fatal("alice's flow survived the purge")
	}
	if _, ok, _ := s.TakeConnectFlow(ctx, "fb", time.Now()); !ok {
		t.Fatal("bob's flow went with alice's purge")
	}
	// Purge of the empty owner does not reach the service connection.
	if _, err := s.Purge(ctx, ""); err != nil {
		t.Fatal(err)
	}
	all, _ := s.Connections(ctx, "")
	if names(all) != "gh/ gh/bob " {
		t.Fatalf("after purges: %q; want the service and bob's", names(all))
	}
}

func testLease(t *testing.T, s, other store.Store) {
	ctx := ctxT(t)
	lease := func(st store.ConnectionStore, holder string, until time.Time) bool {
		t.Helper()
		ok, err := st.LeaseRefresh(ctx, "gh", "alice", holder, until)
		if err != nil {
			t.Fatalf("LeaseRefresh(%s): %v", holder, err)
		}
		return ok
	}
	hour := time.Now().Add(time.Hour)
	if !lease(s, "a", hour) {
		t.Fatal("first lease refused")
	}
	if lease(other, "b", hour) {
		t.Fatal("b took a's valid lease")
	}
	if !lease(s, "a", hour.Add(time.Minute)) {
		t.Fatal("a could not renew its own lease")
	}
	// Another connection's lease is independent.
	if ok, err := other.LeaseRefresh(ctx, "gh", "bob", "b", hour); err != nil || !ok {
		t.Fatalf("lease of another subject = %v, %v", ok, err)
	}
	if ok, err := other.LeaseRefresh(ctx, "gh", "", "b", hour); err != nil || !ok {
		t.Fatalf("lease of the service connection = %v, %v", ok, err)
	}
	// a releases (renews to the past): b takes it.
	if !lease(s, "a", time.Now().Add(-time.Second)) {
		t.Fatal("a could not release")
	}
	if !lease(other, "b", hour) {
		t.Fatal("b refused after a released")
	}
	if lease(s, "a", hour) {
		t.Fatal("a took b's valid lease")
	}
}

func testLeaseRace(t *testing.T, s, other store.Store) {
	ctx := ctxT(t)
	for round := range 5 {
		subject := fmt.Sprintf("s%d", round)
		const n = 8
		var won atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, n)
		until := time.Now().Add(time.Hour)
		for i := range n {
			st := s
			if i%2 == 1 {
				st = other
			}
			wg.Go(func() {
				ok, err := st.LeaseRefresh(ctx, "gh", subject, fmt.Sprintf("h%d", i), until)
				if err != nil {
					errs <- err
					return
				}
				if ok {
					won.Add(1)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if w := won.Load(); w != 1 {
			t.Fatalf("round %d: %d holders got the lease, want exactly 1", round, w)
		}
	}
}

func testFlow(t *testing.T, s, other store.Store) {
	ctx := ctxT(t)
	now := time.Now()
	f := store.ConnectFlow{ID: "flow-1", Server: "gh", Subject: "alice", Sealed: []byte("state"), ExpiresAt: now.Add(time.Minute)}
	if err := s.PutConnectFlow(ctx, f); err != nil {
		t.Fatal(err)
	}
	if err := other.PutConnectFlow(ctx, f); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second put of one ID = %v, want ErrConflict", err)
	}
	got, ok, err := other.TakeConnectFlow(ctx, "flow-1", now)
	if err != nil || !ok || got.ID != "flow-1" || got.Server != "gh" || got.Subject != "alice" ||
		string(got.Sealed) != "state" || !got.ExpiresAt.Equal(f.ExpiresAt.Truncate(time.Millisecond)) {
		t.Fatalf("Take = %+v, %v, %v", got, ok, err)
	}
	if _, ok, err := s.TakeConnectFlow(ctx, "flow-1", now); err != nil || ok {
		t.Fatalf("second Take = %v, %v; want false (single use)", ok, err)
	}
	for _, id := range []string{"unknown", ""} {
		if _, ok, err := s.TakeConnectFlow(ctx, id, now); err != nil || ok {
			t.Fatalf("Take(%q) = %v, %v; want false", id, ok, err)
		}
	}
	// Expired: not given, and consumed.
	exp := store.ConnectFlow{ID: "flow-2", Server: "gh", Subject: "alice", ExpiresAt: now.Add(time.Minute)}
	if err := s.PutConnectFlow(ctx, exp); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.TakeConnectFlow(ctx, "flow-2", now.Add(time.Minute)); err != nil || ok {
		t.Fatalf("Take at expiry = %v, %v; want false", ok, err)
	}
	if _, ok, _ := s.TakeConnectFlow(ctx, "flow-2", now); ok {
		t.Fatal("an expired flow taken later at an earlier time: it must have been consumed")
	}
	// Sweep removes the expired ones only.
	for i, d := range []time.Duration{-time.Minute, -time.Second, time.Hour} {
		if err := s.PutConnectFlow(ctx, store.ConnectFlow{ID: fmt.Sprintf("sw%d", i), Server: "gh", ExpiresAt: now.Add(d)}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := other.SweepConnectFlows(ctx, now); err != nil || n != 2 {
		t.Fatalf("Sweep = %d, %v; want 2", n, err)
	}
	if _, ok, _ := s.TakeConnectFlow(ctx, "sw2", now); !ok {
		t.Fatal("Sweep removed a live flow")
	}
}

func testFlowRace(t *testing.T, s, other store.Store) {
	ctx := ctxT(t)
	now := time.Now()
	for round := range 5 {
		id := fmt.Sprintf("race-%d", round)
		if err := s.PutConnectFlow(ctx, store.ConnectFlow{ID: id, Server: "gh", Subject: "alice", ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		const n = 8
		var won atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			st := s
			if i%2 == 1 {
				st = other
			}
			wg.Go(func() {
				_, ok, err := st.TakeConnectFlow(ctx, id, now)
				if err != nil {
					errs <- err
					return
				}
				if ok {
					won.Add(1)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if w := won.Load(); w != 1 {
			t.Fatalf("round %d: %d takers got the flow, want exactly 1", round, w)
		}
	}
}
