package durable

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
)

// TestDeadExecutor: a record started by a journal whose executor is
// registered and then dies (its instance restarts, or its heartbeat
// lapses) is decided at once by a journal with JournalOptions.Executors,
// although its lease (10 min) is live: in doubt, or taken over once for a
// repeatable tool. A live or unknown holder still answers run_busy, and so
// does a journal without Executors. The first effect ran once and is never
// run again by a non-repeatable retry.
func TestDeadExecutor(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		ctx := ctxT(t)
		file := filepath.Join(t.TempDir(), "effects")
		cs := inMemServer(t, file)
		const lease = 10 * time.Minute
		register := func(id, instance string, alive time.Duration) {
			t.Helper()
			if err := s.RegisterExecutor(ctx, store.Executor{ID: id, Instance: instance, AliveUntil: time.Now().Add(alive)}); err != nil {
				t.Fatal(err)
			}
		}
		journal := func(executor string, reg store.ExecutorStore) *Journal {
			return newJournal(t, s, &JournalOptions{Executor: executor, Lease: lease, Executors: reg,
				Repeatable: func(_, tool string) bool { return tool == "charge_once" }})
		}
		args := json.RawMessage(`{"amount":3}`)

		// inFlight starts a call on j whose effect reaches the server and
		// then hangs until the returned release is called: what a process
		// killed mid-call leaves in the store.
		inFlight := func(j *Journal, id, tool string) (c Call, release func() error) {
			t.Helper()
			c = Call{RunID: "r", ToolCallID: id, Server: "bank", Tool: tool, Args: args}
			sent, hang := make(chan struct{}), make(chan struct{})
			done := make(chan error, 1)
			go func() {
				_, _, err := j.Do(ctx, c, func(ctx context.Context, key string) (*mcp.CallToolResult, error) {
					res, err := effectOf(cs, tool, args)(ctx, key)
					close(sent)
					<-hang
					return res, err
				})
				done <- err
			}()
			select {
			case <-sent:
			case err := <-done:
				t.Fatalf("in-flight call ended early: %v", err)
			}
			return c, func() error { close(hang); return <-done }
		}

		// The instance restarts: its new incarnation registers; the old
		// one's non-repeatable call is in doubt at once, never re-sent.
		register("gw#1", "gw", time.Hour)
		old := journal("gw#1", s)
		c, release := inFlight(old, "plain", "charge")
		register("gw#2", "gw", time.Hour)
		restarted := journal("gw#2", s)
		_, _, err := restarted.Do(ctx, c, nil2(t))
		wantCode(t, err, refusal.InDoubt)
		if r := getRecord(t, s, restarted, c); r.State != store.StateInDoubt || !r.LeaseUntil.After(time.Now()) {
			t.Fatalf("record %+v: want in doubt with its lease still live", r)
		}
		_, _, err = restarted.Do(ctx, c, nil2(t))
		wantCode(t, err, refusal.InDoubt)
		// The dead incarnation's late completion is refused: in doubt is final.
		if err := release(); !errors.Is(err, ErrNotRecorded) {
			t.Fatalf("the old executor's completion: %v, want ErrNotRecorded", err)
		}
		if eff, _ := effectsIn(t, file); len(eff["r:plain"]) != 1 {
			t.Fatalf("effects of r:plain %v, want exactly 1", eff["r:plain"])
		}

		// A repeatable tool: taken over once and re-sent with the same key.
		register("gw#3", "gw", time.Hour)
		old = journal("gw#3", s)
		c, release = inFlight(old, "rep", "charge_once")
		register("gw#4", "gw", time.Hour)
		restarted = journal("gw#4", s)
		res, replayed, err := restarted.Do(ctx, c, effectOf(cs, "charge_once", args))
		if err != nil || replayed || res.IsError {
			t.Fatalf("take over from a dead executor: %v %v %v", res, replayed, err)
		}
		if r := getRecord(t, s, restarted, c); r.State != store.StateSucceeded || r.Executor != "gw#4" {
			t.Fatalf("record %+v", r)
		}
		if err := release(); !errors.Is(err, ErrNotRecorded) {
			t.Fatalf("the old executor's completion: %v, want ErrNotRecorded", err)
		}
		if eff, sends := effectsIn(t, file); len(eff["r:rep"]) != 1 || sends["r:rep"] != 2 {
			t.Fatalf("r:rep effects %v sends %d: want sent twice, one effect (the server dedups)", eff["r:rep"], sends["r:rep"])
		}

		// A heartbeat that lapsed: dead too.
		register("lapsing#1", "lapsing", time.Hour)
		lapsing := journal("lapsing#1", s)
		c, release = inFlight(lapsing, "lapsed", "charge")
		if err := s.HeartbeatExecutor(ctx, "lapsing#1", time.Now().Add(-time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		_, _, err = journal("other#1", s).Do(ctx, c, nil2(t))
		wantCode(t, err, refusal.InDoubt)
		if err := release(); !errors.Is(err, ErrNotRecorded) {
			t.Fatalf("the lapsed executor's completion: %v, want ErrNotRecorded", err)
		}

		// A live holder (another instance), an unknown holder, and a journal
		// without Executors: run_busy, and the holder completes.
		register("live#1", "live", time.Hour)
		for _, tc := range []struct {
			name, holder string
			reg          store.ExecutorStore
		}{{"live holder", "live#1", s}, {"unknown holder", "agent-x", s}, {"no registry", "gw#4", nil}} {
			if tc.holder == "gw#4" {
				// gw#4 is alive and registered, but the asking journal has no
				// registry: gw#4 is restarted below so that only the option
				// could decide.
				register("gw#5", "gw", time.Hour)
			}
			holder := journal(tc.holder, s)
			c, release := inFlight(holder, "busy-"+tc.holder, "charge")
			_, _, err := journal("asker#1", tc.reg).Do(ctx, c, nil2(t))
			if e := wantCode(t, err, refusal.RunBusy); !e.Retryable {
				t.Fatalf("%s: %+v", tc.name, e)
			}
			if err := release(); err != nil {
				t.Fatalf("%s: the holder's completion: %v", tc.name, err)
			}
			if r := getRecord(t, s, holder, c); r.State != store.StateSucceeded {
				t.Fatalf("%s: record %+v", tc.name, r)
			}
		}
	})
}
