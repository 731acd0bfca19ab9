// Package sesstest is the conformance suite of store.SessionStore (callers'
// sessions shared by replicas), beside package storetest: every store
// implementation runs it.
//
//	func TestSessionConformance(t *testing.T) {
//		sesstest.Run(t, func(t *testing.T) (store.Store, store.Store) {
//			path := filepath.Join(t.TempDir(), "gatehouse.db")
//			return openAt(t, path), openAt(t, path) // two handles on one database
//		})
//	}
package sesstest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// Opener returns a fresh, empty store for one test and a second handle on
// the same database (the memory store returns itself twice), their Close
// registered with t.Cleanup.
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
		{"Expiry", testExpiry},
		{"Close", testClose},
		{"CloseRace", testCloseRace},
		{"Sweep", testSweep},
		{"Purge", testPurge},
		{"Count", testCount},
		{"Swap", testSwap},
		{"SwapRace", testSwapRace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, other := open(t)
			tc.fn(t, s, other)
		})
	}
}

var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func sess(id string) store.Session {
	return store.Session{ID: id, Subject: "alice", UserID: "u-alice", State: []byte(`{"initializeParams":{"protocolVersion":"2025-11-25"}}`),
		ExpiresAt: base.Add(10*time.Minute + 1234567*time.Nanosecond)}
}

func get(t *testing.T, s store.Store, id string, now time.Time) (store.Session, bool) {
	t.Helper()
	got, ok, err := s.Session(t.Context(), id, now)
	if err != nil {
		t.Fatalf("Session(%q): %v", id, err)
	}
	return got, ok
}

// A session put through one handle reads back, to the millisecond, through
// the other; a second put replaces what may change; unknown IDs are not
// found.
func testPutGet(t *testing.T, s, other store.Store) {
	ctx := t.Context()
	in := sess("sid-1")
	if err := s.PutSession(ctx, in); err != nil {
		t.Fatal(err)
	}
	got, ok := get(t, other, "sid-1", base)
	want := in
	want.ExpiresAt = base.Add(10*time.Minute + time.Millisecond)
	if !ok || got.ID != want.ID || got.Subject != want.Subject || got.UserID != want.UserID || !bytes.Equal(got.State, want.State) ||
		!got.ExpiresAt.Equal(want.ExpiresAt) || got.Closed {
		t.Fatalf("read back %+v, %v; want %+v", got, ok, want)
	}
	in.State, in.ExpiresAt = []byte(`{"logLevel":"debug"}`), base.Add(20*time.Minute)
	if err := other.PutSession(ctx, in); err != nil {
		t.Fatal(err)
	}
	if got, ok := get(t, s, "sid-1", base); !ok || string(got.State) != `{"logLevel":"debug"}` || !got.ExpiresAt.Equal(base.Add(20*time.Minute)) {
		t.Fatalf("after the second put: %+v, %v", got, ok)
	}
	for _, id := range []string{"sid-2", "", "SID-1", "sid-1 "} {
		if got, ok := get(t, s, id, base); ok {
			t.Errorf("Session(%q) found %+v", id, got)
		}
	}
	// Without state: read back as nil, not an empty slice or an error.
	if err := s.PutSession(ctx, store.Session{ID: "bare", ExpiresAt: base.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if got, ok := get(t, other, "bare", base); !ok || got.State != nil || got.Subject != "" {
		t.Fatalf("bare session: %+v, %v", got, ok)
	}
}

// Each way a session cannot be stored is ErrInvalid, and stores nothing.
func testInvalid(t *testing.T, s, _ store.Store) {
	for name, in := range map[string]store.Session{
		"no ID":     {Subject: "alice", ExpiresAt: base},
		"no expiry": {ID: "sid-x", Subject: "alice"},
	} {
		if err := s.PutSession(t.Context(), in); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if _, ok := get(t, s, "sid-x", base); ok {
		t.Error("an invalid session was stored")
	}
}

// A session ends at ExpiresAt unless touched before; a touch never
// shortens it and never revives an expired one.
func testExpiry(t *testing.T, s, other store.Store) {
	ctx := t.Context()
	in := sess("sid-e")
	in.ExpiresAt = base.Add(time.Minute)
	if err := s.PutSession(ctx, in); err != nil {
		t.Fatal(err)
	}
	if _, ok := get(t, s, "sid-e", base.Add(time.Minute)); ok {
		t.Fatal("found at its expiry")
	}
	if _, ok := get(t, s, "sid-e", base.Add(time.Minute-time.Millisecond)); !ok {
		t.Fatal("not found just before its expiry")
	}
	if ok, err := other.TouchSession(ctx, "sid-e", base.Add(30*time.Second), base.Add(5*time.Minute)); err != nil || !ok {
		t.Fatalf("touch: %v, %v", ok, err)
	}
	if got, ok := get(t, s, "sid-e", base.Add(4*time.Minute)); !ok || !got.ExpiresAt.Equal(base.Add(5*time.Minute)) {
		t.Fatalf("after the touch: %+v, %v", got, ok)
	}
	if ok, err := s.TouchSession(ctx, "sid-e", base.Add(time.Minute), base.Add(2*time.Minute)); err != nil || !ok {
		t.Fatalf("an earlier touch: %v, %v", ok, err)
	}
	if got, _ := get(t, s, "sid-e", base); !got.ExpiresAt.Equal(base.Add(5 * time.Minute)) {
		t.Fatalf("an earlier touch moved the expiry to %v", got.ExpiresAt)
	}
	if ok, err := s.TouchSession(ctx, "sid-e", base.Add(5*time.Minute), base.Add(10*time.Minute)); err != nil || ok {
		t.Fatalf("touching an expired session: %v, %v (want false)", ok, err)
	}
	if _, ok := get(t, s, "sid-e", base.Add(6*time.Minute)); ok {
		t.Fatal("an expired session was revived")
	}
	if ok, err := s.TouchSession(ctx, "nobody", base, base.Add(time.Hour)); err != nil || ok {
		t.Fatalf("touching an unknown session: %v, %v", ok, err)
	}
}

// A closed session reads back closed on every handle, is not touched,
// reopened or replaced, and closes once.
func testClose(t *testing.T, s, other store.Store) {
	ctx := t.Context()
	in := sess("sid-c")
	if err := s.PutSession(ctx, in); err != nil {
		t.Fatal(err)
	}
	if ok, err := other.CloseSession(ctx, "sid-c", base); err != nil || !ok {
		t.Fatalf("close: %v, %v", ok, err)
	}
	if ok, err := s.CloseSession(ctx, "sid-c", base); err != nil || ok {
		t.Fatalf("second close: %v, %v (want false)", ok, err)
	}
	got, ok := get(t, s, "sid-c", base)
	if !ok || !got.Closed || got.Subject != "alice" {
		t.Fatalf("closed session reads %+v, %v", got, ok)
	}
	if ok, err := s.TouchSession(ctx, "sid-c", base, base.Add(time.Hour)); err != nil || ok {
		t.Fatalf("touching a closed session: %v, %v (want false)", ok, err)
	}
	in.Subject, in.State = "mallory", []byte(`{}`)
	if err := s.PutSession(ctx, in); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("put over a closed session: %v, want ErrConflict", err)
	}
	if got, _ := get(t, other, "sid-c", base); !got.Closed || got.Subject != "alice" || string(got.State) == `{}` {
		t.Fatalf("the closed session changed: %+v", got)
	}
	if ok, err := s.CloseSession(ctx, "nobody", base); err != nil || ok {
		t.Fatalf("closing an unknown session: %v, %v", ok, err)
	}
}

// Of concurrent closes through two handles, exactly one reports the
// session live.
func testCloseRace(t *testing.T, s, other store.Store) {
	ctx := t.Context()
	const n = 8
	for i := range n {
		if err := s.PutSession(ctx, sess(fmt.Sprintf("sid-r%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		for _, h := range []store.Store{s, other, s, other} {
			wg.Go(func() {
				ok, err := h.CloseSession(ctx, fmt.Sprintf("sid-r%d", i), base)
				if err != nil {
					t.Error(err)
				}
				if ok {
					wins.Add(1)
				}
			})
		}
	}
	wg.Wait()
	if wins.Load() != n {
		t.Fatalf("%d closes won for %d sessions", wins.Load(), n)
	}
}

// Sweep deletes the expired sessions, closed or not, and only those.
func testSweep(t *testing.T, s, other store.Store) {
	ctx := t.Context()
	for i, d := range []time.Duration{time.Minute, 2 * time.Minute, time.Hour} {
		in := sess(fmt.Sprintf("sid-s%d", i))
		in.ExpiresAt = base.Add(d)
		if err := s.PutSession(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CloseSession(ctx, "sid-s1", base); err != nil {
		t.Fatal(err)
	}
	n, err := other.SweepSessions(ctx, base.Add(2*time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("sweep: %d, %v (want 2)", n, err)
	}
	if _, ok := get(t, s, "sid-s2", base); !ok {
		t.Fatal("the live session was swept")
	}
	for _, id := range []string{"sid-s0", "sid-s1"} {
		if _, ok := get(t, s, id, base); ok {
			t.Errorf("%s survived the sweep", id)
		}
	}
	// A swept ID may be used again (the row is gone).
	if err := s.PutSession(ctx, sess("sid-s1")); err != nil {
		t.Fatalf("put after sweep: %v", err)
	}
}

// Purging a subject deletes its sessions, and no one else's.
func testPurge(t *testing.T, s, other store.Store) {
	ctx := t.Context()
	a, b := sess("sid-alice"), sess("sid-bob")
	b.Subject = "bob"
	for _, in := range []store.Session{a, b} {
		if err := s.PutSession(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := other.Purge(ctx, "alice"); err != nil || n < 1 {
		t.Fatalf("Purge(alice) = %d, %v", n, err)
	}
	if _, ok := get(t, s, "sid-alice", base); ok {
		t.Error("alice's session survived her purge")
	}
	if _, ok := get(t, s, "sid-bob", base); !ok {
		t.Error("bob's session went with alice's purge")
	}
}

// CountSessions counts a subject's live sessions: not another subject's,
// not closed ones, not expired ones.
func testCount(t *testing.T, s, other store.Store) {
	ctx := t.Context()
	for i, c := range []struct {
		subject string
		life    time.Duration
	}{{"alice", time.Hour}, {"alice", time.Hour}, {"alice", time.Minute}, {"alice", time.Hour}, {"bob", time.Hour}} {
		in := sess(fmt.Sprintf("sid-n%d", i))
		in.Subject, in.ExpiresAt = c.subject, base.Add(c.life)
		if err := s.PutSession(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := other.CloseSession(ctx, "sid-n3", base); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		subject string
		at      time.Time
		want    int
	}{{"alice", base, 3}, {"alice", base.Add(time.Minute), 2}, {"bob", base, 1}, {"carol", base, 0}, {"", base, 0}} {
		if n, err := other.CountSessions(ctx, c.subject, c.at); err != nil || n != c.want {
			t.Errorf("CountSessions(%q, %v) = %d, %v; want %d", c.subject, c.at, n, err, c.want)
		}
	}
}

// A swap replaces the State only when it is the one read, only on a live
// session, and leaves everything else of the row as it was.
func testSwap(t *testing.T, s, other store.Store) {
	ctx := t.Context()
	in := sess("sid-w")
	if err := s.PutSession(ctx, in); err != nil {
		t.Fatal(err)
	}
	swap := func(h store.Store, id string, old, state []byte, now time.Time) bool {
		t.Helper()
		ok, err := h.SwapSession(ctx, id, old, state, now)
		if err != nil {
			t.Fatalf("SwapSession(%q): %v", id, err)
		}
		return ok
	}
	if swap(other, "sid-w", []byte(`{"stale":true}`), []byte(`{"lost":true}`), base) {
		t.Fatal("a swap from a state that is not the row's replaced it")
	}
	if !swap(other, "sid-w", in.State, []byte(`{"logLevel":"info"}`), base) {
		t.Fatal("a swap from the row's state was refused")
	}
	got, ok := get(t, s, "sid-w", base)
	if !ok || string(got.State) != `{"logLevel":"info"}` || got.Subject != "alice" || got.UserID != "u-alice" ||
		!got.ExpiresAt.Equal(base.Add(10*time.Minute+time.Millisecond)) || got.Closed {
		t.Fatalf("after the swap: %+v, %v", got, ok)
	}
	if swap(s, "sid-w", in.State, []byte(`{"again":true}`), base) {
		t.Fatal("a second swap from the first state replaced the new one")
	}
	// A session stored without state: nil (or empty) is its state.
	if err := s.PutSession(ctx, store.Session{ID: "bare-w", ExpiresAt: base.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if swap(s, "bare-w", []byte(`{}`), []byte(`{"x":1}`), base) {
		t.Fatal("a swap from {} matched a session without state")
	}
	if !swap(other, "bare-w", []byte{}, []byte(`{"x":1}`), base) {
		t.Fatal("a swap from no state was refused on a session without one")
	}
	if !swap(s, "bare-w", []byte(`{"x":1}`), nil, base) {
		t.Fatal("a swap to no state was refused")
	}
	if got, _ := get(t, other, "bare-w", base); got.State != nil {
		t.Fatalf("swapped to no state, reads %q", got.State)
	}
	// Not on an expired, a closed or an unknown session.
	if swap(s, "bare-w", nil, []byte(`{"late":true}`), base.Add(time.Minute)) {
		t.Fatal("an expired session was swapped")
	}
	if _, err := other.CloseSession(ctx, "sid-w", base); err != nil {
		t.Fatal(err)
	}
	if swap(s, "sid-w", []byte(`{"logLevel":"info"}`), []byte(`{"closed":false}`), base) {
		t.Fatal("a closed session was swapped")
	}
	if got, _ := get(t, other, "sid-w", base); string(got.State) != `{"logLevel":"info"}` || !got.Closed {
		t.Fatalf("the closed session changed: %+v", got)
	}
	if swap(s, "nobody", nil, []byte(`{}`), base) || swap(s, "", nil, []byte(`{}`), base) {
		t.Fatal("an unknown session was swapped")
	}
}

// Read, change and swap, through two handles at once: no change is lost.
func testSwapRace(t *testing.T, s, other store.Store) {
	ctx := t.Context()
	in := sess("sid-wr")
	in.State = []byte("0")
	if err := s.PutSession(ctx, in); err != nil {
		t.Fatal(err)
	}
	const workers, each = 4, 5
	var wg sync.WaitGroup
	for w := range workers {
		h := []store.Store{s, other}[w%2]
		wg.Go(func() {
			for range each {
				for {
					cur, ok, err := h.Session(ctx, "sid-wr", base)
					if err != nil || !ok {
						t.Errorf("read: %v, %v", ok, err)
						return
					}
					var n int
					fmt.Sscan(string(cur.State), &n)
					done, err := h.SwapSession(ctx, "sid-wr", cur.State, fmt.Append(nil, n+1), base)
					if err != nil {
						t.Error(err)
						return
					}
					if done {
						break
					}
				}
			}
		})
	}
	wg.Wait()
	if got, _ := get(t, s, "sid-wr", base); string(got.State) != fmt.Sprint(workers*each) {
		t.Fatalf("after %d increments the state is %q", workers*each, got.State)
	}
}
