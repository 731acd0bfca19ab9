package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// listing is an observed listing: the trusted baseline with the tool
// "charge" changed and a tool "refund" added (tag: what differs).
func listing(tag string) store.Baseline {
	return store.Baseline{
		tool("charge"):                                  {Value: "fp-charge-" + tag, Contract: []byte(`{"name":"charge","description":"` + tag + `"}`)},
		tool("refund"):                                  {Value: "fp-refund"},
		{Kind: store.KindPrompt, Name: "charge"}:        {Value: "fp-prompt", Contract: []byte(`{"name":"charge"}`)},
		store.BaselineKey{Kind: store.KindInstructions}: {Value: "fp-instr"},
		{Kind: store.KindMarker, Name: "prompts"}:       {Value: store.PinnedMarker},
	}
}

// trusted is the baseline the drift tests start from.
func trusted() store.Baseline {
	b := listing("trusted")
	delete(b, tool("refund"))
	return b
}

// obs is an observation of srv by instance under version v.
func obs(srv, instance, fp string, v int64, seen time.Time) store.Observation {
	return store.Observation{ServerID: srv, Listing: fp, BaselineVersion: v, SeenBy: instance, SeenAt: seen,
		Entries: listing(fp), Changes: []byte(`[{"kind":"tool","name":"charge","change":"changed"}]`), Drifted: true}
}

// sameObservation compares what a store read back, times with Equal.
func sameObservation(a, b store.Observation) bool {
	return a.ID == b.ID && a.ServerID == b.ServerID && a.Listing == b.Listing && a.BaselineVersion == b.BaselineVersion &&
		a.SeenBy == b.SeenBy && a.SeenAt.Equal(b.SeenAt) && a.LastSeenAt.Equal(b.LastSeenAt) &&
		bytes.Equal(a.Changes, b.Changes) && (a.Changes == nil) == (b.Changes == nil) && a.Drifted == b.Drifted &&
		a.TrustedAt.Equal(b.TrustedAt) && (a.Entries == nil) == (b.Entries == nil) && equalBaselines(a.Entries, b.Entries)
}

func fmtObservation(o store.Observation) string {
	return fmt.Sprintf("{ID:%d server:%s listing:%s v:%d by:%s seen:%v last:%v drifted:%v trusted:%v entries:%d changes:%q}",
		o.ID, o.ServerID, o.Listing, o.BaselineVersion, o.SeenBy, o.SeenAt, o.LastSeenAt, o.Drifted, o.TrustedAt, len(o.Entries), o.Changes)
}

func wantObservations(t *testing.T, what string, got []store.Observation, want ...store.Observation) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: nil slice, want an empty one", what)
	}
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = sameObservation(got[i], want[i])
	}
	if !ok {
		var g, w []string
		for _, o := range got {
			g = append(g, fmtObservation(o))
		}
		for _, o := range want {
			w = append(w, fmtObservation(o))
		}
		t.Fatalf("%s =\n  %v\nwant\n  %v", what, g, w)
	}
}

// trustedServer puts the server id with the trusted baseline and returns
// its version.
func trustedServer(t *testing.T, s store.Store, id string) int64 {
	t.Helper()
	putServer(t, s, id)
	get(s.SaveBaseline(ctxT(t), id, trusted())).ok(t)
	return get(s.BaselineVersion(ctxT(t), id)).ok(t)
}

func testObserveListing(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	_, _, err := s.ObserveListing(ctx, obs("ghost", "gw-1", "L1", 0, at(0)))
	wantErr(t, err, store.ErrNotFound)
	v := trustedServer(t, s, "pay")
	for name, o := range map[string]store.Observation{
		"no server ID":    {Listing: "L", SeenBy: "i"},
		"no listing":      {ServerID: "pay", SeenBy: "i"},
		"no instance":     {ServerID: "pay", Listing: "L"},
		"negative":        {ServerID: "pay", Listing: "L", SeenBy: "i", BaselineVersion: -1},
		"NUL in instance": {ServerID: "pay", Listing: "L", SeenBy: "gw\x00"},
		"bad listing":     {ServerID: "pay", Listing: "L\xff", SeenBy: "i"},
		"bad entry":       {ServerID: "pay", Listing: "L", SeenBy: "i", Entries: store.Baseline{{Kind: "tools", Name: "x"}: {}}},
	} {
		_, _, err := s.ObserveListing(ctx, o)
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: ObserveListing error = %v, want ErrInvalid", name, err)
		}
	}

	// The first observation is added, with everything read back.
	in := obs("pay", "gw-1", "L1", v, at(time.Second))
	first, added, err := s.ObserveListing(ctx, in)
	if err != nil || !added || first.ID <= 0 {
		t.Fatalf("first ObserveListing = %+v, %v, %v", first, added, err)
	}
	want := in
	want.ID, want.LastSeenAt = first.ID, in.SeenAt
	if !sameObservation(first, want) {
		t.Fatalf("ObserveListing returned %s, want %s", fmtObservation(first), fmtObservation(want))
	}
	if got := get(s.GetObservation(ctx, first.ID)).ok(t); !sameObservation(got, want) {
		t.Fatalf("GetObservation = %s, want %s", fmtObservation(got), fmtObservation(want))
	}
	in.Entries[tool("charge")].Contract[0] = 'X' // the store must have copied
	in.Changes[0] = 'X'
	if got := get(s.GetObservation(ctx, first.ID)).ok(t); got.Entries[tool("charge")].Contract[0] != '{' || got.Changes[0] != '[' {
		t.Fatal("a caller's change reached a stored observation")
	}

	// The same listing by the same instance under the same version: only
	// LastSeenAt moves (forward only).
	again, added, err := s.ObserveListing(ctx, obs("pay", "gw-1", "L1", v, at(5*time.Second)))
	if err != nil || added || again.ID != first.ID || !again.SeenAt.Equal(at(time.Second)) || !again.LastSeenAt.Equal(at(5*time.Second)) {
		t.Fatalf("seen again = %s, added %v, %v; want ID %d, LastSeenAt moved", fmtObservation(again), added, err, first.ID)
	}
	if !equalBaselines(again.Entries, listing("L1")) {
		t.Fatalf("seen again: entries %v", again.Entries)
	}
	back, added, err := s.ObserveListing(ctx, obs("pay", "gw-1", "L1", v, at(2*time.Second)))
	if err != nil || added || back.ID != first.ID || !back.LastSeenAt.Equal(at(5*time.Second)) {
		t.Fatalf("seen again with an earlier time = %s, %v, %v; LastSeenAt must not go back", fmtObservation(back), added, err)
	}
	if got := get(s.GetObservation(ctx, first.ID)).ok(t); !got.LastSeenAt.Equal(at(5 * time.Second)) {
		t.Fatalf("LastSeenAt read back %v", got.LastSeenAt)
	}

	// Another instance, another listing, another version: new ones.
	ids := []int64{first.ID}
	for _, o := range []store.Observation{
		obs("pay", "gw-2", "L1", v, at(6*time.Second)),
		obs("pay", "gw-1", "L2", v, at(7*time.Second)),
		obs("pay", "gw-1", "L1", v, at(8*time.Second)), // L1 again after L2: the latest is L2
		obs("pay", "gw-1", "L1", v+7, at(9*time.Second)),
	} {
		got, added, err := s.ObserveListing(ctx, o)
		if err != nil || !added || got.ID <= ids[len(ids)-1] {
			t.Fatalf("ObserveListing(%s) = %s, added %v, %v; want a new, higher ID", fmtObservation(o), fmtObservation(got), added, err)
		}
		ids = append(ids, got.ID)
	}

	// SeenAt is the store's clock when zero; Changes may be nil.
	o := obs("pay", "gw-3", "L3", v, time.Time{})
	o.Changes, o.Drifted = nil, false
	before := time.Now().Add(-time.Minute)
	got, _, err := s.ObserveListing(ctx, o)
	if err != nil || got.SeenAt.Before(before) || !got.LastSeenAt.Equal(got.SeenAt) || got.Changes != nil || got.Drifted {
		t.Fatalf("observation without a time = %s, %v", fmtObservation(got), err)
	}
	if r := get(s.GetObservation(ctx, got.ID)).ok(t); !sameObservation(r, got) {
		t.Fatalf("read back %s, want %s", fmtObservation(r), fmtObservation(got))
	}
	_, err = s.GetObservation(ctx, got.ID+1000)
	wantErr(t, err, store.ErrNotFound)
}

// Concurrent observations of one listing by one instance: one is added,
// the others see it. Several rounds (a new listing each), each released at
// once, so that the observations overlap inside the store.
func testObserveRace(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	v := trustedServer(t, s, "pay")
	const rounds, n = 10, 8
	for r := range rounds {
		fp := fmt.Sprintf("L%d", r)
		got := make([]store.Observation, n)
		added := make([]bool, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				got[i], added[i], errs[i] = s.ObserveListing(ctx, obs("pay", "gw-1", fp, v, at(time.Duration(r*n+i)*time.Second)))
			})
		}
		close(start)
		wg.Wait()
		adds := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("round %d: %v", r, errs[i])
			}
			if added[i] {
				adds++
			}
			if got[i].ID != got[0].ID {
				t.Fatalf("round %d: concurrent observations of one listing got IDs %d and %d", r, got[0].ID, got[i].ID)
			}
		}
		if adds != 1 {
			t.Fatalf("round %d: %d concurrent observations of one listing added %d, want 1", r, n, adds)
		}
		if last := get(s.GetObservation(ctx, got[0].ID)).ok(t).LastSeenAt; !last.Equal(at(time.Duration(r*n+n-1) * time.Second)) {
			t.Fatalf("round %d: LastSeenAt = %v, want the latest of the times seen", r, last)
		}
	}
	if open := get(s.OpenObservations(ctx, "pay", false)).ok(t); len(open) != 1 || open[0].Listing != fmt.Sprintf("L%d", rounds-1) {
		t.Fatalf("open observations after the rounds: %+v", open)
	}
}

func testOpenObservations(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	_, err := s.OpenObservations(ctx, "ghost", false)
	wantErr(t, err, store.ErrNotFound)
	wantObservations(t, "OpenObservations of an empty store", get(s.OpenObservations(ctx, "", true)).ok(t))
	v := trustedServer(t, s, "pay")
	w := trustedServer(t, s, "bank")
	wantObservations(t, "OpenObservations of a server never observed", get(s.OpenObservations(ctx, "pay", true)).ok(t))

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
	k1 := observe(obs("bank", "gw-1", "K1", w, at(3*time.Second)))
	observe(obs("pay", "gw-1", "L2", v, at(4*time.Second)))       // replaces a1 as gw-1's latest
	observe(obs("pay", "gw-3", "L0", v-1, at(5*time.Second)))     // judged under an older version: not open
	a2 := observe(obs("pay", "gw-1", "L2", v, at(6*time.Second))) // seen again: LastSeenAt moves
	c1 := observe(obs("pay", "gw-3", "L1", v, at(7*time.Second))) // gw-3 under the current version
	clean := obs("pay", "gw-4", "back", v, at(8*time.Second))     // a return to the baseline is open too
	clean.Entries, clean.Changes, clean.Drifted = trusted(), nil, false
	d1 := observe(clean)

	wantObservations(t, "OpenObservations(pay)", get(s.OpenObservations(ctx, "pay", true)).ok(t), b1, a2, c1, d1)
	wantObservations(t, "OpenObservations(\"\")", get(s.OpenObservations(ctx, "", true)).ok(t), b1, k1, a2, c1, d1)
	cheap := get(s.OpenObservations(ctx, "", false)).ok(t)
	for i := range cheap {
		if cheap[i].Entries != nil {
			t.Fatalf("OpenObservations without entries returned entries: %s", fmtObservation(cheap[i]))
		}
	}
	noEntries := func(os ...store.Observation) []store.Observation {
		for i := range os {
			os[i].Entries = nil
		}
		return os
	}
	wantObservations(t, "OpenObservations(\"\", false)", cheap, noEntries(b1, k1, a2, c1, d1)...)
	if got := get(s.GetObservation(ctx, a1.ID)).ok(t); !sameObservation(got, a1) {
		t.Fatalf("a superseded observation reads back as %s, want %s", fmtObservation(got), fmtObservation(a1))
	}

	// Any change of the baseline closes them: here, a save that adds.
	get(s.SaveBaseline(ctx, "pay", tools(map[string]string{"late": "fp"}))).ok(t)
	wantObservations(t, "OpenObservations(pay) after the version moved", get(s.OpenObservations(ctx, "pay", true)).ok(t))
	wantObservations(t, "OpenObservations(\"\") after pay's version moved", get(s.OpenObservations(ctx, "", true)).ok(t), k1)
	// An observation under the new version opens again.
	e1 := observe(obs("pay", "gw-1", "L2", v+1, at(9*time.Second)))
	if e1.ID <= d1.ID {
		t.Fatalf("observation under the new version has ID %d <= %d", e1.ID, d1.ID)
	}
	wantObservations(t, "OpenObservations(pay) under the new version", get(s.OpenObservations(ctx, "pay", true)).ok(t), e1)
}

func testDriftHeads(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	if h := get(s.DriftHeads(ctx)).ok(t); h == nil || len(h) != 0 {
		t.Fatalf("DriftHeads of an empty store = %#v", h)
	}
	v := trustedServer(t, s, "pay")
	putServer(t, s, "alpha")
	w := trustedServer(t, s, "zeta")
	heads := func() []store.DriftHead { return get(s.DriftHeads(ctx)).ok(t) }
	want := []store.DriftHead{{ServerID: "alpha"}, {ServerID: "pay", BaselineVersion: v}, {ServerID: "zeta", BaselineVersion: w}}
	if h := heads(); !slices.Equal(h, want) {
		t.Fatalf("DriftHeads = %+v, want %+v", h, want)
	}
	o1, _, err := s.ObserveListing(ctx, obs("pay", "gw-1", "L1", v, at(time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	o2, _, err := s.ObserveListing(ctx, obs("zeta", "gw-1", "Z1", w, at(time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	want[1].LastObservation, want[2].LastObservation = o1.ID, o2.ID
	if h := heads(); !slices.Equal(h, want) {
		t.Fatalf("DriftHeads = %+v, want %+v", h, want)
	}
	// Seen again: the head does not move.
	if _, _, err := s.ObserveListing(ctx, obs("pay", "gw-1", "L1", v, at(2*time.Second))); err != nil {
		t.Fatal(err)
	}
	if h := heads(); !slices.Equal(h, want) {
		t.Fatalf("DriftHeads after a repeat = %+v, want %+v", h, want)
	}
	o3, _, err := s.ObserveListing(ctx, obs("pay", "gw-2", "L1", v, at(3*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	get(s.ReplaceBaseline(ctx, "zeta", trusted())).ok(t)
	want[1].LastObservation, want[2].BaselineVersion = o3.ID, w+1
	if h := heads(); !slices.Equal(h, want) {
		t.Fatalf("DriftHeads = %+v, want %+v", h, want)
	}
}

// DeleteServer takes the server's observations with it; IDs are not
// handed out again.
func testDeleteServerObservations(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	v := trustedServer(t, s, "pay")
	trustedServer(t, s, "keep")
	o, _, err := s.ObserveListing(ctx, obs("pay", "gw-1", "L1", v, at(time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	k, _, err := s.ObserveListing(ctx, obs("keep", "gw-1", "K1", v, at(time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteServer(ctx, "pay"); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetObservation(ctx, o.ID)
	wantErr(t, err, store.ErrNotFound)
	wantObservations(t, "OpenObservations(\"\") after a delete", get(s.OpenObservations(ctx, "", true)).ok(t), k)
	putServer(t, s, "pay")
	wantObservations(t, "OpenObservations of a re-created server", get(s.OpenObservations(ctx, "pay", true)).ok(t))
	n, _, err := s.ObserveListing(ctx, obs("pay", "gw-1", "L1", 0, at(2*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	if n.ID <= k.ID {
		t.Fatalf("an observation after a delete got ID %d, not above %d", n.ID, k.ID)
	}
	for _, h := range get(s.DriftHeads(ctx)).ok(t) {
		if h.ServerID == "pay" && h.LastObservation != n.ID {
			t.Fatalf("head of the re-created server = %+v", h)
		}
	}
}
