package durable

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/memory"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// TestOwnExecutor: a journal with default options on a SQLite store has
// an executor of its own (a journal slot of that store), registered at its
// first call; a second journal on the store takes another slot. While the
// first lives, the second answers its started call run_busy; once it is
// closed (stopped in the store), in_doubt at once, although the lease
// (10 min) is live, and the closed journal's late completion is refused.
// A closed journal takes no call. Sweep deletes executors stopped for
// longer than the TTL. An explicit Executor, or a memory store, keeps a
// name that nothing registers.
func TestOwnExecutor(t *testing.T) {
	ctx := ctxT(t)
	path := filepath.Join(t.TempDir(), "own.db")
	s, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	file := filepath.Join(t.TempDir(), "effects")
	cs := inMemServer(t, file)
	const lease = 10 * time.Minute
	args := json.RawMessage(`{"amount":4}`)
	c := Call{RunID: "r", ToolCallID: "own", Server: "bank", Tool: "charge", Args: args}

	first := newJournal(t, s, &JournalOptions{Lease: lease})
	if !strings.Contains(first.Executor(), "/journal-0#") {
		t.Fatalf("first journal's executor %q: want a journal slot of the store", first.Executor())
	}
	if _, err := s.GetExecutor(ctx, first.Executor()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("registered before its first call: %v", err)
	}
	second := newJournal(t, s, &JournalOptions{Lease: lease})
	defer second.Close()
	if !strings.Contains(second.Executor(), "/journal-1#") {
		t.Fatalf("second journal's executor %q: want the next slot", second.Executor())
	}

	// The first journal's call reaches the server and hangs there.
	sent, hang, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		_, _, err := first.Do(ctx, c, func(ctx context.Context, key string) (*mcp.CallToolResult, error) {
			res, err := effectOf(cs, "charge", args)(ctx, key)
			close(sent)
			<-hang
			return res, err
		})
		done <- err
	}()
	<-sent
	if e, err := s.GetExecutor(ctx, first.Executor()); err != nil || e.Dead(time.Now()) {
		t.Fatalf("first journal's executor %+v, %v: want registered and alive", e, err)
	}
	_, _, err = second.Do(ctx, c, nil2(t))
	wantCode(t, err, refusal.RunBusy)

	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	start := time.Now()
	_, _, err = second.Do(ctx, c, nil2(t))
	wantCode(t, err, refusal.InDoubt)
	t.Logf("in doubt %v after the holder was stopped (lease %v)", time.Since(start), lease)
	close(hang)
	if err := <-done; !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("the closed journal's late completion: %v, want ErrNotRecorded", err)
	}
	if eff, _ := effectsIn(t, file); len(eff["r:own"]) != 1 {
		t.Fatalf("effects %v, want exactly 1", eff["r:own"])
	}
	other := Call{RunID: "r", ToolCallID: "after-close", Server: "bank", Tool: "charge", Args: args}
	if _, _, err := first.Do(ctx, other, nil2(t)); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Do after Close: %v, want store.ErrClosed", err)
	}
	if _, _, err := first.Guarded(ctx, other, policy.AllowAll(), nil2(t)); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Guarded after Close: %v, want store.ErrClosed", err)
	}

	// A third journal takes the closed one's slot; the sweep, a TTL later,
	// deletes the stopped executor and keeps the live ones.
	now := time.Now()
	third := newJournal(t, s, &JournalOptions{Lease: lease, Clock: func() time.Time { return now.Add(DefaultTTL + time.Hour) }})
	defer third.Close()
	if instanceOf(third.Executor()) != instanceOf(first.Executor()) {
		t.Fatalf("third journal %s: want the closed one's instance %s", third.Executor(), instanceOf(first.Executor()))
	}
	if _, err := third.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetExecutor(ctx, first.Executor()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a stopped executor survived the sweep: %v", err)
	}
	if _, err := s.GetExecutor(ctx, second.Executor()); err != nil {
		t.Fatalf("a live executor was swept: %v", err)
	}

	// No executor of its own: an explicit name, or a store no other
	// process shares (StoreDSN naming it, or not).
	explicit := newJournal(t, s, &JournalOptions{Executor: "mine"})
	if _, _, err := explicit.Do(ctx, Call{RunID: "r", ToolCallID: "explicit", Server: "bank", Tool: "charge", Args: args}, effectOf(cs, "charge", args)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetExecutor(ctx, "mine"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an explicit executor was registered: %v", err)
	}
	m, err := memory.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, dsn := range []string{"", "memory:"} {
		j := newJournal(t, m, &JournalOptions{StoreDSN: dsn})
		if !strings.HasPrefix(j.Executor(), "ex_") || j.own != nil {
			t.Fatalf("a memory store's journal (StoreDSN %q) has executor %q", dsn, j.Executor())
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path + "-instances"); err != nil {
		t.Fatalf("no instance slots next to the SQLite file: %v", err)
	}
}
