package durable

// Crash tests with real processes. The test binary re-executes itself in
// three roles (TestMain): "crashchild" runs one durable run of four calls
// against a real stdio MCP server (the test binary again, in the
// "effectserver" role) and may SIGKILL itself at a named point;
// "racechild" races one key from several goroutines.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/effectserver"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
)

// The crash points: "before-claim", "claimed", "effect-returned" and
// "recorded" are hooks inside Do; "during" kills the process while the
// server is handling the call (after its effect, before its answer).
var crashPoints = []string{"before-claim", "claimed", "during", "effect-returned", "recorded"}

// The durable run of the crash child: call ID, tool, and whether the tool
// is repeatable (operator config; charge_once dedups on the key).
var crashCalls = []struct{ id, tool string }{
	{"c1", "charge"},
	{"c2", "charge_once"},
	{"c3", "charge"},
	{"c4", "reject"},
}

const crashLease = 250 * time.Millisecond

// childLine is one line a crash child prints per call.
type childLine struct {
	Call     string          `json:"call"`
	Replayed bool            `json:"replayed,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	Error    string          `json:"error,omitempty"`
	Code     refusal.Code    `json:"code,omitempty"`
}

// childEnv is the environment of a re-executed test binary. Under -race a
// process sleeps 1 s at exit by default (atexit_sleep_ms); the children
// have nothing left to report then.
func childEnv() []string {
	return append(os.Environ(), "GORACE=atexit_sleep_ms=0")
}

func killSelf() {
	p, _ := os.FindProcess(os.Getpid())
	_ = p.Kill() // SIGKILL on Unix
	select {}
}

// connectEffectServer starts the effect server as a stdio subprocess.
func connectEffectServer(ctx context.Context, file string) (*mcp.ClientSession, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(childEnv(), envRole+"=effectserver", effectserver.EnvFile+"="+file)
	return mcp.NewClient(&mcp.Implementation{Name: "crash-child", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
}

func crashChild() int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "crashchild:", err); return 3 }
	s, err := openDSN(ctx, os.Getenv("DURABLE_CRASH_DSN"))
	if err != nil {
		return fail(err)
	}
	defer s.Close()
	cs, err := connectEffectServer(ctx, os.Getenv("DURABLE_CRASH_FILE"))
	if err != nil {
		return fail(err)
	}
	defer cs.Close()
	crashCall, crashAt, _ := strings.Cut(os.Getenv("DURABLE_CRASH_POINT"), "/")
	var current string
	j, err := NewJournal(s, &JournalOptions{
		Scope:      "crash",
		Lease:      crashLease,
		Repeatable: func(server, tool string) bool { return tool == "charge_once" },
	})
	if err != nil {
		return fail(err)
	}
	j.crash = func(point string) {
		if current == crashCall && point == crashAt {
			killSelf()
		}
	}
	run := os.Getenv("DURABLE_CRASH_RUN")
	out := bufio.NewWriter(os.Stdout)
	for _, cc := range crashCalls {
		current = cc.id
		// Arguments are part of the fingerprint: the same call carries the
		// same arguments in every process of the run.
		args := json.RawMessage(`{"amount":5,"sleepMs":15}`)
		if cc.tool != "charge" {
			args = json.RawMessage(`{"amount":7}`)
		}
		effect := func(ctx context.Context, key string) (*mcp.CallToolResult, error) {
			if current == crashCall && crashAt == "during" {
				go func() { time.Sleep(time.Duration(rand.IntN(15)) * time.Millisecond); killSelf() }()
			}
			return cs.CallTool(ctx, &mcp.CallToolParams{Name: cc.tool, Arguments: args, Meta: mcp.Meta{"idempotencyKey": key}})
		}
		c := Call{RunID: run, ToolCallID: cc.id, Server: "bank", Tool: cc.tool, Args: args, Owner: "crash"}
		var line childLine
		for {
			res, replayed, err := j.Do(ctx, c, effect)
			if e, ok := refusal.As(err); ok && e.Code == refusal.RunBusy {
				time.Sleep(min(e.RetryAfter, 2*time.Second) + time.Millisecond)
				continue
			}
			line = childLine{Call: cc.id, Replayed: replayed}
			if err != nil {
				line.Error = err.Error()
				if e, ok := refusal.As(err); ok {
					line.Code = e.Code
				}
			} else {
				line.Result, _ = json.Marshal(res)
			}
			break
		}
		b, _ := json.Marshal(line)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	return 0
}

type crashEnv struct {
	dsn, file string
}

// runChild runs one crash child; killAfter > 0 kills it after that long.
func runChild(t *testing.T, env crashEnv, run, point string, killAfter time.Duration) (lines map[string]childLine, killed bool) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(childEnv(), envRole+"=crashchild", "DURABLE_CRASH_DSN="+env.dsn, "DURABLE_CRASH_FILE="+env.file,
		"DURABLE_CRASH_RUN="+run, "DURABLE_CRASH_POINT="+point)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if killAfter > 0 {
		timer := time.AfterFunc(killAfter, func() { _ = cmd.Process.Kill() })
		defer timer.Stop()
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("run %s: child hung; stderr:\n%s", run, stderr.String())
	}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != -1 { // -1: killed by a signal
			t.Fatalf("run %s point %q: child failed: %v\nstderr:\n%s", run, point, err, stderr.String())
		}
		killed = true
	}
	lines = map[string]childLine{}
	for l := range strings.SplitSeq(stdout.String(), "\n") {
		if l == "" {
			continue
		}
		var cl childLine
		if err := json.Unmarshal([]byte(l), &cl); err != nil {
			t.Fatalf("run %s: bad child line %q", run, l)
		}
		lines[cl.Call] = cl
	}
	return lines, killed
}

type crashStats struct {
	mu                                 sync.Mutex
	runs, killed, inDoubt, resent      int
	replayedAfterCrash, freshAfterKill int
	points                             map[string]int
}

// TestCrashResume kills durable runs at every crash point and at random
// times, resumes them, and checks that no effect ever happened twice, every
// in-doubt call is reported as such (or re-sent once when repeatable), and
// no recorded outcome is lost.
func TestCrashResume(t *testing.T) {
	total := 200
	if testing.Short() {
		total = 40
	}
	if v := os.Getenv("DURABLE_CRASH_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("DURABLE_CRASH_RUNS=%q", v)
		}
		total = n
	}
	for _, k := range storeKinds(t, false) {
		t.Run(k.name, func(t *testing.T) {
			_, dsn := k.open(t)
			s, err := openDSN(ctxT(t), dsn) // the parent's own handle, like a third process
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			env := crashEnv{dsn: dsn, file: filepath.Join(t.TempDir(), "effects")}
			st := &crashStats{points: map[string]int{}}
			var wg sync.WaitGroup
			jobs := make(chan int)
			for range 4 {
				wg.Go(func() {
					for i := range jobs {
						crashOne(t, s, env, i, st)
					}
				})
			}
			for i := range total {
				if t.Failed() {
					break
				}
				jobs <- i
			}
			close(jobs)
			wg.Wait()
			t.Logf("%d runs: %d killed, crash points %v; after resume: %d in doubt, %d repeatable re-sent, %d replayed, %d first run after a kill",
				st.runs, st.killed, st.points, st.inDoubt, st.resent, st.replayedAfterCrash, st.freshAfterKill)
			if t.Failed() {
				return
			}
			// The test must really have crashed at every point.
			for _, p := range crashPoints {
				if st.points[p] == 0 && total >= 2*len(crashPoints)*len(crashCalls) {
					t.Errorf("crash point %s never exercised", p)
				}
			}
			if total >= 40 && (st.inDoubt == 0 || st.resent == 0 || st.replayedAfterCrash == 0) {
				t.Errorf("coverage too thin: %d in doubt, %d re-sent, %d replayed", st.inDoubt, st.resent, st.replayedAfterCrash)
			}
		})
	}
}

func crashOne(t *testing.T, s store.Store, env crashEnv, i int, st *crashStats) {
	ctx := ctxT(t)
	run := fmt.Sprintf("run%04d", i)
	point := ""
	var killAfter time.Duration
	if i%5 == 4 {
		killAfter = time.Duration(20+rand.IntN(250)) * time.Millisecond // purely random time
	} else {
		k := i - i/5 // the crash-point runs, numbered 0, 1, 2, ...
		cc := crashCalls[k%len(crashCalls)]
		p := crashPoints[(k/len(crashCalls))%len(crashPoints)]
		point = cc.id + "/" + p
	}
	first, killed := runChild(t, env, run, point, killAfter)

	// What survived the crash.
	recs, err := s.ListRecords(ctx, "crash", run)
	if err != nil {
		t.Error(err)
		return
	}
	recorded := map[string]store.Record{}
	for _, r := range recs {
		recorded[r.ToolCallID] = r
	}
	effects, _ := effectsIn(t, env.file)
	// The claim is committed before the effect: no effect without a record.
	for _, cc := range crashCalls {
		key := run + ":" + cc.id
		if len(effects[key]) > 0 {
			if _, ok := recorded[cc.id]; !ok {
				t.Errorf("%s: an effect happened without a journal record (point %q)", key, point)
			}
		}
	}

	resumed, killed2 := runChild(t, env, run, "", 0)
	if killed2 {
		t.Errorf("%s: resume was killed", run)
		return
	}
	effects, sends := effectsIn(t, env.file)

	st.mu.Lock()
	defer st.mu.Unlock()
	st.runs++
	if killed {
		st.killed++
		if point != "" {
			_, p, _ := strings.Cut(point, "/")
			st.points[p]++
		}
	}
	for _, cc := range crashCalls {
		key := run + ":" + cc.id
		got, ok := resumed[cc.id]
		if !ok {
			t.Errorf("%s: the resume did not answer", key)
			continue
		}
		if n := len(effects[key]); n > 1 {
			t.Errorf("%s: %d effects (point %q)", key, n, point)
		}
		rec, hadRecord := recorded[cc.id]
		// No recorded outcome is lost: it is replayed, identically.
		if hadRecord && (rec.State == store.StateSucceeded || rec.State == store.StateFailed) {
			st.replayedAfterCrash++
			if !got.Replayed {
				t.Errorf("%s: recorded outcome was not replayed: %+v", key, got)
			}
			var o outcome
			if err := json.Unmarshal(rec.Outcome, &o); err != nil {
				t.Errorf("%s: %v", key, err)
			} else if o.Error != nil && got.Error != o.Error.Message {
				t.Errorf("%s: replayed error %q, recorded %q", key, got.Error, o.Error.Message)
			} else if o.Error == nil && !jsonEqual(got.Result, o.Result) {
				t.Errorf("%s: replayed result %s, recorded %s", key, got.Result, o.Result)
			}
		}
		// What the crashed child already reported is what the resume says.
		if f, ok := first[cc.id]; ok && f.Code == "" {
			if !got.Replayed || f.Error != got.Error || !jsonEqual(f.Result, got.Result) {
				t.Errorf("%s: crashed child saw %+v, resume %+v", key, f, got)
			}
		}
		if !hadRecord && killed {
			st.freshAfterKill++
			if got.Replayed {
				t.Errorf("%s: replayed without a record", key)
			}
		}
		switch cc.tool {
		case "charge", "reject":
			if got.Code == refusal.InDoubt {
				if hadRecord && (rec.State == store.StateSucceeded || rec.State == store.StateFailed) {
					t.Errorf("%s: in doubt although its outcome was recorded (%+v)", key, rec)
				}
				// A claim the killed child had sent may commit after its death
				// (PostgreSQL finishes a statement it received), so after our
				// snapshot: then nothing can have been sent.
				if !hadRecord && len(effects[key]) != 0 {
					t.Errorf("%s: in doubt, no record before resume, yet an effect", key)
				}
				r, err := s.GetRecord(ctx, store.RecordKey{Scope: "crash", RunID: run, ToolCallID: cc.id})
				if err != nil || r.State != store.StateInDoubt {
					t.Errorf("%s: reported in doubt, record %+v %v", key, r, err)
				}
				st.inDoubt++
				continue
			}
			if got.Code != "" {
				t.Errorf("%s: refused: %+v", key, got)
				continue
			}
			if cc.tool == "reject" {
				if want := "card declined for " + key; !strings.HasSuffix(got.Error, want) {
					t.Errorf("%s: error %q, want %q", key, got.Error, want)
				}
				continue
			}
			checkReceipt(t, key, got, effects[key])
		case "charge_once":
			// Repeatable: never in doubt, re-sent with the same key, one effect.
			if got.Code != "" || got.Error != "" {
				t.Errorf("%s: repeatable call answered %+v", key, got)
				continue
			}
			checkReceipt(t, key, got, effects[key])
			if sends[key] > 1 {
				st.resent++
			}
		}
	}
}

func checkReceipt(t *testing.T, key string, got childLine, effects []string) {
	t.Helper()
	if len(effects) != 1 {
		t.Errorf("%s: answered a result but %d effects happened", key, len(effects))
		return
	}
	var res struct {
		StructuredContent effectserver.Receipt `json:"structuredContent"`
	}
	if err := json.Unmarshal(got.Result, &res); err != nil || res.StructuredContent.Receipt != effects[0] || res.StructuredContent.Key != key {
		t.Errorf("%s: result %s does not carry the effect's receipt %s", key, got.Result, effects[0])
	}
}

func jsonEqual(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// raceChild races one key from DURABLE_RACE_N goroutines, each with its own
// journal, starting at DURABLE_RACE_AT (unix ns), and prints "ok" or "busy"
// per goroutine.
func raceChild() int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "racechild:", err); return 3 }
	s, err := openDSN(ctx, os.Getenv("DURABLE_CRASH_DSN"))
	if err != nil {
		return fail(err)
	}
	defer s.Close()
	cs, err := connectEffectServer(ctx, os.Getenv("DURABLE_CRASH_FILE"))
	if err != nil {
		return fail(err)
	}
	defer cs.Close()
	n, _ := strconv.Atoi(os.Getenv("DURABLE_RACE_N"))
	at, _ := strconv.ParseInt(os.Getenv("DURABLE_RACE_AT"), 10, 64)
	args := json.RawMessage(`{"amount":10,"sleepMs":400}`)
	c := Call{RunID: "race", ToolCallID: "one", Server: "bank", Tool: "charge", Args: args}
	var mu sync.Mutex
	var wg sync.WaitGroup
	time.Sleep(time.Until(time.Unix(0, at)))
	for range n {
		j, err := NewJournal(s, nil)
		if err != nil {
			return fail(err)
		}
		wg.Go(func() {
			_, _, err := j.Do(ctx, c, effectOf(cs, "charge", args))
			mu.Lock()
			defer mu.Unlock()
			switch e, _ := refusal.As(err); {
			case err == nil:
				fmt.Println("ok")
			case e != nil && e.Code == refusal.RunBusy && e.Retryable && e.Message == msgRunBusy:
				fmt.Println("busy")
			default:
				fmt.Println("error", err)
			}
		})
	}
	wg.Wait()
	return 0
}

// TestConcurrentProcesses: two processes of five goroutines each race one
// key: one effect, nine run_busy, and a retry gets the first result.
func TestConcurrentProcesses(t *testing.T) {
	for _, k := range storeKinds(t, false) {
		t.Run(k.name, func(t *testing.T) {
			s, dsn := k.open(t)
			file := filepath.Join(t.TempDir(), "effects")
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			at := time.Now().Add(1500 * time.Millisecond).UnixNano() // both children started and connected by then
			var wg sync.WaitGroup
			outs := make([]string, 2)
			for i := range 2 {
				wg.Go(func() {
					cmd := exec.Command(exe)
					cmd.Env = append(childEnv(), envRole+"=racechild", "DURABLE_CRASH_DSN="+dsn, "DURABLE_CRASH_FILE="+file,
						"DURABLE_RACE_N=5", "DURABLE_RACE_AT="+strconv.FormatInt(at, 10))
					cmd.WaitDelay = 10 * time.Second
					out, err := cmd.Output()
					if err != nil {
						t.Errorf("child %d: %v", i, err)
					}
					outs[i] = string(out)
				})
			}
			wg.Wait()
			all := outs[0] + outs[1]
			if strings.Count(all, "ok\n") != 1 || strings.Count(all, "busy\n") != 9 {
				t.Fatalf("want 1 ok and 9 busy, got:\n%s", all)
			}
			eff, _ := effectsIn(t, file)
			if len(eff["race:one"]) != 1 {
				t.Fatalf("effects %v", eff)
			}
			j := newJournal(t, s, nil)
			res, replayed, err := j.Do(ctxT(t), Call{RunID: "race", ToolCallID: "one", Server: "bank", Tool: "charge",
				Args: json.RawMessage(`{"amount":10,"sleepMs":400}`)}, nil2(t))
			if err != nil || !replayed {
				t.Fatal(replayed, err)
			}
			b, _ := json.Marshal(res)
			checkReceipt(t, "race:one", childLine{Result: b}, eff["race:one"])
		})
	}
}
