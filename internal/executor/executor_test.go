package executor

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// TestInstanceSlots: two live gateways on one store never derive the same
// instance; a restart (the lock released, as the kernel does when a
// process dies) gets its predecessor's.
func TestInstanceSlots(t *testing.T) {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "g.db")
	a, releaseA, err := LockInstance(dsn)
	if err != nil {
		t.Fatal(err)
	}
	b, releaseB, err := LockInstance(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseB()
	if a == b {
		t.Fatalf("two live gateways share instance %q", a)
	}
	releaseA()
	again, releaseAgain, err := LockInstance(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseAgain()
	if again != a {
		t.Fatalf("restart got instance %q, want its predecessor's %q", again, a)
	}
	other, releaseOther, err := LockInstance("sqlite:" + filepath.Join(t.TempDir(), "other.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer releaseOther()
	if other == a || !strings.HasSuffix(other, "/0") {
		t.Fatalf("another store's first instance = %q (first here %q)", other, a)
	}
	for _, d := range []string{"", "memory:", "nonsense:x"} {
		if _, _, err := LockInstance(d); err == nil {
			t.Errorf("LockInstance(%q) derived an instance", d)
		}
	}
}

// TestStartRestartStop: on a real SQLite store, a second start under the
// first one's instance (its lock released, as after a crash) stops the
// first incarnation in the store; Stop marks the second stopped; the
// heartbeat keeps a running one alive.
func TestStartRestartStop(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "g.db")
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	o := &Options{StoreDSN: "sqlite:" + path, Lease: 30 * time.Millisecond, TTL: time.Hour}
	first, err := Start(ctx, st, o)
	if err != nil {
		t.Fatal(err)
	}
	// The heartbeat moves the lease forward: seen as alive-until growing
	// (however late a loaded machine runs the heartbeat; no timing is
	// asserted).
	e0, err := st.GetExecutor(ctx, first.ID())
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		e, err := st.GetExecutor(ctx, first.ID())
		if err != nil {
			t.Fatal(err)
		}
		if e.AliveUntil.After(e0.AliveUntil) && e.StoppedAt.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("running executor %+v (at start %+v): no heartbeat in 10 s", e, e0)
		}
	}
	// The crash: the heartbeat ends and the lock is released, nothing is
	// written.
	first.cancel()
	first.wg.Wait()
	first.release()
	second, err := Start(ctx, st, o)
	if err != nil {
		t.Fatal(err)
	}
	if second.Instance() != first.Instance() || second.ID() == first.ID() {
		t.Fatalf("restart: %s after %s, want the same instance, another ID", second.ID(), first.ID())
	}
	if e, _ := st.GetExecutor(ctx, first.ID()); e.StoppedAt.IsZero() {
		t.Fatalf("the previous incarnation is not stopped: %+v", e)
	}
	second.Stop()
	second.Stop()
	if e, _ := st.GetExecutor(ctx, second.ID()); e.StoppedAt.IsZero() {
		t.Fatalf("Stop did not stop %+v", e)
	}
	if _, err := Start(ctx, st, &Options{}); err == nil {
		t.Fatal("Start without a lease")
	}
}
