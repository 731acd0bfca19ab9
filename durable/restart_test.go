package durable

// A program that embeds a journal, SIGKILLed mid-call and started again:
// the test binary re-executes itself as that program ("restartchild", see
// TestMain), with the effect server as a real stdio MCP server process.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
)

// restartLine is what a restart child prints: its executor first, then,
// once its call has returned, the answer and how long the call took from
// the journal's creation.
type restartLine struct {
	Executor     string          `json:"executor"`
	Done         bool            `json:"done,omitempty"`
	Replayed     bool            `json:"replayed,omitempty"`
	Code         refusal.Code    `json:"code,omitempty"`
	RetryAfterMs int64           `json:"retryAfterMs,omitempty"`
	Error        string          `json:"error,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
	ElapsedMs    float64         `json:"elapsedMs"`
}

// restartChild is one run of the program: a journal with default options
// (StoreDSN only for PostgreSQL: a SQLite store's file is found without
// it), one call of DURABLE_RESTART_TOOL with DURABLE_RESTART_ARGS under the
// same key (DURABLE_RESTART_CALL) in every run. Mode "first" waits to be killed after its call
// returns; "control" is the program as it was before journals had
// executors of their own (an explicit Executor name, nothing registered).
func restartChild() int {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "restartchild:", err); return 3 }
	dsn, mode := os.Getenv("DURABLE_CRASH_DSN"), os.Getenv("DURABLE_RESTART_MODE")
	s, err := openDSN(ctx, dsn)
	if err != nil {
		return fail(err)
	}
	defer s.Close()
	cs, err := connectEffectServer(ctx, os.Getenv("DURABLE_CRASH_FILE"))
	if err != nil {
		return fail(err)
	}
	defer cs.Close()
	o := &JournalOptions{Scope: "restart", Repeatable: func(_, tool string) bool { return tool == "charge_once" }}
	if strings.HasPrefix(dsn, "postgres") {
		o.StoreDSN = dsn
	}
	if mode == "control" {
		o.Executor = "control"
	}
	start := time.Now()
	j, err := NewJournal(s, o)
	if err != nil {
		return fail(err)
	}
	defer j.Close()
	out := json.NewEncoder(os.Stdout)
	if err := out.Encode(restartLine{Executor: j.Executor()}); err != nil {
		return fail(err)
	}
	tool, args := os.Getenv("DURABLE_RESTART_TOOL"), json.RawMessage(os.Getenv("DURABLE_RESTART_ARGS"))
	c := Call{RunID: "restart", ToolCallID: os.Getenv("DURABLE_RESTART_CALL"), Server: "bank", Tool: tool, Args: args, Owner: "app"}
	res, replayed, err := j.Do(ctx, c, effectOf(cs, tool, args))
	line := restartLine{Executor: j.Executor(), Done: true, Replayed: replayed,
		ElapsedMs: float64(time.Since(start).Microseconds()) / 1000}
	if e, ok := refusal.As(err); ok {
		line.Code, line.RetryAfterMs = e.Code, e.RetryAfter.Milliseconds()
	} else if err != nil {
		line.Error = err.Error()
	} else {
		line.Result, _ = json.Marshal(res)
	}
	if err := out.Encode(line); err != nil {
		return fail(err)
	}
	if mode == "first" {
		time.Sleep(time.Hour) // killed here
	}
	return 0
}

// restartProc is a running restart child.
type restartProc struct {
	mode   string
	cmd    *exec.Cmd
	lines  chan restartLine
	stderr *strings.Builder
}

// startRestartChild starts a restart child in a process group of its own
// (with its effect server), on the store at dsn.
func startRestartChild(t *testing.T, dsn, file, cache, mode, call, tool, args string) *restartProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(childEnv(), envRole+"=restartchild", "DURABLE_CRASH_DSN="+dsn, "DURABLE_CRASH_FILE="+file,
		"DURABLE_RESTART_MODE="+mode, "DURABLE_RESTART_CALL="+call, "DURABLE_RESTART_TOOL="+tool, "DURABLE_RESTART_ARGS="+args,
		"XDG_CACHE_HOME="+cache) // PostgreSQL's instance slots (os.UserCacheDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &restartProc{mode: mode, cmd: cmd, lines: make(chan restartLine, 4), stderr: &strings.Builder{}}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var l restartLine
			if err := json.Unmarshal(sc.Bytes(), &l); err == nil {
				p.lines <- l
			}
		}
		_ = cmd.Wait()
		close(p.lines)
	}()
	t.Cleanup(p.kill)
	return p
}

// next returns the child's next line, failing the test when it exits or
// says nothing within 60 s.
func (p *restartProc) next(t *testing.T) restartLine {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatalf("restart child (%s) exited early: %s", p.mode, p.stderr)
		}
		return l
	case <-time.After(60 * time.Second):
		t.Fatalf("restart child (%s) said nothing within 60 s: %s", p.mode, p.stderr)
	}
	return restartLine{}
}

// kill SIGKILLs the child's process group (the child and its effect
// server) and waits for the child.
func (p *restartProc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	for range p.lines {
	}
}

func instanceOf(executor string) string {
	i, _, _ := strings.Cut(executor, "#")
	return i
}

// TestRestartAnswersAtOnce: a program that embeds a journal (defaults, on
// SQLite and on PostgreSQL) is SIGKILLed while its call is at the server,
// and started again on the same store. Its journal takes the dead one's
// instance, and the resumed call is answered at once, well inside the
// 30 s lease: in_doubt, never sent again; a repeatable one re-sent with the
// same key (the server dedups: one effect); a call the dead program had
// recorded replayed. The control, the same program with an explicit
// executor name (what every library journal was before), gets run_busy
// for the rest of the lease. The server counts exactly one effect.
func TestRestartAnswersAtOnce(t *testing.T) {
	for _, k := range storeKinds(t, false) {
		t.Run(k.name, func(t *testing.T) {
			s, dsn := k.open(t)
			cache := t.TempDir()
			for _, tc := range []struct {
				name, call, tool, args string
				recorded               bool // the first run records its outcome before it is killed
			}{
				{"in flight", "c1", "charge", `{"amount":5,"sleepMs":600000}`, false},
				{"repeatable in flight", "c2", "charge_once", `{"amount":6,"sleepMs":2000}`, false},
				{"recorded", "c3", "charge", `{"amount":7}`, true},
			} {
				t.Run(tc.name, func(t *testing.T) {
					ctx := ctxT(t)
					file := filepath.Join(t.TempDir(), "effects")
					key := "restart:" + tc.call
					first := startRestartChild(t, dsn, file, cache, "first", tc.call, tc.tool, tc.args)
					dead := first.next(t).Executor
					var firstAnswer restartLine
					if tc.recorded {
						firstAnswer = first.next(t)
					} else {
						deadline := time.Now().Add(60 * time.Second)
						for e, _ := effectsIn(t, file); len(e[key]) == 0; e, _ = effectsIn(t, file) {
							if time.Now().After(deadline) {
								t.Fatalf("no effect within 60 s: %s", first.stderr)
							}
							time.Sleep(5 * time.Millisecond)
						}
					}
					first.kill()
					killed := time.Now()

					if tc.call == "c1" {
						control := startRestartChild(t, dsn, file, cache, "control", tc.call, tc.tool, tc.args)
						control.next(t)
						got := control.next(t)
						if got.Code != refusal.RunBusy || got.RetryAfterMs < (DefaultLease-10*time.Second).Milliseconds() {
							t.Fatalf("control (no executor of its own): %+v, want run_busy for the rest of the 30 s lease", got)
						}
						t.Logf("control, as before: run_busy after %.1f ms, retry after %d ms", got.ElapsedMs, got.RetryAfterMs)
					}

					resume := startRestartChild(t, dsn, file, cache, "resume", tc.call, tc.tool, tc.args)
					restarted := resume.next(t).Executor
					got := resume.next(t)
					t.Logf("dead %s, restarted %s: code %q, replayed %v, error %q: %.1f ms from the journal's creation, %v from the kill",
						dead, restarted, got.Code, got.Replayed, got.Error, got.ElapsedMs, time.Since(killed).Round(time.Millisecond))
					if instanceOf(restarted) != instanceOf(dead) || restarted == dead || !strings.Contains(dead, "/journal-") {
						t.Fatalf("restarted as %s after %s: want the dead one's instance, a new incarnation", restarted, dead)
					}
					if got.Code == refusal.RunBusy {
						t.Fatalf("resume got run_busy: %+v", got)
					}
					limit := 5 * time.Second // the lease is 30 s
					effects, sends := effectsIn(t, file)
					switch {
					case tc.recorded:
						if !got.Replayed || firstAnswer.Code != "" || firstAnswer.Error != "" || !jsonEqual(got.Result, firstAnswer.Result) {
							t.Fatalf("resume %+v, want the recorded answer %+v replayed", got, firstAnswer)
						}
						checkReceipt(t, key, childLine{Result: got.Result}, effects[key])
					case tc.tool == "charge":
						if got.Code != refusal.InDoubt {
							t.Fatalf("resume %+v, want in_doubt", got)
						}
						if r, err := s.GetRecord(ctx, store.RecordKey{Scope: "restart", RunID: "restart", ToolCallID: tc.call}); err != nil || r.State != store.StateInDoubt {
							t.Fatalf("record %+v, %v: want in doubt", r, err)
						}
						if len(effects[key]) != 1 {
							t.Fatalf("effects of %s: %v, want exactly 1", key, effects[key])
						}
					default: // repeatable: re-sent once with the same key
						if got.Code != "" || got.Error != "" || got.Replayed {
							t.Fatalf("resume %+v, want the repeatable call re-sent", got)
						}
						checkReceipt(t, key, childLine{Result: got.Result}, effects[key])
						if sends[key] != 2 {
							t.Fatalf("%s sent %d times, want twice (the dead program's and the resume's)", key, sends[key])
						}
						limit += 2 * time.Second // the server's sleepMs
					}
					if el := time.Duration(got.ElapsedMs * float64(time.Millisecond)); el > limit {
						t.Fatalf("resume answered after %v, want well under the lease (< %v)", el, limit)
					}
				})
			}
		})
	}
}
