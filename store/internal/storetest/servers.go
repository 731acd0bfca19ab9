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

func testServers(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	if got := get(s.ListServers(ctx)).ok(t); len(got) != 0 {
		t.Fatalf("empty store lists %d servers", len(got))
	}
	_, err := s.GetServer(ctx, "nope")
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.DeleteServer(ctx, "nope"), store.ErrNotFound)
	wantErr(t, s.PutServer(ctx, store.Server{Name: "x"}), store.ErrInvalid)

	cat := []byte(`{"tools":[{"name":"echo"}]}`)
	b := store.Server{ID: "p/bank", Name: "bank", Type: "http", URL: "https://bank.example/mcp", Catalogue: cat, UpdatedAt: at(time.Second)}
	a := store.Server{ID: "p/alpha", Name: "alpha", Type: "stdio"}
	if err := s.PutServer(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := s.PutServer(ctx, a); err != nil {
		t.Fatal(err)
	}
	cat[0] = 'X' // the store must have copied
	got := get(s.GetServer(ctx, "p/bank")).ok(t)
	if got.Name != "bank" || got.Type != "http" || got.URL != "https://bank.example/mcp" ||
		string(got.Catalogue) != `{"tools":[{"name":"echo"}]}` || !got.UpdatedAt.Equal(at(time.Second)) || got.BaselineVersion != 0 {
		t.Fatalf("GetServer = %+v", got)
	}
	ga := get(s.GetServer(ctx, "p/alpha")).ok(t)
	if ga.Catalogue != nil || ga.URL != "" || ga.UpdatedAt.IsZero() {
		t.Fatalf("stdio row = %+v (want nil catalogue, empty URL, UpdatedAt filled)", ga)
	}
	list := get(s.ListServers(ctx)).ok(t)
	if len(list) != 2 || list[0].ID != "p/alpha" || list[1].ID != "p/bank" {
		t.Fatalf("ListServers = %+v", list)
	}
	// Upsert replaces the fields, keeps the baseline and its version.
	get(s.SaveBaseline(ctx, "p/bank", tools(map[string]string{"echo": "fp1"}))).ok(t)
	b2 := store.Server{ID: "p/bank", Name: "bank2", Type: "sse", URL: "https://bank.example/sse", Catalogue: []byte(`[]`), UpdatedAt: at(2 * time.Second), BaselineVersion: 99}
	if err := s.PutServer(ctx, b2); err != nil {
		t.Fatal(err)
	}
	got = get(s.GetServer(ctx, "p/bank")).ok(t)
	if got.Name != "bank2" || got.Type != "sse" || got.URL != b2.URL || string(got.Catalogue) != "[]" || !got.UpdatedAt.Equal(at(2*time.Second)) {
		t.Fatalf("after upsert = %+v", got)
	}
	if got.BaselineVersion != 1 {
		t.Fatalf("BaselineVersion = %d after one save; PutServer must not set it", got.BaselineVersion)
	}
	if bl := get(s.GetBaseline(ctx, "p/bank")).ok(t); bl[tool("echo")].Value != "fp1" {
		t.Fatalf("upsert touched the baseline: %v", bl)
	}
	// Delete takes the baseline with it.
	if err := s.DeleteServer(ctx, "p/bank"); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetServer(ctx, "p/bank")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetBaseline(ctx, "p/bank")
	wantErr(t, err, store.ErrNotFound)
	if err := s.PutServer(ctx, b); err != nil {
		t.Fatal(err)
	}
	if bl := get(s.GetBaseline(ctx, "p/bank")).ok(t); len(bl) != 0 {
		t.Fatalf("a re-created server inherited a deleted baseline: %v", bl)
	}
}

func testServerRefusesSecrets(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	err := s.PutServer(ctx, store.Server{ID: "x", Name: "x", Type: "http", URL: "https://user:hunter2@evil.example/mcp"})
	wantErr(t, err, store.ErrInvalid)
	if bytes.Contains([]byte(err.Error()), []byte("hunter2")) {
		t.Fatalf("error repeats the password: %v", err)
	}
	if _, err := s.GetServer(ctx, "x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a row with a password in its URL was stored (err %v)", err)
	}
}

func putServer(t *testing.T, s store.Store, id string) {
	t.Helper()
	if err := s.PutServer(ctxT(t), store.Server{ID: id, Name: id, Type: "http", URL: "https://" + id + ".example/mcp"}); err != nil {
		t.Fatal(err)
	}
}

func testBaseline(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	_, err := s.SaveBaseline(ctx, "ghost", tools(map[string]string{"a": "1"}))
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetBaseline(ctx, "ghost")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.ClearBaseline(ctx, "ghost")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.BaselineVersion(ctx, "ghost")
	wantErr(t, err, store.ErrNotFound)

	putServer(t, s, "srv")
	if bl := get(s.GetBaseline(ctx, "srv")).ok(t); bl == nil || len(bl) != 0 {
		t.Fatalf("new server's baseline = %#v, want empty non-nil map", bl)
	}
	in := tools(map[string]string{"echo": "fp-echo", "add": "fp-add"})
	in[store.BaselineKey{Kind: store.KindInstructions}] = store.BaselineEntry{Value: "fp-instr"}
	if n := get(s.SaveBaseline(ctx, "srv", in)).ok(t); n != 3 {
		t.Fatalf("added %d, want 3", n)
	}
	if got := get(s.GetBaseline(ctx, "srv")).ok(t); !equalBaselines(got, in) {
		t.Fatalf("GetBaseline = %v, want %v", got, in)
	}
	if n := get(s.SaveBaseline(ctx, "srv", nil)).ok(t); n != 0 {
		t.Fatalf("nil save added %d", n)
	}
	// Baselines of different servers are independent.
	putServer(t, s, "other")
	get(s.SaveBaseline(ctx, "other", tools(map[string]string{"echo": "other-fp"}))).ok(t)
	if got := get(s.GetBaseline(ctx, "srv")).ok(t); got[tool("echo")].Value != "fp-echo" {
		t.Fatalf("another server's save leaked: %v", got)
	}
}

func testBaselineImmutable(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putServer(t, s, "srv")
	get(s.SaveBaseline(ctx, "srv", withInstructions(map[string]string{"echo": "trusted"}, "instr-trusted"))).ok(t)
	v1 := get(s.BaselineVersion(ctx, "srv")).ok(t)
	for i := range 5 {
		n := get(s.SaveBaseline(ctx, "srv", withInstructions(map[string]string{"echo": fmt.Sprintf("drifted-%d", i)}, "instr-drifted"))).ok(t)
		if n != 0 {
			t.Fatalf("save %d replaced %d entries", i, n)
		}
	}
	// A mixed save adds the new tool only.
	if n := get(s.SaveBaseline(ctx, "srv", tools(map[string]string{"echo": "drifted", "new": "fp-new"}))).ok(t); n != 1 {
		t.Fatalf("mixed save added %d, want 1", n)
	}
	want := withInstructions(map[string]string{"echo": "trusted", "new": "fp-new"}, "instr-trusted")
	if got := get(s.GetBaseline(ctx, "srv")).ok(t); !equalBaselines(got, want) {
		t.Fatalf("baseline = %v, want %v", got, want)
	}
	if v := get(s.BaselineVersion(ctx, "srv")).ok(t); v != v1+1 {
		t.Fatalf("version %d after no-op saves and one addition, want %d", v, v1+1)
	}
}

func testBaselineConcurrent(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putServer(t, s, "srv")
	const n = 10
	var wg sync.WaitGroup
	added := make([]int, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			added[i], errs[i] = s.SaveBaseline(ctx, "srv", tools(map[string]string{"tool": fmt.Sprintf("fp-%d", i)}))
		})
	}
	wg.Wait()
	total := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		total += added[i]
	}
	if total != 1 {
		t.Fatalf("%d concurrent saves added %d entries, want exactly 1", n, total)
	}
	got := get(s.GetBaseline(ctx, "srv")).ok(t)
	winner := slices.Index(added, 1)
	if got[tool("tool")].Value != fmt.Sprintf("fp-%d", winner) {
		t.Fatalf("stored %q but saver %d reported the insert", got[tool("tool")].Value, winner)
	}
}

func testBaselineClear(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putServer(t, s, "srv")
	putServer(t, s, "keep")
	get(s.SaveBaseline(ctx, "keep", tools(map[string]string{"a": "1"}))).ok(t)
	v0 := get(s.BaselineVersion(ctx, "srv")).ok(t)
	get(s.SaveBaseline(ctx, "srv", tools(map[string]string{"a": "old-a", "b": "old-b"}))).ok(t)
	v1 := get(s.BaselineVersion(ctx, "srv")).ok(t)
	if v1 <= v0 {
		t.Fatalf("version did not grow on save: %d -> %d", v0, v1)
	}
	if n := get(s.ClearBaseline(ctx, "srv")).ok(t); n != 2 {
		t.Fatalf("ClearBaseline removed %d, want 2", n)
	}
	v2 := get(s.BaselineVersion(ctx, "srv")).ok(t)
	if v2 <= v1 {
		t.Fatalf("version did not grow on clear: %d -> %d", v1, v2)
	}
	if got := get(s.GetBaseline(ctx, "srv")).ok(t); len(got) != 0 {
		t.Fatalf("baseline after clear = %v", got)
	}
	// Re-trust step 2: record what the server publishes now.
	get(s.SaveBaseline(ctx, "srv", tools(map[string]string{"a": "new-a"}))).ok(t)
	if got := get(s.GetBaseline(ctx, "srv")).ok(t); got[tool("a")].Value != "new-a" || len(got) != 1 {
		t.Fatalf("re-trusted baseline = %v", got)
	}
	if got := get(s.GetBaseline(ctx, "keep")).ok(t); got[tool("a")].Value != "1" {
		t.Fatalf("clearing one server touched another: %v", got)
	}
	if n := get(s.ClearBaseline(ctx, "srv")).ok(t); n != 1 {
		t.Fatalf("second clear removed %d, want 1", n)
	}
	if v := get(s.GetServer(ctx, "srv")).ok(t).BaselineVersion; v != get(s.BaselineVersion(ctx, "srv")).ok(t) {
		t.Fatalf("Server.BaselineVersion %d disagrees with BaselineVersion", v)
	}
}
