package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// driftState is everything TrustListing may change, read back.
type driftState struct {
	baseline store.Baseline
	version  int64
	open     []store.Observation
	each     []store.Observation
	heads    []store.DriftHead
}

func readDriftState(t *testing.T, s store.Store, server string, ids ...int64) driftState {
	t.Helper()
	ctx := ctxT(t)
	st := driftState{
		baseline: get(s.GetBaseline(ctx, server)).ok(t),
		version:  get(s.BaselineVersion(ctx, server)).ok(t),
		open:     get(s.OpenObservations(ctx, "", true)).ok(t),
		heads:    get(s.DriftHeads(ctx)).ok(t),
	}
	for _, id := range ids {
		st.each = append(st.each, get(s.GetObservation(ctx, id)).ok(t))
	}
	return st
}

func (a driftState) check(t *testing.T, what string, b driftState) {
	t.Helper()
	if !equalBaselines(a.baseline, b.baseline) {
		t.Fatalf("%s: baseline %v, was %v", what, b.baseline, a.baseline)
	}
	if a.version != b.version {
		t.Fatalf("%s: version %d, was %d", what, b.version, a.version)
	}
	wantObservations(t, what+": open observations", b.open, a.open...)
	wantObservations(t, what+": observations", b.each, a.each...)
	if !slices.Equal(a.heads, b.heads) {
		t.Fatalf("%s: heads %+v, were %+v", what, b.heads, a.heads)
	}
}

// wantStale checks that err is TrustListing's stale error for listing,
// naming latest (ID 0: none) without its entries.
func wantStale(t *testing.T, err error, server, listing string, latest store.Observation) {
	t.Helper()
	var se *store.StaleListingError
	if !errors.Is(err, store.ErrStaleListing) || !errors.As(err, &se) {
		t.Fatalf("TrustListing(%q) error = %v, want a *StaleListingError", listing, err)
	}
	latest.Entries = nil
	if se.ServerID != server || se.Listing != listing || !sameObservation(se.Latest, latest) {
		t.Fatalf("stale error = {%s %s %s}, want {%s %s %s}", se.ServerID, se.Listing, fmtObservation(se.Latest), server, listing, fmtObservation(latest))
	}
	if latest.ID != 0 && !strings.Contains(err.Error(), latest.Listing) {
		t.Fatalf("stale error %q does not name the latest listing %s", err, latest.Listing)
	}
}

func testTrustListing(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	_, err := s.TrustListing(ctx, "ghost", "L1")
	wantErr(t, err, store.ErrNotFound)
	v := trustedServer(t, s, "pay")
	w := trustedServer(t, s, "bank")
	_, err = s.TrustListing(ctx, "pay", "")
	wantErr(t, err, store.ErrInvalid)
	_, err = s.TrustListing(ctx, "", "L1")
	wantErr(t, err, store.ErrInvalid)
	_, err = s.TrustListing(ctx, "pay", "L1")
	wantStale(t, err, "pay", "L1", store.Observation{})

	observe := func(o store.Observation) store.Observation {
		t.Helper()
		got, _, err := s.ObserveListing(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	a1 := observe(obs("pay", "gw-1", "L1", v, at(1*time.Second)))
	b1 := observe(obs("pay", "gw-2", "L1", v, at(2*time.Second)))
	a2 := observe(obs("pay", "gw-1", "L2", v, at(3*time.Second))) // the server changed again
	k1 := observe(obs("bank", "gw-1", "K1", w, at(4*time.Second)))
	ids := []int64{a1.ID, b1.ID, a2.ID, k1.ID}

	// What the operator reviewed first (L1) is no longer the latest: refused,
	// and so is any fingerprint that was never observed.
	before := readDriftState(t, s, "pay", ids...)
	for _, fp := range []string{"L1", "made-up", "l2", "L2 ", "K1"} {
		_, err := s.TrustListing(ctx, "pay", fp)
		wantStale(t, err, "pay", fp, a2)
		before.check(t, "after TrustListing("+fp+") was refused", readDriftState(t, s, "pay", ids...))
	}

	got, err := s.TrustListing(ctx, "pay", "L2")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != a2.ID || got.TrustedAt.IsZero() || !equalBaselines(got.Entries, listing("L2")) {
		t.Fatalf("TrustListing(L2) = %s", fmtObservation(got))
	}
	after := readDriftState(t, s, "pay", ids...)
	if !equalBaselines(after.baseline, listing("L2")) {
		t.Fatalf("baseline after the trust = %v, want the observed listing %v", after.baseline, listing("L2"))
	}
	if after.version != v+1 {
		t.Fatalf("version %d after the trust, want exactly %d", after.version, v+1)
	}
	// Every other open observation of pay closed (the version moved); bank's
	// stays.
	wantObservations(t, "open observations after the trust", after.open, k1)
	for i, o := range after.each {
		switch o.ID {
		case a2.ID:
			if !o.TrustedAt.Equal(got.TrustedAt) {
				t.Fatalf("trusted observation reads back %s, returned TrustedAt %v", fmtObservation(o), got.TrustedAt)
			}
		default:
			if !sameObservation(o, before.each[i]) {
				t.Fatalf("trusting L2 changed observation %s (was %s)", fmtObservation(o), fmtObservation(before.each[i]))
			}
		}
	}
	if b := get(s.GetBaseline(ctx, "bank")).ok(t); !equalBaselines(b, trusted()) || get(s.BaselineVersion(ctx, "bank")).ok(t) != w {
		t.Fatalf("trusting pay touched bank: %v", b)
	}

	// The same listing again: nothing is open, so it is stale.
	_, err = s.TrustListing(ctx, "pay", "L2")
	wantStale(t, err, "pay", "L2", store.Observation{})
	after.check(t, "after a second TrustListing(L2)", readDriftState(t, s, "pay", ids...))

	// The latest is the highest ID of any instance, not the trusting one's.
	c1 := observe(obs("bank", "gw-2", "K2", w, at(5*time.Second)))
	_, err = s.TrustListing(ctx, "bank", "K1")
	wantStale(t, err, "bank", "K1", c1)
	if got, err := s.TrustListing(ctx, "bank", "K2"); err != nil || got.ID != c1.ID {
		t.Fatalf("TrustListing(bank, K2) = %s, %v", fmtObservation(got), err)
	}
	wantObservations(t, "open observations after both trusts", get(s.OpenObservations(ctx, "", true)).ok(t))
}

// Concurrent trusts of one listing: exactly one succeeds, the others are
// stale, and the version moves once. Several rounds, each released at once,
// so that the trusts overlap inside the store.
func testTrustListingRace(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	v := trustedServer(t, s, "pay")
	const rounds, n = 10, 8
	for r := range rounds {
		fp := fmt.Sprintf("L%d", r)
		if _, _, err := s.ObserveListing(ctx, obs("pay", "gw-1", fp, v, at(time.Duration(r)*time.Second))); err != nil {
			t.Fatal(err)
		}
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				_, errs[i] = s.TrustListing(ctx, "pay", fp)
			})
		}
		close(start)
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, store.ErrStaleListing):
				t.Fatalf("round %d: a concurrent TrustListing failed otherwise: %v", r, err)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d of %d concurrent TrustListing calls of one listing succeeded, want exactly 1", r, ok, n)
		}
		v++
		if got := get(s.BaselineVersion(ctx, "pay")).ok(t); got != v {
			t.Fatalf("round %d: version %d after the race, want %d", r, got, v)
		}
		if b := get(s.GetBaseline(ctx, "pay")).ok(t); !equalBaselines(b, listing(fp)) {
			t.Fatalf("round %d: baseline after the race = %v", r, b)
		}
	}
}
