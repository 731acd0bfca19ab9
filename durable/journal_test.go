package durable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/effectserver"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
)

// forEachStore runs fn against memory, SQLite and (when configured)
// PostgreSQL.
func forEachStore(t *testing.T, fn func(t *testing.T, s store.Store)) {
	for _, k := range storeKinds(t, true) {
		t.Run(k.name, func(t *testing.T) {
			s, _ := k.open(t)
			fn(t, s)
		})
	}
}

func newJournal(t testing.TB, s store.JournalStore, o *JournalOptions) *Journal {
	t.Helper()
	j, err := NewJournal(s, o)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// effectJournal is the set-up the journal tests share: a journal on s
// with options o, and the client session cs of an in-process effect
// server that counts its effects in file (read them with effectsIn).
func effectJournal(t testing.TB, s store.JournalStore, o *JournalOptions) (j *Journal, cs *mcp.ClientSession, file string) {
	t.Helper()
	file = filepath.Join(t.TempDir(), "effects")
	cs = inMemServer(t, file)
	return newJournal(t, s, o), cs, file
}

func getRecord(t testing.TB, s store.JournalStore, j *Journal, c Call) store.Record {
	t.Helper()
	r, err := s.GetRecord(ctxT(t), j.key(c))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func wantCode(t testing.TB, err error, code refusal.Code) *refusal.Error {
	t.Helper()
	e, ok := refusal.As(err)
	if !ok || e.Code != code {
		t.Fatalf("err = %v, want a refusal.Error with code %s", err, code)
	}
	return e
}

func TestDoRunsOnceAndReplays(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		ctx := ctxT(t)
		j, cs, file := effectJournal(t, s, &JournalOptions{Scope: "app"})
		args := json.RawMessage(`{"amount": 42}`)
		c := Call{RunID: "run1", ToolCallID: "c1", Server: "bank", Tool: "charge", Args: args, Owner: "alice"}
		res, replayed, err := j.Do(ctx, c, effectOf(cs, "charge", args))
		if err != nil || replayed || res == nil || res.IsError {
			t.Fatalf("first Do: res=%v replayed=%v err=%v", res, replayed, err)
		}
		first := mustJSONT(t, res)
		// A second journal (another executor, as after a restart) replays.
		j2 := newJournal(t, s, &JournalOptions{Scope: "app"})
		for _, jj := range []*Journal{j, j2} {
			// Same args, spelled differently: same canonical fingerprint.
			c2 := c
			c2.Args = json.RawMessage(`{ "amount":42.0 }`)
			res2, replayed, err := jj.Do(ctx, c2, func(context.Context, string) (*mcp.CallToolResult, error) {
				t.Fatal("effect ran again")
				return nil, nil
			})
			if err != nil || !replayed {
				t.Fatalf("replay: replayed=%v err=%v", replayed, err)
			}
			if got := mustJSONT(t, res2); !bytes.Equal(got, first) {
				t.Fatalf("replayed result differs:\n got %s\nwant %s", got, first)
			}
		}
		eff, _ := effectsIn(t, file)
		if len(eff["run1:c1"]) != 1 || len(eff) != 1 {
			t.Fatalf("effects = %v, want one for run1:c1", eff)
		}
		var rc effectserver.Receipt
		sc, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(sc, &rc); err != nil || rc.Receipt != eff["run1:c1"][0] || rc.Key != "run1:c1" {
			t.Fatalf("receipt %+v (%v) does not match effect %v", rc, err, eff)
		}
		r := getRecord(t, s, j, c)
		if r.State != store.StateSucceeded || r.Owner != "alice" || r.Executor != j.Executor() {
			t.Fatalf("record = %+v", r)
		}
		// The scope separates journals: another scope runs its own effect.
		j3 := newJournal(t, s, &JournalOptions{Scope: "other"})
		if _, replayed, err := j3.Do(ctx, c, effectOf(cs, "charge", args)); err != nil || replayed {
			t.Fatalf("other scope: replayed=%v err=%v", replayed, err)
		}
	})
}

func TestReplayOfFailures(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		ctx := ctxT(t)
		j, cs, _ := effectJournal(t, s, nil)
		args := json.RawMessage(`{"amount":1}`)

		// A JSON-RPC error response: failed, replayed as the same text.
		c := Call{RunID: "r", ToolCallID: "rej", Server: "bank", Tool: "reject", Args: args}
		_, _, err := j.Do(ctx, c, effectOf(cs, "reject", args))
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != effectserver.RejectCode {
			t.Fatalf("first: %v", err)
		}
		if r := getRecord(t, s, j, c); r.State != store.StateFailed {
			t.Fatalf("state %s", r.State)
		}
		var calls atomic.Int32
		_, replayed, err2 := j.Do(ctx, c, func(context.Context, string) (*mcp.CallToolResult, error) {
			calls.Add(1)
			return nil, nil
		})
		if !replayed || err2 == nil || err2.Error() != err.Error() || calls.Load() != 0 {
			t.Fatalf("replay: replayed=%v err=%q want %q", replayed, err2, err)
		}
		var we2 *jsonrpc.Error
		var rec *RecordedError
		if !errors.As(err2, &rec) || !errors.As(err2, &we2) || we2.Code != we.Code || we2.Message != we.Message || !bytes.Equal(we2.Data, we.Data) {
			t.Fatalf("replayed error %#v does not carry the JSON-RPC error %#v", err2, we)
		}

		// A tool error result: failed, replayed byte for byte.
		c = Call{RunID: "r", ToolCallID: "fr", Server: "bank", Tool: "fail_result", Args: args}
		res, _, err := j.Do(ctx, c, effectOf(cs, "fail_result", args))
		if err != nil || !res.IsError {
			t.Fatalf("fail_result: %v %v", res, err)
		}
		if r := getRecord(t, s, j, c); r.State != store.StateFailed {
			t.Fatalf("state %s", r.State)
		}
		res2, replayed, err := j.Do(ctx, c, nil2(t))
		if err != nil || !replayed || !bytes.Equal(mustJSONT(t, res2), mustJSONT(t, res)) {
			t.Fatalf("replay of error result: %s vs %s (%v)", mustJSONT(t, res2), mustJSONT(t, res), err)
		}

		// An error marked Failed by a Go tool.
		c = Call{RunID: "r", ToolCallID: "go", Server: "local", Tool: "fn"}
		_, _, err = j.Do(ctx, c, func(context.Context, string) (*mcp.CallToolResult, error) {
			return nil, Failed(errors.New("no such account: 7"))
		})
		_, replayed, err2 = j.Do(ctx, c, nil2(t))
		if err == nil || !replayed || err2.Error() != "no such account: 7" || err.Error() != err2.Error() {
			t.Fatalf("Failed: %v / %v", err, err2)
		}
		if _, ok := refusal.As(err2); ok {
			t.Fatalf("a plain failure replays as a refusal: %#v", err2)
		}

		// A refusal marked Failed (refused before anything was sent)
		// replays as the same refusal, found by type, not by its text.
		c = Call{RunID: "r", ToolCallID: "refused", Server: "bank", Tool: "charge"}
		_, _, err = j.Do(ctx, c, func(context.Context, string) (*mcp.CallToolResult, error) {
			return nil, Failed(&refusal.Error{Code: refusal.Quarantined, Message: "tool charge is quarantined", Err: errors.New("detail")})
		})
		_, replayed, err2 = j.Do(ctx, c, nil2(t))
		first := wantCode(t, err, refusal.Quarantined)
		again := wantCode(t, err2, refusal.Quarantined)
		if !replayed || again.Message != first.Message || again.Retryable || err.Error() != err2.Error() {
			t.Fatalf("refusal replay: %v / %v (%+v)", err, err2, again)
		}
		if again.Err != nil {
			t.Fatalf("a replayed refusal carries its cause: %v", again.Err)
		}
	})
}

// nil2 is an effect that must not run.
func nil2(t *testing.T) Effect {
	return func(context.Context, string) (*mcp.CallToolResult, error) {
		t.Error("effect ran although the outcome was recorded")
		return nil, errors.New("must not run")
	}
}

func TestKeyReused(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		ctx := ctxT(t)
		j, cs, file := effectJournal(t, s, nil)
		c := Call{RunID: "r", ToolCallID: "c", Server: "bank", Tool: "charge", Args: json.RawMessage(`{"amount":1}`), Owner: "alice"}
		if _, _, err := j.Do(ctx, c, effectOf(cs, "charge", c.Args)); err != nil {
			t.Fatal(err)
		}
		for name, mut := range map[string]func(*Call){
			"args":   func(c *Call) { c.Args = json.RawMessage(`{"amount":1000}`) },
			"tool":   func(c *Call) { c.Tool = "charge_once" },
			"server": func(c *Call) { c.Server = "bank2" },
			"owner":  func(c *Call) { c.Owner = "mallory" },
		} {
			c2 := c
			mut(&c2)
			res, replayed, err := j.Do(ctx, c2, nil2(t))
			e := wantCode(t, err, refusal.KeyReused)
			if res != nil || replayed || e.Retryable {
				t.Fatalf("%s: res=%v replayed=%v retryable=%v", name, res, replayed, e.Retryable)
			}
		}
		eff, _ := effectsIn(t, file)
		if len(eff["r:c"]) != 1 {
			t.Fatalf("effects %v", eff)
		}
		// Arguments that are not JSON are refused before anything is stored.
		_, _, err := j.Do(ctx, Call{RunID: "r", ToolCallID: "bad", Args: json.RawMessage(`{`)}, nil2(t))
		if !errors.Is(err, ErrInvalidCall) {
			t.Fatalf("bad args: %v", err)
		}
		if _, _, err := j.Do(ctx, Call{RunID: "", ToolCallID: "x"}, nil2(t)); !errors.Is(err, ErrInvalidCall) {
			t.Fatalf("empty run: %v", err)
		}
	})
}

// TestUnknownOutcome: an effect that may have reached the server is never
// recorded as failed: it is in doubt, and never sent again.
func TestUnknownOutcome(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		ctx := ctxT(t)
		j := newJournal(t, s, nil)
		causes := map[string]error{
			"eof":            io.ErrUnexpectedEOF,
			"closing":        &jsonrpc.Error{Code: codeServerClosing, Message: "server is closing"},
			"client-closing": &jsonrpc.Error{Code: codeClientClosing, Message: "client is closing"},
			"cancelled":      context.Canceled,
			"conn-lost":      mcp.ErrConnectionClosed,
		}
		for name, cause := range causes {
			c := Call{RunID: "r", ToolCallID: name, Server: "bank", Tool: "charge"}
			var runs atomic.Int32
			_, _, err := j.Do(ctx, c, func(context.Context, string) (*mcp.CallToolResult, error) {
				runs.Add(1)
				return nil, cause
			})
			e := wantCode(t, err, refusal.InDoubt)
			if e.Retryable || !errors.Is(err, cause) {
				t.Fatalf("%s: %v (retryable %v)", name, err, e.Retryable)
			}
			if r := getRecord(t, s, j, c); r.State != store.StateInDoubt {
				t.Fatalf("%s: state %s", name, r.State)
			}
			// Every later call: in doubt again, never sent.
			for range 2 {
				_, _, err := j.Do(ctx, c, nil2(t))
				wantCode(t, err, refusal.InDoubt)
			}
			if runs.Load() != 1 {
				t.Fatalf("%s: ran %d times", name, runs.Load())
			}
		}
		// The caller's context ended while the effect ran: in doubt, and
		// the in_doubt marking is written although ctx is done.
		cctx, cancel := context.WithCancel(ctx)
		c := Call{RunID: "r", ToolCallID: "ctx", Server: "bank", Tool: "charge"}
		_, _, err := j.Do(cctx, c, func(ctx context.Context, _ string) (*mcp.CallToolResult, error) {
			cancel()
			<-ctx.Done()
			return nil, ctx.Err()
		})
		wantCode(t, err, refusal.InDoubt)
		if r := getRecord(t, s, j, c); r.State != store.StateInDoubt {
			t.Fatalf("cancelled: state %s", r.State)
		}
	})
}

// TestExpiredLease: a started record left by a crashed executor.
func TestExpiredLease(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		ctx := ctxT(t)
		file := filepath.Join(t.TempDir(), "effects")
		cs := inMemServer(t, file)
		now := time.Now()
		args := json.RawMessage(`{"amount":5}`)
		crashed := func(id, tool string) Call {
			c := Call{RunID: "r", ToolCallID: id, Server: "bank", Tool: tool, Args: args}
			fp, _ := fingerprint(c)
			if ok, _, err := s.Claim(ctx, store.Record{RecordKey: store.RecordKey{RunID: "r", ToolCallID: id}, Fingerprint: fp,
				State: store.StateStarted, Executor: "dead", LeaseUntil: now.Add(-time.Second), ExpiresAt: now.Add(time.Hour)}); !ok || err != nil {
				t.Fatal(ok, err)
			}
			return c
		}
		j := newJournal(t, s, &JournalOptions{Repeatable: func(server, tool string) bool { return tool == "charge_once" }})

		c := crashed("plain", "charge")
		_, _, err := j.Do(ctx, c, nil2(t))
		wantCode(t, err, refusal.InDoubt)
		if r := getRecord(t, s, j, c); r.State != store.StateInDoubt {
			t.Fatalf("state %s", r.State)
		}
		_, _, err = j.Do(ctx, c, nil2(t))
		wantCode(t, err, refusal.InDoubt)

		// A repeatable tool is taken over and re-sent with the same key.
		c = crashed("rep", "charge_once")
		var keys []string
		res, replayed, err := j.Do(ctx, c, func(ctx context.Context, key string) (*mcp.CallToolResult, error) {
			keys = append(keys, key)
			return effectOf(cs, "charge_once", args)(ctx, key)
		})
		if err != nil || replayed || res.IsError || len(keys) != 1 || keys[0] != "r:rep" {
			t.Fatalf("take over: %v %v %v keys=%v", res, replayed, err, keys)
		}
		r := getRecord(t, s, j, c)
		if r.State != store.StateSucceeded || r.Executor != j.Executor() {
			t.Fatalf("record %+v", r)
		}

		// A live lease held by another executor: run_busy, retryable.
		live := Call{RunID: "r", ToolCallID: "live", Server: "bank", Tool: "charge_once", Args: args}
		fp, _ := fingerprint(live)
		if _, _, err := s.Claim(ctx, store.Record{RecordKey: store.RecordKey{RunID: "r", ToolCallID: "live"}, Fingerprint: fp,
			State: store.StateStarted, Executor: "other", LeaseUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		_, _, err = j.Do(ctx, live, nil2(t))
		e := wantCode(t, err, refusal.RunBusy)
		if !e.Retryable || e.Message != msgRunBusy || e.RetryAfter <= 0 {
			t.Fatalf("run_busy: %+v", e)
		}
	})
}

// TestRepeatableUnknownOutcome: a repeatable tool whose outcome is unknown
// releases its claim, so the retry re-sends it at once with the same key.
func TestRepeatableUnknownOutcome(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		ctx := ctxT(t)
		j, cs, file := effectJournal(t, s, &JournalOptions{Repeatable: func(server, tool string) bool { return server == "bank" && tool == "charge_once" }})
		args := json.RawMessage(`{"amount":9}`)
		c := Call{RunID: "r", ToolCallID: "x", Server: "bank", Tool: "charge_once", Args: args}
		// The call reaches the server, and the answer is lost.
		_, _, err := j.Do(ctx, c, func(ctx context.Context, key string) (*mcp.CallToolResult, error) {
			if _, err := effectOf(cs, "charge_once", args)(ctx, key); err != nil {
				return nil, err
			}
			return nil, io.ErrUnexpectedEOF
		})
		e := wantCode(t, err, refusal.InDoubt)
		if !e.Retryable {
			t.Fatalf("repeatable in doubt should be retryable: %+v", e)
		}
		res, replayed, err := j.Do(ctx, c, effectOf(cs, "charge_once", args))
		if err != nil || replayed {
			t.Fatal(replayed, err)
		}
		eff, sends := effectsIn(t, file)
		if len(eff["r:x"]) != 1 || sends["r:x"] != 2 {
			t.Fatalf("effects %v sends %v: want one effect, two sends", eff, sends)
		}
		if !strings.Contains(res.Content[0].(*mcp.TextContent).Text, eff["r:x"][0]) {
			t.Fatalf("result %v does not carry the first receipt %v", res.Content, eff)
		}
	})
}

// TestLeaseRenewal: a call that lasts several leases stays busy for
// others (never in doubt) and then replays.
func TestLeaseRenewal(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		ctx := ctxT(t)
		file := filepath.Join(t.TempDir(), "effects")
		cs := inMemServer(t, file)
		lease := 300 * time.Millisecond
		a := newJournal(t, s, &JournalOptions{Lease: lease})
		b := newJournal(t, s, &JournalOptions{Lease: lease})
		args := json.RawMessage(`{"amount":3,"sleepMs":1200}`)
		c := Call{RunID: "r", ToolCallID: "long", Server: "bank", Tool: "charge", Args: args}
		done := make(chan error, 1)
		var first *mcp.CallToolResult
		go func() {
			var err error
			first, _, err = a.Do(ctx, c, effectOf(cs, "charge", args))
			done <- err
		}()
		busy := 0
	loop:
		for {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				break loop
			case <-time.After(lease / 2):
			}
			_, _, err := b.Do(ctx, c, nil2(t))
			if err == nil {
				continue // a already finished
			}
			wantCode(t, err, refusal.RunBusy)
			busy++
		}
		if busy < 3 {
			t.Fatalf("only %d run_busy answers during a call of 4 leases", busy)
		}
		res, replayed, err := b.Do(ctx, c, nil2(t))
		if err != nil || !replayed || !bytes.Equal(mustJSONT(t, res), mustJSONT(t, first)) {
			t.Fatalf("after: %v %v", replayed, err)
		}
	})
}

func TestSweep(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		ctx := ctxT(t)
		var mu sync.Mutex
		now := time.Now().Truncate(time.Millisecond)
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
		j := newJournal(t, s, &JournalOptions{Lease: time.Minute, TTL: time.Hour, Clock: clock})
		ok := func(context.Context, string) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		}
		for _, id := range []string{"a", "b"} {
			if _, _, err := j.Do(ctx, Call{RunID: "r", ToolCallID: id}, ok); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := j.Sweep(ctx); err != nil || n != 0 {
			t.Fatalf("early sweep: %d %v", n, err)
		}
		advance(time.Hour)
		if n, err := j.Sweep(ctx); err != nil || n != 2 {
			t.Fatalf("sweep: %d %v", n, err)
		}
		if _, err := s.GetRecord(ctx, store.RecordKey{RunID: "r", ToolCallID: "a"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("after sweep: %v", err)
		}
		// The background sweeper.
		if _, _, err := j.Do(ctx, Call{RunID: "r", ToolCallID: "c"}, ok); err != nil {
			t.Fatal(err)
		}
		advance(2 * time.Hour)
		stop := j.StartSweeper(ctx, 10*time.Millisecond)
		defer stop()
		deadline := time.Now().Add(20 * time.Second)
		for {
			if _, err := s.GetRecord(ctx, store.RecordKey{RunID: "r", ToolCallID: "c"}); errors.Is(err, store.ErrNotFound) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the sweeper never swept")
			}
			time.Sleep(10 * time.Millisecond)
		}
		stop()
		stop2 := j.StartSweeper(ctx, time.Hour) // ends with its context too
		sctx, cancel := context.WithCancel(ctx)
		stop3 := j.StartSweeper(sctx, time.Hour)
		cancel()
		stop3()
		stop2()

		if _, err := NewJournal(s, &JournalOptions{Lease: time.Hour, TTL: time.Minute}); err == nil {
			t.Fatal("TTL shorter than the lease was accepted")
		}
	})
}

// TestConcurrentGoroutines: ten goroutines race one key.
func TestConcurrentGoroutines(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		ctx := ctxT(t)
		file := filepath.Join(t.TempDir(), "effects")
		cs := inMemServer(t, file)
		args := json.RawMessage(`{"amount":10,"sleepMs":300}`)
		c := Call{RunID: "r", ToolCallID: "race", Server: "bank", Tool: "charge", Args: args}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var results []*mcp.CallToolResult
		busy := 0
		start := make(chan struct{})
		for i := range 10 {
			j := newJournal(t, s, nil)
			if i%2 == 0 {
				j = newJournal(t, s, &JournalOptions{Executor: "shared"}) // same executor name: still busy
			}
			wg.Go(func() {
				<-start
				res, _, err := j.Do(ctx, c, effectOf(cs, "charge", args))
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					e, ok := refusal.As(err)
					if !ok || e.Code != refusal.RunBusy || !e.Retryable || e.Message != msgRunBusy {
						t.Errorf("err %v", err)
					}
					busy++
					return
				}
				results = append(results, res)
			})
		}
		close(start)
		wg.Wait()
		if len(results) != 1 || busy != 9 {
			t.Fatalf("%d results, %d run_busy; want 1 and 9", len(results), busy)
		}
		eff, _ := effectsIn(t, file)
		if len(eff["r:race"]) != 1 {
			t.Fatalf("effects %v", eff)
		}
		res, replayed, err := newJournal(t, s, nil).Do(ctx, c, nil2(t))
		if err != nil || !replayed || !bytes.Equal(mustJSONT(t, res), mustJSONT(t, results[0])) {
			t.Fatalf("retry after completion: %v %v", replayed, err)
		}
	})
}
