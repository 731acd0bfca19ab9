package trust_test

import (
	"encoding/json"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/trust"
)

func notes(entries map[string]string) trust.Pinned {
	p := trust.Pinned{Row: store.Server{ID: "notes:x", Name: "notes:x", Type: "notes"}, Kind: store.KindSkill,
		Change: pin.ChangeSkill, Marker: "notes", Entries: map[string]store.BaselineEntry{}}
	for name, fp := range entries {
		p.Entries[name] = store.BaselineEntry{Value: fp, Contract: json.RawMessage(`{"fingerprint":"` + fp + `"}`)}
	}
	return p
}

// TestPinnedLife: a listing of pinned entries on a real SQLite store
// shared by two instances: first sight trusted (even with the row made
// here), a changed entry recorded once with its contracts, the other
// instance told it changed elsewhere, a trust accepting it.
func TestPinnedLife(t *testing.T) {
	ctx := t.Context()
	st := openSQLite(t)
	a, b := trust.NewLedger(st, "a", nil), trust.NewLedger(st, "b", nil)
	v, err := a.JudgePinned(ctx, notes(map[string]string{"one": "f1", "two": "f2"}))
	if err != nil || len(v.Changes) != 0 || len(v.Elsewhere) != 0 {
		t.Fatalf("first sight: %+v %v", v, err)
	}
	if row, err := st.GetServer(ctx, "notes:x"); err != nil || row.Type != "notes" {
		t.Fatalf("row %+v %v", row, err)
	}
	changed := notes(map[string]string{"one": "f1*", "two": "f2", "three": "f3"})
	for range 2 {
		v, err = a.JudgePinned(ctx, changed)
		if err != nil || len(v.Changes) != 2 || v.Changes[0].Name != "one" || v.Changes[0].Change != pin.ChangeChanged ||
			v.Changes[1].Name != "three" || v.Changes[1].Change != pin.ChangeAdded {
			t.Fatalf("changed: %+v %v", v.Changes, err)
		}
	}
	obs, _ := st.OpenObservations(ctx, "notes:x", false)
	if len(obs) != 1 || obs[0].Listing != changed.Print() || obs[0].SeenBy != "a" {
		t.Fatalf("recorded %+v", obs)
	}
	if string(v.Changes[0].Before) != `{"fingerprint":"f1"}` || string(v.Changes[0].After) != `{"fingerprint":"f1*"}` {
		t.Fatalf("contracts %s -> %s", v.Changes[0].Before, v.Changes[0].After)
	}
	vb, err := b.JudgePinned(ctx, notes(map[string]string{"one": "f1", "two": "f2"}))
	if err != nil || len(vb.Changes) != 0 || vb.Elsewhere["one"].SeenBy != "a" || len(vb.Elsewhere) != 1 {
		t.Fatalf("b: %+v %v", vb, err)
	}
	if got := trust.Unreviewed(obs); len(got) != 1 || got[0].ServerID != "notes:x" {
		t.Fatalf("unreviewed %+v", got)
	}
	accepted, cleared, err := a.TrustPinned(ctx, changed)
	if err != nil || cleared != 3 || len(accepted) != 2 {
		t.Fatalf("trust: %+v %d %v", accepted, cleared, err)
	}
	if v, err := b.JudgePinned(ctx, changed); err != nil || len(v.Changes) != 0 || len(v.Elsewhere) != 0 {
		t.Fatalf("after the trust: %+v %v", v, err)
	}
	if notes(nil).Print() == notes(map[string]string{"one": "f1"}).Print() {
		t.Fatal("two listings, one print")
	}
}

// TestPinnedDamagedRecord: another instance's record whose changes do not
// parse is an error (the caller withholds what it cannot judge).
func TestPinnedDamagedRecord(t *testing.T) {
	ctx := t.Context()
	st := openSQLite(t)
	l := trust.NewLedger(st, "a", nil)
	p := notes(map[string]string{"one": "f1"})
	if _, err := l.JudgePinned(ctx, p); err != nil {
		t.Fatal(err)
	}
	v, _ := st.BaselineVersion(ctx, "notes:x")
	if _, _, err := st.ObserveListing(ctx, store.Observation{ServerID: "notes:x", Listing: "x", BaselineVersion: v, SeenBy: "b",
		Entries: store.Baseline{}, Changes: json.RawMessage(`{"not":"a list"}`), Drifted: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.JudgePinned(ctx, p); err == nil {
		t.Fatal("a damaged record judged")
	}
}
