package ephemeral

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

func tool(name string) store.BaselineKey { return store.BaselineKey{Kind: store.KindTool, Name: name} }

func tools(kv map[string]string) store.Baseline {
	b := store.Baseline{}
	for k, v := range kv {
		b[tool(k)] = store.BaselineEntry{Value: v}
	}
	return b
}

func equal(a, b store.Baseline) bool {
	return maps.EqualFunc(a, b, func(x, y store.BaselineEntry) bool {
		return x.Value == y.Value && bytes.Equal(x.Contract, y.Contract) && (x.Contract == nil) == (y.Contract == nil)
	})
}

func TestMissingRow(t *testing.T) {
	ctx := context.Background()
	st := New()
	if _, err := st.GetServer(ctx, "ghost"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetServer: %v", err)
	}
	if _, err := st.SaveBaseline(ctx, "ghost", tools(map[string]string{"a": "1"})); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SaveBaseline: %v", err)
	}
	if _, err := st.GetBaseline(ctx, "ghost"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetBaseline: %v", err)
	}
	if _, err := st.ReplaceBaseline(ctx, "ghost", nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ReplaceBaseline: %v", err)
	}
	if _, err := st.BaselineVersion(ctx, "ghost"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("BaselineVersion: %v", err)
	}
	if _, _, err := st.ObserveListing(ctx, store.Observation{ServerID: "ghost", Listing: "L", SeenBy: "i"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ObserveListing: %v", err)
	}
	if _, err := st.OpenObservations(ctx, "ghost", true); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("OpenObservations: %v", err)
	}
}

// Rows are copied in and out, and a put keeps the baseline and its
// version, whatever version the row carries.
func TestServerRows(t *testing.T) {
	ctx := context.Background()
	st := New()
	cat := []byte(`[{"name":"echo"}]`)
	if err := st.PutServer(ctx, store.Server{ID: "config:s", Name: "s", Type: "stdio", Catalogue: cat}); err != nil {
		t.Fatal(err)
	}
	cat[0] = 'X'
	got, err := st.GetServer(ctx, "config:s")
	if err != nil || got.Name != "s" || got.Type != "stdio" || string(got.Catalogue) != `[{"name":"echo"}]` || got.BaselineVersion != 0 {
		t.Fatalf("GetServer = %+v, %v", got, err)
	}
	got.Catalogue[0] = 'Y'
	if again, _ := st.GetServer(ctx, "config:s"); string(again.Catalogue) != `[{"name":"echo"}]` {
		t.Fatalf("a caller's change reached the row: %s", again.Catalogue)
	}
	if n, err := st.SaveBaseline(ctx, "config:s", tools(map[string]string{"echo": "fp"})); err != nil || n != 1 {
		t.Fatalf("SaveBaseline = %d, %v", n, err)
	}
	if err := st.PutServer(ctx, store.Server{ID: "config:s", Name: "s2", Type: "sse", BaselineVersion: 99}); err != nil {
		t.Fatal(err)
	}
	got, _ = st.GetServer(ctx, "config:s")
	if got.Name != "s2" || got.Type != "sse" || got.Catalogue != nil || got.BaselineVersion != 1 {
		t.Fatalf("after a second put: %+v", got)
	}
	if b, _ := st.GetBaseline(ctx, "config:s"); b[tool("echo")].Value != "fp" {
		t.Fatalf("a put touched the baseline: %v", b)
	}
}

// Baselines have kinds: names that one string namespace would confuse are
// entries of their own; saves are insert-only per key; contracts are
// copied; only an addition or a replace bumps the version.
func TestBaselines(t *testing.T) {
	ctx := context.Background()
	st := New()
	for _, id := range []string{"a", "b"} {
		if err := st.PutServer(ctx, store.Server{ID: id, Name: id}); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := st.GetBaseline(ctx, "a"); err != nil || b == nil || len(b) != 0 {
		t.Fatalf("new baseline = %#v, %v; want empty, non-nil", b, err)
	}
	in := store.Baseline{
		tool("echo"):                        {Value: "trusted", Contract: []byte(`{"name":"echo"}`)},
		tool("prompt x"):                    {Value: "tool"},
		{Kind: store.KindPrompt, Name: "x"}: {Value: "prompt"},
		tool("pinned prompts"):              {Value: "tool"},
		{Kind: store.KindMarker, Name: store.MarkerPrompts}: {Value: store.PinnedMarker},
		tool(""):                 {Value: "empty tool"},
		store.Instructions:       {Value: "instr"},
		tool("get weather.v2 ✓"): {Value: "odd"},
		{Kind: store.KindTemplate, Name: "file:///{path}"}:      {Value: "tpl"},
		{Kind: store.KindTool, Name: "resource-template a b c"}: {Value: "tool"},
	}
	if n, err := st.SaveBaseline(ctx, "a", in); err != nil || n != len(in) {
		t.Fatalf("first save = %d, %v; want %d", n, err, len(in))
	}
	want := in.Clone()
	in[tool("echo")].Contract[0] = 'X' // copied in
	if n, _ := st.SaveBaseline(ctx, "a", store.Baseline{tool("echo"): {Value: "drifted"}, tool("new"): {Value: "fp-new"}}); n != 1 {
		t.Fatalf("mixed save added %d, want 1", n)
	}
	want[tool("new")] = store.BaselineEntry{Value: "fp-new"}
	b, _ := st.GetBaseline(ctx, "a")
	if !equal(b, want) {
		t.Fatalf("baseline %v, want %v", b, want)
	}
	b[tool("echo")].Contract[0] = 'Y' // copied out
	if again, _ := st.GetBaseline(ctx, "a"); again[tool("echo")].Contract[0] != '{' {
		t.Fatal("a caller's change reached the baseline")
	}
	if v, _ := st.BaselineVersion(ctx, "a"); v != 2 {
		t.Fatalf("version %d after two additions, want 2", v)
	}
	if other, _ := st.GetBaseline(ctx, "b"); len(other) != 0 {
		t.Fatalf("another server's baseline leaked: %v", other)
	}

	// What no store holds is refused, and nothing of it is written.
	for _, bad := range []store.Baseline{
		{tool("ok"): {Value: "1"}, {Kind: "tools", Name: "x"}: {Value: "1"}},
		{tool("ok"): {Value: "1"}, tool("a\x00b"): {Value: "1"}},
		{tool("ok"): {Value: "1"}, {Kind: store.KindInstructions, Name: "x"}: {Value: "1"}},
	} {
		if _, err := st.SaveBaseline(ctx, "a", bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("SaveBaseline(%v) = %v, want ErrInvalid", bad, err)
		}
		if _, err := st.ReplaceBaseline(ctx, "a", bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ReplaceBaseline(%v) = %v, want ErrInvalid", bad, err)
		}
	}
	if b, _ := st.GetBaseline(ctx, "a"); !equal(b, want) {
		t.Fatalf("a refused save changed the baseline: %v", b)
	}

	repl := tools(map[string]string{"echo": "re-trusted"})
	if n, err := st.ReplaceBaseline(ctx, "a", repl); err != nil || n != int64(len(want)) {
		t.Fatalf("ReplaceBaseline = %d, %v; want %d", n, err, len(want))
	}
	if v, _ := st.BaselineVersion(ctx, "a"); v != 3 {
		t.Fatalf("version %d after a replace, want 3", v)
	}
	if b, _ := st.GetBaseline(ctx, "a"); !equal(b, repl) {
		t.Fatalf("after a re-trust: %v", b)
	}
	if n, _ := st.ReplaceBaseline(ctx, "a", nil); n != 1 {
		t.Fatalf("an emptying replace removed %d", n)
	}
	if v, _ := st.BaselineVersion(ctx, "a"); v != 4 {
		t.Fatalf("version %d after an emptying replace, want 4 (every replace is a change)", v)
	}
}

// Concurrent saves of one key: exactly one wins, and it is what is stored.
func TestConcurrentSaves(t *testing.T) {
	ctx := context.Background()
	st := New()
	if err := st.PutServer(ctx, store.Server{ID: "s", Name: "s"}); err != nil {
		t.Fatal(err)
	}
	const n = 16
	added := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			added[i], _ = st.SaveBaseline(ctx, "s", tools(map[string]string{"tool": fmt.Sprint(i)}))
			_, _ = st.GetBaseline(ctx, "s")
			_, _ = st.BaselineVersion(ctx, "s")
			_, _, _ = st.ObserveListing(ctx, store.Observation{ServerID: "s", Listing: "L", SeenBy: "i"})
			_, _ = st.OpenObservations(ctx, "", false)
		})
	}
	wg.Wait()
	winner, total := -1, 0
	for i, a := range added {
		total += a
		if a == 1 {
			winner = i
		}
	}
	b, _ := st.GetBaseline(ctx, "s")
	if total != 1 || b[tool("tool")].Value != fmt.Sprint(winner) {
		t.Fatalf("%d additions; stored %q, winner %d", total, b[tool("tool")].Value, winner)
	}
}

// Observations: deduplicated per (server, instance, version, listing),
// open while made under the current version, closed by any change of the
// baseline; heads move with new observations and versions.
func TestObservations(t *testing.T) {
	ctx := context.Background()
	st := New()
	for _, id := range []string{"pay", "bank"} {
		if err := st.PutServer(ctx, store.Server{ID: id, Name: id}); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	o := func(srv, by, listing string, v int64, sec int) store.Observation {
		return store.Observation{ServerID: srv, SeenBy: by, Listing: listing, BaselineVersion: v, SeenAt: base.Add(time.Duration(sec) * time.Second),
			Entries: tools(map[string]string{"charge": listing}), Changes: []byte(`[]`), Drifted: true}
	}
	observe := func(in store.Observation, wantAdded bool) store.Observation {
		t.Helper()
		got, added, err := st.ObserveListing(ctx, in)
		if err != nil || added != wantAdded {
			t.Fatalf("ObserveListing(%+v) = %+v, added %v, %v; want added %v", in, got, added, err, wantAdded)
		}
		return got
	}
	for _, bad := range []store.Observation{
		{Listing: "L", SeenBy: "i"}, {ServerID: "pay", SeenBy: "i"}, {ServerID: "pay", Listing: "L"},
		{ServerID: "pay", Listing: "L", SeenBy: "i", Entries: store.Baseline{{Name: "x"}: {}}},
	} {
		if _, _, err := st.ObserveListing(ctx, bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ObserveListing(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
	a1 := observe(o("pay", "gw-1", "L1", 0, 1), true)
	if a1.ID != 1 || !a1.LastSeenAt.Equal(a1.SeenAt) || !equal(a1.Entries, tools(map[string]string{"charge": "L1"})) {
		t.Fatalf("first observation = %+v", a1)
	}
	again := observe(o("pay", "gw-1", "L1", 0, 9), false)
	if again.ID != a1.ID || !again.LastSeenAt.Equal(base.Add(9*time.Second)) || !again.SeenAt.Equal(a1.SeenAt) {
		t.Fatalf("seen again = %+v", again)
	}
	if back := observe(o("pay", "gw-1", "L1", 0, 2), false); !back.LastSeenAt.Equal(again.LastSeenAt) {
		t.Fatalf("LastSeenAt went back: %+v", back)
	}
	b1 := observe(o("pay", "gw-2", "L1", 0, 3), true)
	a2 := observe(o("pay", "gw-1", "L2", 0, 4), true)
	k1 := observe(o("bank", "gw-1", "K1", 0, 5), true)
	c1 := observe(o("pay", "gw-3", "L3", 0, 6), true)
	ids := func(os []store.Observation, err error) []int64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, o := range os {
			out = append(out, o.ID)
		}
		return out
	}
	if got := ids(st.OpenObservations(ctx, "pay", true)); !slices.Equal(got, []int64{b1.ID, a2.ID, c1.ID}) {
		t.Fatalf("open observations of pay = %v", got)
	}
	all, _ := st.OpenObservations(ctx, "", false)
	if got := ids(all, nil); !slices.Equal(got, []int64{b1.ID, a2.ID, k1.ID, c1.ID}) || all[0].Entries != nil {
		t.Fatalf("open observations = %+v", all)
	}
	heads, _ := st.DriftHeads(ctx)
	if !slices.Equal(heads, []store.DriftHead{{ServerID: "bank", LastObservation: k1.ID}, {ServerID: "pay", LastObservation: c1.ID}}) {
		t.Fatalf("heads = %+v", heads)
	}
	// A re-trust closes pay's; the next observation under the new version
	// is open.
	if _, err := st.ReplaceBaseline(ctx, "pay", a2.Entries); err != nil {
		t.Fatal(err)
	}
	if got := ids(st.OpenObservations(ctx, "", true)); !slices.Equal(got, []int64{k1.ID}) {
		t.Fatalf("open observations after a re-trust = %v", got)
	}
	n := observe(o("pay", "gw-1", "L2", 1, 10), true)
	if got := ids(st.OpenObservations(ctx, "pay", true)); !slices.Equal(got, []int64{n.ID}) {
		t.Fatalf("open observations under the new version = %v", got)
	}
	heads, _ = st.DriftHeads(ctx)
	if !slices.Equal(heads, []store.DriftHead{{ServerID: "bank", LastObservation: k1.ID}, {ServerID: "pay", BaselineVersion: 1, LastObservation: n.ID}}) {
		t.Fatalf("heads = %+v", heads)
	}
}
