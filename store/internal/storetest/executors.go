package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

func executor(id, instance string, started, aliveUntil time.Duration) store.Executor {
	return store.Executor{ID: id, Instance: instance, StartedAt: at(started), AliveUntil: at(aliveUntil)}
}

func testExecutors(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	_, err := s.GetExecutor(ctx, "gw-a#1")
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.HeartbeatExecutor(ctx, "gw-a#1", at(time.Hour)), store.ErrNotFound)
	wantErr(t, s.StopExecutor(ctx, "gw-a#1", at(time.Hour)), store.ErrNotFound)

	e := executor("gw-a#1", "gw-a", 0, time.Minute)
	e.StoppedAt = at(time.Second) // ignored: a registered executor runs
	if err := s.RegisterExecutor(ctx, e); err != nil {
		t.Fatal(err)
	}
	got := get(s.GetExecutor(ctx, "gw-a#1")).ok(t)
	if got.ID != "gw-a#1" || got.Instance != "gw-a" || !got.StartedAt.Equal(at(0)) || !got.AliveUntil.Equal(at(time.Minute)) || !got.StoppedAt.IsZero() {
		t.Fatalf("registered = %+v", got)
	}
	if got.Dead(at(59*time.Second)) || !got.Dead(at(time.Minute)) {
		t.Fatalf("Dead of %+v: alive until exactly AliveUntil", got)
	}
	wantErr(t, s.RegisterExecutor(ctx, executor("gw-a#1", "gw-b", 0, time.Hour)), store.ErrConflict)
	if err := s.HeartbeatExecutor(ctx, "gw-a#1", at(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := get(s.GetExecutor(ctx, "gw-a#1")).ok(t); !got.AliveUntil.Equal(at(5 * time.Minute)) {
		t.Fatalf("after heartbeat = %+v", got)
	}

	// Another instance is untouched by a registration; a new incarnation
	// of the same instance stops the old one at its start.
	if err := s.RegisterExecutor(ctx, executor("gw-b#1", "gw-b", time.Second, time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := get(s.GetExecutor(ctx, "gw-a#1")).ok(t); !got.StoppedAt.IsZero() {
		t.Fatalf("another instance's registration stopped gw-a#1: %+v", got)
	}
	if err := s.RegisterExecutor(ctx, executor("gw-a#2", "gw-a", 2*time.Second, time.Hour)); err != nil {
		t.Fatal(err)
	}
	old := get(s.GetExecutor(ctx, "gw-a#1")).ok(t)
	if !old.StoppedAt.Equal(at(2*time.Second)) || !old.Dead(at(3*time.Second)) {
		t.Fatalf("superseded incarnation = %+v, want stopped at its successor's start", old)
	}
	if got := get(s.GetExecutor(ctx, "gw-a#2")).ok(t); !got.StoppedAt.IsZero() || got.Dead(at(3*time.Second)) {
		t.Fatalf("new incarnation = %+v", got)
	}
	if got := get(s.GetExecutor(ctx, "gw-b#1")).ok(t); !got.StoppedAt.IsZero() {
		t.Fatalf("gw-b#1 stopped by gw-a's restart: %+v", got)
	}
	// A stopped executor stays dead.
	wantErr(t, s.HeartbeatExecutor(ctx, "gw-a#1", at(time.Hour)), store.ErrExecutorStopped)
	if got := get(s.GetExecutor(ctx, "gw-a#1")).ok(t); !got.AliveUntil.Equal(at(5 * time.Minute)) {
		t.Fatalf("a refused heartbeat changed %+v", got)
	}

	// A clean stop; stopping again changes nothing.
	if err := s.StopExecutor(ctx, "gw-b#1", at(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.StopExecutor(ctx, "gw-b#1", at(20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := get(s.GetExecutor(ctx, "gw-b#1")).ok(t); !got.StoppedAt.Equal(at(10 * time.Second)) {
		t.Fatalf("stopped = %+v, want stopped at 10s", got)
	}
	wantErr(t, s.HeartbeatExecutor(ctx, "gw-b#1", at(time.Hour)), store.ErrExecutorStopped)
}

func testExecutorValidation(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	for name, e := range map[string]store.Executor{
		"no ID":          executor("", "gw", 0, time.Minute),
		"no instance":    executor("gw#1", "", 0, time.Minute),
		"no alive until": {ID: "gw#1", Instance: "gw"},
	} {
		wantErr(t, s.RegisterExecutor(ctx, e), store.ErrInvalid)
		if _, err := s.GetExecutor(ctx, e.ID); err == nil {
			t.Fatalf("%s: a refused registration was stored", name)
		}
	}
	// StartedAt defaults to the store's clock.
	if err := s.RegisterExecutor(ctx, store.Executor{ID: "gw#2", Instance: "gw", AliveUntil: at(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if got := get(s.GetExecutor(ctx, "gw#2")).ok(t); got.StartedAt.IsZero() {
		t.Fatalf("StartedAt not filled: %+v", got)
	}
	_, err := s.TakeOverFromDead(ctx, key("run", "v"), "gw#2", "", at(time.Hour), at(0))
	wantErr(t, err, store.ErrInvalid)
}

// testMarkInDoubtFromDead: a record held by a dead executor is marked in
// doubt whatever its lease; one held by a live or unknown executor, or by
// another holder than the one named, is not.
func testMarkInDoubtFromDead(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	_, err := s.MarkInDoubtFromDead(ctx, key("run", "none"), "A#1", at(0))
	wantErr(t, err, store.ErrNotFound)
	for _, e := range []store.Executor{
		executor("A#1", "A", 0, time.Hour), // superseded below
		executor("B#1", "B", 0, time.Hour), // alive
		executor("C#1", "C", 0, time.Minute),
	} {
		if err := s.RegisterExecutor(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RegisterExecutor(ctx, executor("A#2", "A", time.Second, time.Hour)); err != nil {
		t.Fatal(err)
	}
	lease := 10 * time.Minute // live throughout: only the executor's death may decide
	held := map[string]store.RecordKey{}
	for _, ex := range []string{"A#1", "B#1", "C#1", "U#1"} {
		k := key("run", "held-by-"+ex)
		get(claimOK(ctx, s, rec(k, "alice", ex, lease))).ok(t)
		held[ex] = k
	}
	now := at(2 * time.Second)
	for ex, want := range map[string]bool{"A#1": true, "B#1": false, "C#1": false, "U#1": false} {
		if got := get(s.MarkInDoubtFromDead(ctx, held[ex], ex, now)).ok(t); got != want {
			t.Errorf("MarkInDoubtFromDead of a record held by %s = %v, want %v", ex, got, want)
		}
	}
	if got := get(s.GetRecord(ctx, held["A#1"])).ok(t); got.State != store.StateInDoubt || !got.UpdatedAt.Equal(now) {
		t.Fatalf("after MarkInDoubtFromDead = %+v", got)
	}
	for _, ex := range []string{"B#1", "C#1", "U#1"} {
		if got := get(s.GetRecord(ctx, held[ex])).ok(t); got.State != store.StateStarted {
			t.Fatalf("record of a live or unknown executor %s changed: %+v", ex, got)
		}
	}
	// C#1's heartbeat lapses at 1m: dead from then on.
	if get(s.MarkInDoubtFromDead(ctx, held["C#1"], "C#1", at(59*time.Second))).ok(t) {
		t.Fatal("marked before the heartbeat lapsed")
	}
	if !get(s.MarkInDoubtFromDead(ctx, held["C#1"], "C#1", at(time.Minute))).ok(t) {
		t.Fatal("not marked once the heartbeat lapsed")
	}
	// The compare-and-swap names the holder: a record held by a live
	// executor is not marked because a dead one is named.
	if get(s.MarkInDoubtFromDead(ctx, held["B#1"], "A#1", now)).ok(t) {
		t.Fatal("marked a record that the named dead executor does not hold")
	}
	// Only started records move; in doubt once.
	if get(s.MarkInDoubtFromDead(ctx, held["A#1"], "A#1", now)).ok(t) {
		t.Fatal("marked in doubt twice")
	}
	k := key("run", "done")
	get(claimOK(ctx, s, rec(k, "alice", "A#1", lease))).ok(t)
	if err := s.Complete(ctx, k, "A#1", store.StateSucceeded, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	if get(s.MarkInDoubtFromDead(ctx, k, "A#1", now)).ok(t) {
		t.Fatal("a completed record was marked in doubt")
	}
	// A swept executor is unknown again: its records keep the lease rules.
	k = key("run", "swept")
	get(claimOK(ctx, s, rec(k, "alice", "A#1", lease))).ok(t)
	if n := get(s.SweepExecutors(ctx, at(time.Hour))).ok(t); n == 0 {
		t.Fatal("SweepExecutors swept nothing")
	}
	if get(s.MarkInDoubtFromDead(ctx, k, "A#1", now)).ok(t) {
		t.Fatal("a record of a swept executor was marked in doubt")
	}
}

func testTakeOverFromDead(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	_, err := s.TakeOverFromDead(ctx, key("run", "none"), "A#1", "B#1", at(time.Hour), at(0))
	wantErr(t, err, store.ErrNotFound)
	if err := s.RegisterExecutor(ctx, executor("A#1", "A", 0, time.Hour)); err != nil {
		t.Fatal(err)
	}
	k := key("run", "t")
	r := rec(k, "alice", "A#1", 10*time.Minute)
	r.ExpiresAt = at(11 * time.Minute)
	get(claimOK(ctx, s, r)).ok(t)
	if get(s.TakeOverFromDead(ctx, k, "A#1", "B#1", at(20*time.Minute), at(time.Second))).ok(t) {
		t.Fatal("took over from a live executor")
	}
	if err := s.StopExecutor(ctx, "A#1", at(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if !get(s.TakeOverFromDead(ctx, k, "A#1", "B#1", at(20*time.Minute), at(3*time.Second))).ok(t) {
		t.Fatal("did not take over from a stopped executor")
	}
	got := get(s.GetRecord(ctx, k)).ok(t)
	if got.Executor != "B#1" || got.State != store.StateStarted || !got.LeaseUntil.Equal(at(20*time.Minute)) ||
		!got.UpdatedAt.Equal(at(3*time.Second)) || got.ExpiresAt.Before(got.LeaseUntil) {
		t.Fatalf("after TakeOverFromDead = %+v", got)
	}
	// B#1 holds it now (it is unknown to the registry, so not dead).
	if get(s.TakeOverFromDead(ctx, k, "A#1", "C#1", at(time.Hour), at(4*time.Second))).ok(t) {
		t.Fatal("took over twice from the same holder")
	}
	wantErr(t, s.Complete(ctx, k, "A#1", store.StateSucceeded, []byte("late")), store.ErrLeaseLost)
	if err := s.Complete(ctx, k, "B#1", store.StateSucceeded, []byte("ok")); err != nil {
		t.Fatal(err)
	}
}

// testTakeOverFromDeadRace: replicas race to take over one dead
// executor's record; exactly one wins.
func testTakeOverFromDeadRace(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	if err := s.RegisterExecutor(ctx, executor("A#1", "A", 0, time.Minute)); err != nil {
		t.Fatal(err)
	}
	k := key("run", "race")
	get(claimOK(ctx, s, rec(k, "alice", "A#1", time.Hour))).ok(t)
	const n = 10
	var wg sync.WaitGroup
	won := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			if i%2 == 0 {
				won[i], errs[i] = s.TakeOverFromDead(ctx, k, "A#1", fmt.Sprintf("X%d", i), at(2*time.Hour), at(2*time.Minute))
			} else {
				won[i], errs[i] = s.MarkInDoubtFromDead(ctx, k, "A#1", at(2*time.Minute))
			}
		})
	}
	wg.Wait()
	count := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if won[i] {
			count++
			got := get(s.GetRecord(ctx, k)).ok(t)
			if i%2 == 0 && got.Executor != fmt.Sprintf("X%d", i) || i%2 == 1 && got.State != store.StateInDoubt {
				t.Fatalf("winner %d but record %+v", i, got)
			}
		}
	}
	if count != 1 {
		t.Fatalf("%d concurrent moves of a dead executor's record won, want exactly 1", count)
	}
}

func testSweepExecutors(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	for _, e := range []store.Executor{
		executor("stopped", "S", 0, time.Hour),
		executor("lapsed", "L", 0, time.Minute),
		executor("alive", "A", 0, time.Hour),
	} {
		if err := s.RegisterExecutor(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.StopExecutor(ctx, "stopped", at(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n := get(s.SweepExecutors(ctx, at(59*time.Second))).ok(t); n != 0 {
		t.Fatalf("swept %d before anything was due", n)
	}
	if n := get(s.SweepExecutors(ctx, at(time.Minute))).ok(t); n != 2 {
		t.Fatalf("swept %d, want 2 (stopped and lapsed)", n)
	}
	for id, want := range map[string]bool{"stopped": false, "lapsed": false, "alive": true} {
		_, err := s.GetExecutor(ctx, id)
		if (err == nil) != want {
			t.Errorf("after sweep, %s present = %v, want %v", id, err == nil, want)
		}
	}
}
