package e2e

import (
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestSIGKILLMidCallThenRetry: the gateway dies (SIGKILL) while a keyed
// call is running; a new gateway on the same SQLite store answers the
// retry with in_doubt (at once: it knows its predecessor is dead, see
// TestRestartAnswersAtOnce; run_busy would be allowed only while the
// lease lasts); the effect never runs twice.
func TestSIGKILLMidCallThenRetry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	effects, marker := filepath.Join(dir, "effects"), filepath.Join(dir, "marker")
	writeConfig(t, dir, fmt.Sprintf("servers:\n%sjournal: {lease: 2s}\n", slowServer("slow", effects, marker)))
	g := startGateway(t, dir)
	cs := connect(t, g.url, "")
	done := make(chan error, 1)
	go func() {
		_, err := call(t, cs, "slow__slow_count", map[string]any{"ms": 20000}, key("s1"))
		done <- err
	}()
	waitFile(t, marker)
	g.stop(syscall.SIGKILL)
	if err := <-done; err == nil {
		t.Fatal("the call survived the gateway's death")
	}

	g2 := startGateway(t, dir)
	cs2 := connect(t, g2.url, "")
	var codes []string
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := mustCall(t, cs2, "slow__slow_count", map[string]any{"ms": 20000}, key("s1"))
		m := refusal(r)
		if m == nil {
			t.Fatalf("the retry ran the call again: %q", text(r))
		}
		code, _ := m["code"].(string)
		codes = append(codes, code)
		if code == "in_doubt" {
			break
		}
		if code != "run_busy" || time.Now().After(deadline) {
			t.Fatalf("retry answers %v, want run_busy then in_doubt", codes)
		}
		time.Sleep(300 * time.Millisecond)
	}
	// In doubt stays in doubt: never re-sent.
	wantRefusal(t, mustCall(t, cs2, "slow__slow_count", map[string]any{"ms": 20000}, key("s1")), "in_doubt")
	if n := len(lines(t, effects)); n != 1 {
		t.Errorf("effects %d, want 1 (the call must not be repeated)", n)
	}
	// A new key runs normally on the new gateway.
	if r := mustCall(t, cs2, "slow__slow_count", map[string]any{"ms": 0}, key("s2")); r.IsError || text(r) != "2" {
		t.Errorf("new key: %q", text(r))
	}
}

// TestGracefulShutdown: SIGTERM lets an in-flight call finish and record
// its outcome (a restart replays it); a call past shutdownTimeout is
// cancelled and recorded in doubt.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	effects, marker := filepath.Join(dir, "effects"), filepath.Join(dir, "marker")
	writeConfig(t, dir, fmt.Sprintf("servers:\n%sshutdownTimeout: 10s\n", slowServer("slow", effects, marker)))
	g := startGateway(t, dir)
	cs := connect(t, g.url, "")
	var wg sync.WaitGroup
	var got string
	wg.Go(func() {
		r, err := call(t, cs, "slow__slow_count", map[string]any{"ms": 1500}, key("g1"))
		if err != nil {
			t.Errorf("in-flight call failed during shutdown: %v", err)
			return
		}
		got = text(r)
	})
	waitFile(t, marker)
	if err := g.stop(syscall.SIGTERM); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, g.logText())
	}
	wg.Wait()
	if got != "1" {
		t.Fatalf("in-flight call answered %q, want 1\n%s", got, g.logText())
	}

	// The outcome was journaled: a restart replays it.
	writeConfig(t, dir, fmt.Sprintf("servers:\n%sshutdownTimeout: 1s\n", slowServer("slow", effects, marker)))
	g2 := startGateway(t, dir)
	cs2 := connect(t, g2.url, "")
	if r := mustCall(t, cs2, "slow__slow_count", map[string]any{"ms": 1500}, key("g1")); r.IsError || text(r) != "1" {
		t.Fatalf("after restart: %q, want the recorded 1", text(r))
	}

	// Past the deadline: cancelled and in doubt.
	marker2 := marker + "2"
	_ = marker2
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = call(t, cs2, "slow__slow_count", map[string]any{"ms": 30000}, key("g2"))
	}()
	waitEffects(t, effects, 2)
	start := time.Now()
	if err := g2.stop(syscall.SIGTERM); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("shutdown took %v with shutdownTimeout 1s", d)
	}
	<-done
	g3 := startGateway(t, dir)
	wantRefusal(t, mustCall(t, connect(t, g3.url, ""), "slow__slow_count", map[string]any{"ms": 30000}, key("g2")), "in_doubt")
	if n := len(lines(t, effects)); n != 2 {
		t.Errorf("effects %d, want 2", n)
	}
}

func waitEffects(t *testing.T, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(lines(t, path)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s has fewer than %d lines", path, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCrashedUpstreamBackoff: a stdio upstream that dies on every call is
// restarted on the call after its backoff; meanwhile its tools answer
// unavailable (retryable, retryAfterMs) without starting it; a keyed call
// that was sent when it died is in doubt and never re-sent. An upstream
// that crashes once is restarted transparently.
func TestCrashedUpstreamBackoff(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	starts, onceStarts := filepath.Join(dir, "starts"), filepath.Join(dir, "once-starts")
	writeConfig(t, dir, "servers:\n"+
		fixtureServer("dies", "-tools", "echo", "-exit-after", "0", "-starts", starts)+
		fixtureServer("once", "-tools", "echo", "-exit-after", "1", "-starts", onceStarts))
	g := startGateway(t, dir)
	cs := connect(t, g.url, "")
	echo := map[string]any{"text": "hi"}

	// A server that crashes once: the next call restarts it.
	mustCall(t, cs, "once__echo", echo, nil)
	if r := mustCall(t, cs, "once__echo", echo, nil); r.IsError || text(r) != "hi" {
		t.Fatalf("after one crash: %q", text(r))
	}
	// Each server is also started once at the start to learn which of
	// its tools need a client capability (relay.Classify).
	if n := len(lines(t, onceStarts)); n != 3 {
		t.Errorf("once started %d times, want 3 (with the listing without capabilities)", n)
	}

	if n := len(lines(t, starts)); n != 2 {
		t.Fatalf("dies started %d times before any call, want 2 (with the listing without capabilities)", n)
	}
	m := wantRefusal(t, mustCall(t, cs, "dies__echo", echo, key("d1")), "in_doubt")
	if m["retryable"] != false {
		t.Errorf("in_doubt of a non-repeatable tool is retryable: %v", m)
	}
	after := len(lines(t, starts))
	u := wantRefusal(t, mustCall(t, cs, "dies__echo", echo, nil), "unavailable")
	if ms, _ := u["retryAfterMs"].(float64); ms <= 0 || u["retryable"] != true {
		t.Errorf("unavailable without retryAfterMs: %v", u)
	}
	if n := len(lines(t, starts)); n != after {
		t.Errorf("the server was started during its backoff (%d -> %d)", after, n)
	}
	// After the backoff the next call restarts it (and it dies again).
	time.Sleep(time.Duration(u["retryAfterMs"].(float64))*time.Millisecond + 100*time.Millisecond)
	mustCall(t, cs, "dies__echo", echo, nil)
	if n := len(lines(t, starts)); n <= after {
		t.Errorf("not restarted after the backoff (%d starts)", n)
	}
	// The in-doubt call is never re-sent.
	wantRefusal(t, mustCall(t, cs, "dies__echo", echo, key("d1")), "in_doubt")
	// A healthy sibling is untouched.
	if r := mustCall(t, cs, "once__echo", echo, nil); r.IsError {
		t.Errorf("sibling: %q", text(r))
	}
	resp := readyz(t, g)
	if resp.Ready != true {
		t.Errorf("readyz: %+v", resp)
	}
}
