package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestKeyedCallOnKilledReplica: three `gatehouse serve` processes on one
// PostgreSQL behind a proxy that picks a replica per request. A keyed call
// is running on one replica when that replica is SIGKILLed; the client's
// retry with the same key, on the same session, reaches the other
// replicas, which answer run_busy while the dead replica's lease lasts and
// then in_doubt: the effect never runs twice. The session goes on, and a
// new key runs once.
func TestKeyedCallOnKilledReplica(t *testing.T) {
	t.Parallel()
	dsn := pgStore(t)
	effects := filepath.Join(t.TempDir(), "effects")
	// One directory per replica, so each replica's upstream marks its own
	// file when a call starts there: the test knows which replica runs it.
	var replicas []*gw
	var markers []string
	for range 3 {
		dir := t.TempDir()
		marker := filepath.Join(dir, "marker")
		writeConfig(t, dir, fmt.Sprintf("store: %q\nservers:\n%sjournal: {lease: 2s}\n", dsn, slowServer("slow", effects, marker)))
		replicas = append(replicas, startGateway(t, dir))
		markers = append(markers, marker)
	}
	rr := newRoundRobin(t, replicas...)
	cs := connect(t, rr.url(), "")
	args := map[string]any{"ms": 20000}

	done := make(chan error, 1)
	go func() {
		_, err := call(t, cs, "slow__slow_count", args, key("k1"))
		done <- err
	}()
	var victim *gw
	for deadline := time.Now().Add(30 * time.Second); victim == nil; time.Sleep(20 * time.Millisecond) {
		for i, m := range markers {
			if _, err := os.Stat(m); err == nil {
				victim = replicas[i]
			}
		}
		if victim == nil && time.Now().After(deadline) {
			t.Fatal("the keyed call started on no replica")
		}
	}
	rr.remove(victim)
	_ = victim.stop(syscall.SIGKILL)
	if err := <-done; err == nil {
		t.Fatal("the call survived its replica's death")
	}

	var codes []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		m := refusal(mustCall(t, cs, "slow__slow_count", args, key("k1")))
		if m == nil {
			t.Fatalf("a retry on another replica ran the call again (answers so far %v)", codes)
		}
		code, _ := m["code"].(string)
		codes = append(codes, code)
		if code == "in_doubt" {
			break
		}
		if code != "run_busy" || time.Now().After(deadline) {
			t.Fatalf("retries answer %v, want run_busy then in_doubt", codes)
		}
	}
	t.Logf("the retries answered %v", codes)
	// Every live replica says the same: the next request goes to the other.
	for range 2 {
		wantRefusal(t, mustCall(t, cs, "slow__slow_count", args, key("k1")), "in_doubt")
	}
	if n := len(lines(t, effects)); n != 1 {
		t.Errorf("%d effects, want 1 (the call must never run twice)", n)
	}
	if r := mustCall(t, cs, "slow__slow_count", map[string]any{"ms": 0}, key("k2")); r.IsError || text(r) != "2" {
		t.Errorf("a new key on the same session: %q, want 2", text(r))
	}
	if n := rr.notFound.Load(); n != 0 {
		t.Errorf("%d requests on the session were answered 404", n)
	}
}
