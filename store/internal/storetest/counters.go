package storetest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

func testCounters(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	now := time.Now()
	later := now.Add(time.Hour)
	if v := get(s.GetCounter(ctx, "c", now)).ok(t); v != 0 {
		t.Fatalf("missing counter = %d", v)
	}
	_, err := s.IncrBy(ctx, "", 1, later)
	wantErr(t, err, store.ErrInvalid)
	for i, want := range []int64{1, 3, 6} {
		if v := get(s.IncrBy(ctx, "c", int64(i+1), later)).ok(t); v != want {
			t.Fatalf("IncrBy #%d = %d, want %d", i, v, want)
		}
	}
	if v := get(s.IncrBy(ctx, "c", -2, later)).ok(t); v != 4 {
		t.Fatalf("negative delta = %d, want 4", v)
	}
	if v := get(s.GetCounter(ctx, "c", now)).ok(t); v != 4 {
		t.Fatalf("GetCounter = %d, want 4", v)
	}
	if v := get(s.IncrBy(ctx, "d", 7, time.Time{})).ok(t); v != 7 {
		t.Fatalf("other counter = %d", v)
	}
	// Expired at the deadline itself.
	if v := get(s.GetCounter(ctx, "c", later)).ok(t); v != 0 {
		t.Fatalf("GetCounter at expiry = %d, want 0", v)
	}
	if v := get(s.GetCounter(ctx, "d", now.Add(1000*time.Hour))).ok(t); v != 7 {
		t.Fatalf("never-expiring counter read %d", v)
	}
	if n := get(s.SweepCounters(ctx, now)).ok(t); n != 0 {
		t.Fatalf("early SweepCounters = %d", n)
	}
	if n := get(s.SweepCounters(ctx, later)).ok(t); n != 1 {
		t.Fatalf("SweepCounters = %d, want 1", n)
	}
	if v := get(s.GetCounter(ctx, "c", now)).ok(t); v != 0 {
		t.Fatalf("swept counter read %d", v)
	}
	if v := get(s.GetCounter(ctx, "d", now)).ok(t); v != 7 {
		t.Fatalf("sweep removed a never-expiring counter (%d)", v)
	}
	// A live counter keeps the later of its expiries.
	get(s.IncrBy(ctx, "e", 1, now.Add(time.Hour))).ok(t)
	get(s.IncrBy(ctx, "e", 1, now.Add(time.Minute))).ok(t)
	if v := get(s.GetCounter(ctx, "e", now.Add(30*time.Minute))).ok(t); v != 2 {
		t.Fatalf("counter lost its later expiry: %d", v)
	}
}

func testCountersConcurrent(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	const n = 50
	exp := time.Now().Add(time.Hour)
	var wg sync.WaitGroup
	vals := make([]int64, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { vals[i], errs[i] = s.IncrBy(ctx, "hot", 1, exp) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(vals)
	for i, v := range vals {
		if v != int64(i+1) {
			t.Fatalf("returned values %v are not exactly 1..%d", vals, n)
		}
	}
	if v := get(s.GetCounter(ctx, "hot", time.Now())).ok(t); v != n {
		t.Fatalf("counter = %d, want %d", v, n)
	}
}

func testCounterWindow(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	now := time.Now()
	// A window that has already ended (by the store's clock) ...
	if v := get(s.IncrBy(ctx, "win", 5, now.Add(-time.Second))).ok(t); v != 5 {
		t.Fatalf("first IncrBy = %d", v)
	}
	// ... restarts from zero on the next IncrBy, with the new expiry.
	if v := get(s.IncrBy(ctx, "win", 1, now.Add(time.Hour))).ok(t); v != 1 {
		t.Fatalf("IncrBy after expiry = %d, want 1 (restart)", v)
	}
	if v := get(s.IncrBy(ctx, "win", 1, now.Add(time.Hour))).ok(t); v != 2 {
		t.Fatalf("IncrBy in the new window = %d, want 2", v)
	}
	if v := get(s.GetCounter(ctx, "win", now)).ok(t); v != 2 {
		t.Fatalf("GetCounter = %d", v)
	}
}
