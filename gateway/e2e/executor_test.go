package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// killMidCall starts a gateway on dir's config, leaves a keyed call of
// slow__slow_count taking ms in flight after its effect, and SIGKILLs the
// gateway.
func killMidCall(t *testing.T, dir, marker string, ms int, k string) {
	t.Helper()
	_ = os.Remove(marker)
	g := startGateway(t, dir)
	cs := connect(t, g.url, "")
	done := make(chan error, 1)
	go func() {
		_, err := call(t, cs, "slow__slow_count", map[string]any{"ms": ms}, key(k))
		done <- err
	}()
	waitFile(t, marker)
	g.stop(syscall.SIGKILL)
	if err := <-done; err == nil {
		t.Fatal("the call survived the gateway's death")
	}
}

// TestRestartAnswersAtOnce: a gateway is SIGKILLed while a keyed call is
// in flight (lease 10 min); the gateway started again on the same SQLite
// store knows its previous incarnation is dead, so the retry is in_doubt
// at once, never run_busy, and the call is never repeated. A repeatable
// tool is re-sent once instead (two effects at most, as documented).
func TestRestartAnswersAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	effects, marker := filepath.Join(dir, "effects"), filepath.Join(dir, "marker")
	writeConfig(t, dir, fmt.Sprintf("servers:\n%sjournal: {lease: 10m}\n", slowServer("slow", effects, marker)))
	killMidCall(t, dir, marker, 600000, "k1")

	g2 := startGateway(t, dir)
	cs2 := connect(t, g2.url, "")
	wantRefusal(t, mustCall(t, cs2, "slow__slow_count", map[string]any{"ms": 600000}, key("k1")), "in_doubt")
	wantRefusal(t, mustCall(t, cs2, "slow__slow_count", map[string]any{"ms": 600000}, key("k1")), "in_doubt")
	if n := len(lines(t, effects)); n != 1 {
		t.Errorf("effects %d, want 1", n)
	}
	g2.stop(syscall.SIGTERM)

	// The same with the tool declared repeatable: the retry on the
	// restarted gateway sends it again, once, and answers its result.
	effects2 := filepath.Join(dir, "effects2")
	writeConfig(t, dir, fmt.Sprintf("servers:\n%sjournal: {lease: 10m}\ntools: {repeatable: [slow__slow_count]}\n", slowServer("slow", effects2, marker)))
	killMidCall(t, dir, marker, 3000, "k2")
	g3 := startGateway(t, dir)
	cs3 := connect(t, g3.url, "")
	r := mustCall(t, cs3, "slow__slow_count", map[string]any{"ms": 3000}, key("k2"))
	if r.IsError || text(r) != "2" {
		t.Fatalf("repeatable retry after the restart: %q %v, want the re-send's answer 2", text(r), r.StructuredContent)
	}
	// Recorded now: replayed, not sent a third time.
	if r2 := mustCall(t, cs3, "slow__slow_count", map[string]any{"ms": 3000}, key("k2")); text(r2) != "2" {
		t.Errorf("replay %q, want 2", text(r2))
	}
	if n := len(lines(t, effects2)); n != 2 {
		t.Errorf("effects %d, want 2 (the lost call and one re-send)", n)
	}
}

// TestReplicaRestartOnPostgres: two gateways on one PostgreSQL. A is busy
// in a keyed call: B answers run_busy (a live replica is never taken for
// dead). A is SIGKILLed: B still answers run_busy (A's heartbeat is
// recent). A is started again: its new incarnation takes A's instance, so
// B now answers in_doubt at once, with the 10 min lease still live. The
// call ran once.
func TestReplicaRestartOnPostgres(t *testing.T) {
	dsn := pgStore(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // where the gateways keep their instance locks
	dir := t.TempDir()
	effects, marker := filepath.Join(dir, "effects"), filepath.Join(dir, "marker")
	writeConfig(t, dir, fmt.Sprintf("store: %q\nservers:\n%sjournal: {lease: 10m}\n", dsn, slowServer("slow", effects, marker)))
	a, b := startGateway(t, dir), startGateway(t, dir)
	ca, cb := connect(t, a.url, ""), connect(t, b.url, "")
	args := map[string]any{"ms": 600000}
	done := make(chan error, 1)
	go func() {
		_, err := call(t, ca, "slow__slow_count", args, key("p1"))
		done <- err
	}()
	waitFile(t, marker)
	wantRefusal(t, mustCall(t, cb, "slow__slow_count", args, key("p1")), "run_busy")

	a.stop(syscall.SIGKILL)
	<-done
	wantRefusal(t, mustCall(t, cb, "slow__slow_count", args, key("p1")), "run_busy")
	startGateway(t, dir) // A again: the slot A held is free, and so its instance
	wantRefusal(t, mustCall(t, cb, "slow__slow_count", args, key("p1")), "in_doubt")
	if n := len(lines(t, effects)); n != 1 {
		t.Errorf("effects %d, want 1", n)
	}
}
