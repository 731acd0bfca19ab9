package ephemeral

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/gatehouse-dev/gatehouse/store"
)

func TestMissingRow(t *testing.T) {
	ctx := context.Background()
	st := New()
	if _, err := st.GetServer(ctx, "ghost"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetServer: %v", err)
	}
	if _, err := st.SaveBaseline(ctx, "ghost", map[string]string{"a": "1"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SaveBaseline: %v", err)
	}
	if _, err := st.GetBaseline(ctx, "ghost"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetBaseline: %v", err)
	}
	if _, err := st.ClearBaseline(ctx, "ghost"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ClearBaseline: %v", err)
	}
	if _, err := st.BaselineVersion(ctx, "ghost"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("BaselineVersion: %v", err)
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
	if n, err := st.SaveBaseline(ctx, "config:s", map[string]string{"echo": "fp"}); err != nil || n != 1 {
		t.Fatalf("SaveBaseline = %d, %v", n, err)
	}
	if err := st.PutServer(ctx, store.Server{ID: "config:s", Name: "s2", Type: "sse", BaselineVersion: 99}); err != nil {
		t.Fatal(err)
	}
	got, _ = st.GetServer(ctx, "config:s")
	if got.Name != "s2" || got.Type != "sse" || got.Catalogue != nil || got.BaselineVersion != 1 {
		t.Fatalf("after a second put: %+v", got)
	}
	if b, _ := st.GetBaseline(ctx, "config:s"); b["echo"] != "fp" {
		t.Fatalf("a put touched the baseline: %v", b)
	}
}

// Baselines are insert-only; only an addition or a clear bumps the
// version; what GetBaseline returns is the caller's.
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
	in := map[string]string{"echo": "trusted", store.InstructionsKey: "instr"}
	if n, err := st.SaveBaseline(ctx, "a", in); err != nil || n != 2 {
		t.Fatalf("first save = %d, %v", n, err)
	}
	in["echo"] = "changed by the caller"
	if n, _ := st.SaveBaseline(ctx, "a", map[string]string{"echo": "drifted", "new": "fp-new"}); n != 1 {
		t.Fatalf("mixed save added %d, want 1", n)
	}
	if n, _ := st.SaveBaseline(ctx, "a", map[string]string{"echo": "drifted"}); n != 0 {
		t.Fatalf("a save replaced %d entries", n)
	}
	want := map[string]string{"echo": "trusted", store.InstructionsKey: "instr", "new": "fp-new"}
	b, _ := st.GetBaseline(ctx, "a")
	if !maps.Equal(b, want) {
		t.Fatalf("baseline %v, want %v", b, want)
	}
	b["echo"] = "changed by the caller"
	if again, _ := st.GetBaseline(ctx, "a"); again["echo"] != "trusted" {
		t.Fatal("a caller's change reached the baseline")
	}
	if v, _ := st.BaselineVersion(ctx, "a"); v != 2 {
		t.Fatalf("version %d after two additions and a no-op save, want 2", v)
	}
	if other, _ := st.GetBaseline(ctx, "b"); len(other) != 0 {
		t.Fatalf("another server's baseline leaked: %v", other)
	}

	if n, err := st.ClearBaseline(ctx, "a"); err != nil || n != 3 {
		t.Fatalf("ClearBaseline = %d, %v", n, err)
	}
	if v, _ := st.BaselineVersion(ctx, "a"); v != 3 {
		t.Fatalf("version %d after a clear, want 3", v)
	}
	if b, _ := st.GetBaseline(ctx, "a"); b == nil || len(b) != 0 {
		t.Fatalf("cleared baseline = %#v", b)
	}
	if n, _ := st.ClearBaseline(ctx, "a"); n != 0 {
		t.Fatalf("a second clear removed %d", n)
	}
	if v, _ := st.BaselineVersion(ctx, "a"); v != 4 {
		t.Fatalf("version %d after an empty clear, want 4 (every clear is a change)", v)
	}
	if n, _ := st.SaveBaseline(ctx, "a", map[string]string{"echo": "re-trusted"}); n != 1 {
		t.Fatalf("save after a clear added %d", n)
	}
	if b, _ := st.GetBaseline(ctx, "a"); b["echo"] != "re-trusted" {
		t.Fatalf("after a re-trust: %v", b)
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
			added[i], _ = st.SaveBaseline(ctx, "s", map[string]string{"tool": fmt.Sprint(i)})
			_, _ = st.GetBaseline(ctx, "s")
			_, _ = st.BaselineVersion(ctx, "s")
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
	if total != 1 || b["tool"] != fmt.Sprint(winner) {
		t.Fatalf("%d additions; stored %q, winner %d", total, b["tool"], winner)
	}
}
