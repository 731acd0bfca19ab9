package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// readyStatus GETs /readyz and returns its status code, or 0 when the
// listener no longer answers.
func readyStatus(g *gw) int {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + g.addr + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// logIndex returns the index of the first log line whose msg is msg, or -1.
func (g *gw) logIndex(msg string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, l := range g.logs {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg {
			return i
		}
	}
	return -1
}

// TestDrainOnSIGTERM: a gateway whose /readyz is watched answers 503 at
// once on SIGTERM while it keeps serving for shutdownDrain: a session
// opened before goes on, a new one opens, and a keyed call started during
// the drain that outlasts it completes (and is journaled: a restart
// replays it). Only then does the listener close.
func TestDrainOnSIGTERM(t *testing.T) {
	t.Parallel()
	const drain = 5 * time.Second // room for a loaded machine before the late call below
	dir := t.TempDir()
	effects, marker := filepath.Join(dir, "effects"), filepath.Join(dir, "marker")
	writeConfig(t, dir, fmt.Sprintf("servers:\n%sshutdownDrain: %v\nshutdownTimeout: 20s\n", slowServer("slow", effects, marker), drain))
	g := startGateway(t, dir)
	cs := connect(t, g.url, "")
	if s := readyStatus(g); s != http.StatusOK { // the probe a load balancer would make
		t.Fatalf("/readyz %d before SIGTERM", s)
	}

	sigAt := time.Now()
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Readiness fails first: 503 well within the drain, from a listener
	// that still answers.
	for readyStatus(g) != http.StatusServiceUnavailable {
		if time.Since(sigAt) > drain/2 {
			t.Fatalf("/readyz not 503 %v after SIGTERM\n%s", time.Since(sigAt), g.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t503 := time.Since(sigAt)
	r := readyz(t, g)
	if r.Ready || !r.Draining {
		t.Errorf("readyz during the drain: %+v, want not ready and draining", r)
	}
	// Still serving: the open session calls, a new session opens.
	if r := mustCall(t, cs, "slow__slow_count", map[string]any{"ms": 0}, key("d0")); r.IsError || text(r) != "1" {
		t.Fatalf("call on the open session during the drain: %q", text(r))
	}
	cs2 := connect(t, g.url, "")
	// A call started late in the drain, running past its end: it completes.
	time.Sleep(time.Until(sigAt.Add(drain - 700*time.Millisecond)))
	var wg sync.WaitGroup
	var got string
	var callErr error
	wg.Go(func() {
		r, err := call(t, cs2, "slow__slow_count", map[string]any{"ms": 2000}, key("d1"))
		if err != nil {
			callErr = err
			return
		}
		got = text(r)
	})
	wg.Wait()
	exitErr := g.stop(syscall.SIGTERM) // already signalled: waits for the exit
	stopped := time.Since(sigAt)
	if callErr != nil || got != "2" {
		t.Fatalf("call started during the drain: %q, %v; want 2\n%s", got, callErr, g.logText())
	}
	if exitErr != nil {
		t.Errorf("exit after SIGTERM: %v", exitErr)
	}
	if stopped < drain {
		t.Errorf("stopped %v after SIGTERM, before the %v drain ended", stopped, drain)
	}
	di, si := g.logIndex("gateway: draining: /readyz answers 503, calls are still served"), g.logIndex("gateway: shutting down")
	if di < 0 || si < di {
		t.Errorf("log: draining at line %d, shutting down at line %d; want draining first\n%s", di, si, g.logText())
	}
	t.Logf("/readyz 503 %v after SIGTERM; the drain's call answered; exit %v after SIGTERM", t503.Round(time.Millisecond), stopped.Round(time.Millisecond))

	// Journaled: the restarted gateway replays it, nothing runs again.
	writeConfig(t, dir, fmt.Sprintf("servers:\n%sshutdownDrain: 0\n", slowServer("slow", effects, marker)))
	g2 := startGateway(t, dir)
	if r := mustCall(t, connect(t, g2.url, ""), "slow__slow_count", map[string]any{"ms": 2000}, key("d1")); text(r) != "2" {
		t.Errorf("after restart: %q, want the recorded 2", text(r))
	}
	if n := len(lines(t, effects)); n != 2 {
		t.Errorf("effects %d, want 2", n)
	}
}

// TestNoDrainWithoutWatcher: a gateway whose /readyz nobody asked stops at
// once on SIGTERM whatever shutdownDrain says, and so does one with
// shutdownDrain: 0 that is watched.
func TestNoDrainWithoutWatcher(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, cfg string
		probe     bool
	}{
		{"unwatched", "shutdownDrain: 30s\n", false},
		{"drain 0", "shutdownDrain: 0\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeConfig(t, dir, fmt.Sprintf("servers:\n%s%s", fixtureServer("fx", "-tools", "echo"), tc.cfg))
			g := startGateway(t, dir)
			if tc.probe && readyStatus(g) != http.StatusOK {
				t.Fatal("not ready")
			}
			start := time.Now()
			if err := g.stop(syscall.SIGTERM); err != nil {
				t.Errorf("exit: %v", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("stopped %v after SIGTERM, want at once", d)
			}
			if g.logIndex("gateway: draining: /readyz answers 503, calls are still served") >= 0 {
				t.Errorf("drained:\n%s", g.logText())
			}
		})
	}
}

// TestNamedInstanceTakesOver: on PostgreSQL, where each process keeps its
// lock files on a disk of its own (as pods do), a gateway SIGKILLed in a
// keyed call and started again under the same GATEHOUSE_INSTANCE takes its
// predecessor's place: the retry is in_doubt at once (the lease is 10
// minutes), the effect ran once, and the instance's audit chain goes on
// across both processes and verifies. Without the name, the restarted
// process is a stranger and the same retry is run_busy.
func TestNamedInstanceTakesOver(t *testing.T) {
	dsn := pgStore(t)
	dir := t.TempDir()
	effects, marker := filepath.Join(dir, "effects"), filepath.Join(dir, "marker")
	writeConfig(t, dir, fmt.Sprintf("store: %q\nservers:\n%sjournal: {lease: 10m}\nshutdownDrain: 0\n", dsn, slowServer("slow", effects, marker)))
	// A fresh cache directory per process: no lock file is shared.
	pod := func(instance string) []string {
		e := env("XDG_CACHE_HOME=" + t.TempDir())
		if instance != "" {
			e = append(e, "GATEHOUSE_INSTANCE="+instance)
		}
		return e
	}
	args := map[string]any{"ms": 600000}
	killed := func(instance, k string) {
		g := startGatewayEnv(t, dir, pod(instance))
		if instance != "" && !strings.Contains(g.logText(), `"instance":"`+instance+`"`) {
			t.Fatalf("the executor is not registered under %s:\n%s", instance, g.logText())
		}
		cs := connect(t, g.url, "")
		// An entry in the chain before the kill.
		if r := mustCall(t, cs, "slow__slow_count", map[string]any{"ms": 0}, key(k+"-before")); r.IsError {
			t.Fatalf("call: %q", text(r))
		}
		_ = os.Remove(marker)
		done := make(chan error, 1)
		go func() {
			_, err := call(t, cs, "slow__slow_count", args, key(k))
			done <- err
		}()
		waitFile(t, marker)
		g.stop(syscall.SIGKILL)
		if err := <-done; err == nil {
			t.Fatal("the call survived the gateway's death")
		}
		_ = os.Remove(marker)
	}

	killed("gatehouse-0", "n1")
	g := startGatewayEnv(t, dir, pod("gatehouse-0"))
	cs := connect(t, g.url, "")
	start := time.Now()
	wantRefusal(t, mustCall(t, cs, "slow__slow_count", args, key("n1")), "in_doubt")
	t.Logf("in_doubt %v after the restart's first call", time.Since(start).Round(time.Millisecond))
	if n := len(lines(t, effects)); n != 2 { // n1-before and n1
		t.Errorf("effects %d, want 2", n)
	}
	g.stop(syscall.SIGTERM)

	// Its audit chain went on: one chain gw/gatehouse-0, entries of both
	// incarnations, verified.
	out, err := exec.Command(bins.gatehouse, "audit", "export", "--store", dsn, "--chain", "gw/gatehouse-0").Output()
	if err != nil {
		t.Fatalf("audit export: %v", err)
	}
	var seqs []int64
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var e struct {
			Chain string `json:"chain"`
			Seq   int64  `json:"seq"`
		}
		if json.Unmarshal([]byte(l), &e) != nil || e.Chain != "gw/gatehouse-0" {
			t.Fatalf("export line %q", l)
		}
		seqs = append(seqs, e.Seq)
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("chain gw/gatehouse-0 seqs %v, want 1..n without a gap", seqs)
		}
	}
	if len(seqs) < 2 || !strings.Contains(string(out), "in_doubt") {
		t.Errorf("chain gw/gatehouse-0 lacks the restarted incarnation's entries:\n%s", out)
	}
	vout, err := exec.Command(bins.gatehouse, "audit", "verify", "--store", dsn).CombinedOutput()
	if err != nil || !strings.Contains(string(vout), "verifies") {
		t.Fatalf("audit verify: %v\n%s", err, vout)
	}

	// The control: no name, a process of its own disk, a stranger.
	killed("", "n2")
	g3 := startGatewayEnv(t, dir, pod(""))
	wantRefusal(t, mustCall(t, connect(t, g3.url, ""), "slow__slow_count", args, key("n2")), "run_busy")
}

// TestInstanceFromConfig: instance: in the file names the executor; a bad
// GATEHOUSE_INSTANCE stops the start with exit 2 and names the variable.
func TestInstanceFromConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, fmt.Sprintf("instance: edge-7\nservers:\n%s", fixtureServer("fx", "-tools", "echo")))
	g := startGateway(t, dir)
	if !strings.Contains(g.logText(), `"instance":"edge-7"`) {
		t.Errorf("executor not registered as edge-7:\n%s", g.logText())
	}
	g.stop(syscall.SIGTERM)

	cmd := exec.Command(bins.gatehouse, "serve", "--config", filepath.Join(dir, "gatehouse.yaml"), "--listen", "127.0.0.1:0")
	cmd.Dir = dir
	cmd.Env = env("GATEHOUSE_INSTANCE=gw#1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "$GATEHOUSE_INSTANCE") || !strings.Contains(string(out), "instance") {
		t.Errorf("bad GATEHOUSE_INSTANCE: %v\n%s", err, out)
	}
}
