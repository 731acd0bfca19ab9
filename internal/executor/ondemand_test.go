package executor

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// TestOnDemand: on a real SQLite store, a journal's executor takes a slot
// of its own (never a gateway's), is registered by its first Alive, is
// extended only when less than half its window is left, and a restart (the
// lock released, as the kernel does when a process dies) takes the dead
// one's instance and stops it in the store. Stop stops it; a superseded
// or stopped one refuses to go on.
func TestOnDemand(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "j.db")
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dsn := "sqlite:" + path
	gw, releaseGW, err := LockInstance(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseGW()
	const window = time.Hour
	first, err := NewOnDemand(st, dsn, window)
	if err != nil {
		t.Fatal(err)
	}
	second, err := NewOnDemand(st, dsn, window)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Stop(ctx, time.Now())
	prefix := gw[:strings.LastIndexByte(gw, '/')+1]
	if first.Instance() != prefix+"journal-0" || second.Instance() != prefix+"journal-1" || !strings.HasPrefix(first.ID(), first.Instance()+"#") {
		t.Fatalf("instances %s, %s (%s) beside the gateway's %s", first.Instance(), second.Instance(), first.ID(), gw)
	}

	// Not registered before its first use; registered by it.
	if _, err := st.GetExecutor(ctx, first.ID()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("registered before use: %v", err)
	}
	now := time.Now()
	if err := first.Alive(ctx, now); err != nil {
		t.Fatal(err)
	}
	aliveUntil := func(e *OnDemand) time.Time {
		t.Helper()
		x, err := st.GetExecutor(ctx, e.ID())
		if err != nil || !x.StoppedAt.IsZero() {
			t.Fatalf("executor %+v, %v: want running", x, err)
		}
		return x.AliveUntil
	}
	registered := aliveUntil(first)
	if d := registered.Sub(now); d < window-time.Second || d > window+time.Second {
		t.Fatalf("registered alive until %v after now, want the window %v", d, window)
	}
	// More than half the window left: nothing written.
	if err := first.Alive(ctx, now.Add(window/2-time.Minute)); err != nil || !aliveUntil(first).Equal(registered) {
		t.Fatalf("extended with more than half its window left: %v", err)
	}
	// Less: extended by a whole window.
	later := now.Add(window/2 + time.Minute)
	if err := first.Alive(ctx, later); err != nil || aliveUntil(first).Sub(later) < window-time.Second {
		t.Fatalf("not extended with less than half its window left: %v, until %v", err, aliveUntil(first))
	}

	// The crash: the lock released, nothing written. The restart takes the
	// same instance; its registration stops the dead incarnation.
	first.release()
	restarted, err := NewOnDemand(st, dsn, window)
	if err != nil {
		t.Fatal(err)
	}
	if restarted.Instance() != first.Instance() || restarted.ID() == first.ID() {
		t.Fatalf("restart: %s after %s, want the same instance, another ID", restarted.ID(), first.ID())
	}
	if err := restarted.Alive(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if x, _ := st.GetExecutor(ctx, first.ID()); x.StoppedAt.IsZero() || !x.Dead(time.Now()) {
		t.Fatalf("the dead incarnation is not stopped: %+v", x)
	}
	// The superseded one, were it alive after all, refuses to go on.
	if err := first.Alive(ctx, later.Add(window)); !errors.Is(err, ErrStopped) {
		t.Fatalf("superseded executor's Alive: %v, want ErrStopped", err)
	}

	// Stop: stopped in the store, slot released, no more Alive.
	if err := restarted.Stop(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := restarted.Stop(ctx, time.Now()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if x, _ := st.GetExecutor(ctx, restarted.ID()); x.StoppedAt.IsZero() {
		t.Fatalf("Stop did not stop %+v", x)
	}
	if err := restarted.Alive(ctx, time.Now()); !errors.Is(err, ErrStopped) {
		t.Fatalf("Alive after Stop: %v", err)
	}
	again, err := NewOnDemand(st, dsn, window)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Stop(ctx, time.Now())
	if again.Instance() != restarted.Instance() {
		t.Fatalf("after Stop the slot of %s is not free: got %s", restarted.Instance(), again.Instance())
	}
	// Stopping one never registered writes nothing.
	if err := again.Stop(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetExecutor(ctx, again.ID()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an executor never used was registered: %v", err)
	}

	for _, d := range []string{"", "memory:"} {
		if _, err := NewOnDemand(st, d, window); err == nil {
			t.Errorf("NewOnDemand(%q) derived an instance", d)
		}
	}
	if _, err := NewOnDemand(st, dsn, 0); err == nil {
		t.Error("NewOnDemand without a window")
	}
}
