package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// backend opens real stores of one kind on one database (a SQLite file or
// a PostgreSQL schema), so a test can reopen what another store wrote.
type backend struct {
	name string
	// where returns a fresh database for the test: a path or a DSN.
	where func(t *testing.T) string
	// open opens a store on it.
	open func(t *testing.T, where string, o *store.Options) *sqlstore.Store
	// lockJournal, run in the blocker's transaction, makes every write to
	// the journal wait (SQLite: BEGIN IMMEDIATE already does).
	lockJournal string
	// badStatement makes an INSERT of a tool call ID starting with "bad"
	// fail at once; badCommit makes one starting with "poison" fail at
	// COMMIT (a deferred constraint).
	badStatement, badCommit []string
}

func backends() []backend {
	openSQLite := func(t *testing.T, path string, o *store.Options) *sqlstore.Store {
		t.Helper()
		st, err := sqlite.Open(t.Context(), path, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st.Store
	}
	sqliteWhere := func(t *testing.T) string { return filepath.Join(t.TempDir(), "gatehouse.db") }
	sqliteBad := []string{`CREATE TRIGGER gc_bad BEFORE INSERT ON journal WHEN NEW.tool_call_id LIKE 'bad%'
BEGIN SELECT RAISE(ABORT, 'refused by the test trigger gc_bad'); END`}
	sqliteCommit := []string{
		`CREATE TABLE gc_parent (id TEXT PRIMARY KEY)`,
		`CREATE TABLE gc_child (p TEXT REFERENCES gc_parent(id) DEFERRABLE INITIALLY DEFERRED)`,
		`CREATE TRIGGER gc_poison AFTER INSERT ON journal WHEN NEW.tool_call_id LIKE 'poison%'
BEGIN INSERT INTO gc_child VALUES ('missing'); END`,
	}
	pgBad := []string{
		`CREATE FUNCTION gc_bad() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.tool_call_id LIKE 'bad%' THEN RAISE EXCEPTION 'refused by the test trigger gc_bad'; END IF; RETURN NEW; END $$`,
		`CREATE TRIGGER gc_bad BEFORE INSERT ON journal FOR EACH ROW EXECUTE FUNCTION gc_bad()`,
	}
	pgCommit := []string{
		`CREATE FUNCTION gc_poison() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.tool_call_id LIKE 'poison%' THEN RAISE EXCEPTION 'refused at commit by the test trigger gc_poison'; END IF; RETURN NULL; END $$`,
		`CREATE CONSTRAINT TRIGGER gc_poison AFTER INSERT ON journal DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION gc_poison()`,
	}
	pg := func(d store.Durability) backend {
		return backend{
			name: "postgres-" + string(d),
			where: func(t *testing.T) string {
				return pgtest.Schema(t, "gc_test", "group commit on PostgreSQL")
			},
			open: func(t *testing.T, dsn string, o *store.Options) *sqlstore.Store {
				t.Helper()
				oo := *o
				oo.Durability = d
				st, err := postgres.Open(t.Context(), dsn, &oo)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				return st.Store
			},
			lockJournal:  `LOCK TABLE journal IN EXCLUSIVE MODE`,
			badStatement: pgBad, badCommit: pgCommit,
		}
	}
	sq := func(d store.Durability) backend {
		return backend{
			name:  "sqlite-" + string(d),
			where: sqliteWhere,
			open: func(t *testing.T, path string, o *store.Options) *sqlstore.Store {
				oo := *o
				oo.Durability = d
				return openSQLite(t, path, &oo)
			},
			badStatement: sqliteBad, badCommit: sqliteCommit,
		}
	}
	return []backend{sq(store.DurabilityProcess), sq(store.DurabilityPower), pg(store.DurabilityProcess)}
}

func exec(t *testing.T, st *sqlstore.Store, stmts []string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := st.DB().Exec(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func key(id string) store.RecordKey {
	return store.RecordKey{Scope: "gc", RunID: "run", ToolCallID: id}
}

func rec(id, executor string) store.Record {
	return store.Record{RecordKey: key(id), Fingerprint: "fp-" + id, Owner: "owner", Executor: executor,
		LeaseUntil: time.Now().Add(time.Hour), ExpiresAt: time.Now().Add(2 * time.Hour)}
}

// waitFor polls cond until it holds (a liveness bound, not a timing
// assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// block holds the journal's write lock in a transaction of st until the
// returned release is called, and then makes a claim of id, which waits on
// the lock; with group commit on (grouped) it leads a batch of its own and
// ops made after block returns queue for the next batch. first receives
// that claim's error.
func block(t *testing.T, b backend, st *sqlstore.Store, id string, grouped bool) (release func(), first <-chan error) {
	t.Helper()
	locked, rel, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- st.DB().InTx(context.Background(), func(tx sqlstore.Querier) error {
			if b.lockJournal != "" {
				if _, err := tx.Exec(context.Background(), b.lockJournal); err != nil {
					close(locked)
					return err
				}
			}
			close(locked)
			<-rel
			return nil
		})
	}()
	<-locked
	firstErr := make(chan error, 1)
	go func() {
		_, _, err := st.Claim(context.Background(), rec(id, "first"))
		firstErr <- err
	}()
	if grouped {
		waitFor(t, "the first claim to lead a batch", func() bool { in, _ := st.GroupQueue(); return in == 1 })
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(rel)
			if err := <-done; err != nil {
				t.Errorf("blocker: %v", err)
			}
		})
	}
	t.Cleanup(release)
	return release, firstErr
}

type outcome struct {
	id      string
	claimed bool
	stored  store.Record
	err     error
}

// queue starts the claims of ids and the completions of completes (as
// executor "owner-of-"+id) behind a blocked batch and waits until all are
// queued (after already others); the results arrive on the returned
// channel once released.
func queue(t *testing.T, st *sqlstore.Store, already int, ids, completes []string) <-chan outcome {
	t.Helper()
	out := make(chan outcome, len(ids)+len(completes))
	for _, id := range ids {
		go func() {
			claimed, stored, err := st.Claim(context.Background(), rec(id, "owner-of-"+id))
			out <- outcome{id, claimed, stored, err}
		}()
	}
	for _, id := range completes {
		go func() {
			err := st.Complete(context.Background(), key(id), "owner-of-"+id, store.StateSucceeded, []byte("done "+id))
			out <- outcome{id: "complete " + id, err: err}
		}()
	}
	n := already + len(ids) + len(completes)
	waitFor(t, fmt.Sprintf("%d ops queued", n), func() bool { _, q := st.GroupQueue(); return q == n })
	return out
}

func collect(t *testing.T, ch <-chan outcome, n int) map[string]outcome {
	t.Helper()
	got := map[string]outcome{}
	for range n {
		o := <-ch
		got[o.id] = o
	}
	return got
}

// TestGroupCommitResults: 8 goroutines claim and complete concurrently,
// with group commit on and off; every op's result is what one transaction
// per op gives (one winner per key, the stored record for the others,
// ErrLeaseLost / ErrNotStarted / ErrNotFound per op), and the rows read
// back agree. With group commit on, transactions of several ops happened.
func TestGroupCommitResults(t *testing.T) {
	const workers, keys = 8, 30
	for _, b := range backends() {
		for _, mode := range []string{"single", "group"} {
			t.Run(b.name+"/"+mode, func(t *testing.T) {
				st := b.open(t, b.where(t), &store.Options{GroupCommit: map[string]store.GroupCommit{"single": store.GroupCommitOff, "group": store.GroupCommitOn}[mode]})
				ctx := t.Context()
				var mu sync.Mutex
				winners := map[string]string{} // race key -> executor
				errs := make(chan error, workers)
				var wg sync.WaitGroup
				for w := range workers {
					me := fmt.Sprintf("w%d", w)
					wg.Go(func() {
						fail := func(format string, args ...any) { errs <- fmt.Errorf(me+": "+format, args...) }
						for i := range keys {
							race := fmt.Sprintf("race-%02d", i)
							claimed, stored, err := st.Claim(ctx, rec(race, me))
							if err != nil {
								fail("claim %s: %v", race, err)
								return
							}
							if claimed {
								mu.Lock()
								if prev, dup := winners[race]; dup {
									mu.Unlock()
									fail("%s claimed by %s and %s", race, prev, me)
									return
								}
								winners[race] = me
								mu.Unlock()
								if stored.Executor != me || stored.State != store.StateStarted {
									fail("claimed %s but stored %+v", race, stored)
									return
								}
								if err := st.Complete(ctx, key(race), me, store.StateSucceeded, []byte("out "+race)); err != nil {
									fail("complete %s: %v", race, err)
									return
								}
							} else {
								if stored.Executor == me || stored.Fingerprint != "fp-"+race {
									fail("lost %s but the stored record is %+v", race, stored)
									return
								}
								err := st.Complete(ctx, key(race), me, store.StateSucceeded, []byte("intruder"))
								if !errors.Is(err, store.ErrLeaseLost) && !errors.Is(err, store.ErrNotStarted) {
									fail("a loser's complete of %s: %v, want lease lost or not started", race, err)
									return
								}
							}
							held := fmt.Sprintf("held-%s-%02d", me, i)
							if claimed, _, err := st.Claim(ctx, rec(held, me)); err != nil || !claimed {
								fail("claim %s: %v %v", held, claimed, err)
								return
							}
							if err := st.Complete(ctx, key(held), "intruder", store.StateFailed, nil); !errors.Is(err, store.ErrLeaseLost) {
								fail("complete %s by another executor: %v, want lease lost", held, err)
								return
							}
							ghost := fmt.Sprintf("ghost-%s-%02d", me, i)
							if err := st.Complete(ctx, key(ghost), me, store.StateSucceeded, nil); !errors.Is(err, store.ErrNotFound) {
								fail("complete %s (never claimed): %v, want not found", ghost, err)
								return
							}
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
				if t.Failed() {
					return
				}
				if len(winners) != keys {
					t.Fatalf("%d keys won, want %d", len(winners), keys)
				}
				// A duplicate after completion gets the stored record.
				for race, winner := range winners {
					claimed, stored, err := st.Claim(ctx, rec(race, "late"))
					if err != nil || claimed || stored.State != store.StateSucceeded || stored.Executor != winner || string(stored.Outcome) != "out "+race {
						t.Fatalf("late claim of %s: %v %+v %v", race, claimed, stored, err)
					}
				}
				recs, err := st.ListRecords(ctx, "gc", "run")
				if err != nil {
					t.Fatal(err)
				}
				if len(recs) != keys+workers*keys {
					t.Fatalf("%d records, want %d", len(recs), keys+workers*keys)
				}
				for _, r := range recs {
					switch {
					case strings.HasPrefix(r.ToolCallID, "race-"):
						if r.State != store.StateSucceeded || r.Executor != winners[r.ToolCallID] || string(r.Outcome) != "out "+r.ToolCallID {
							t.Fatalf("read back %+v, won by %s", r, winners[r.ToolCallID])
						}
					case strings.HasPrefix(r.ToolCallID, "held-"):
						if r.State != store.StateStarted || !strings.HasPrefix(r.ToolCallID, "held-"+r.Executor+"-") {
							t.Fatalf("read back %+v", r)
						}
					default:
						t.Fatalf("unexpected record %+v", r)
					}
				}
				batches, ops := st.GroupStats()
				t.Logf("%d transactions of several ops, %d ops in them", batches, ops)
				if mode == "group" && batches == 0 {
					t.Fatal("group commit on, but no transaction held more than one op")
				}
				if mode == "single" && batches != 0 {
					t.Fatalf("group commit off, but %d batches", batches)
				}
			})
		}
	}
}

// TestGroupCommitBadStatement: one op of a batch fails in its statement (a
// trigger refuses its key); the batch is rolled back and every op runs
// again alone: the bad one fails, its neighbours succeed.
func TestGroupCommitBadStatement(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t, b.where(t), &store.Options{GroupCommit: store.GroupCommitOn})
			exec(t, st, b.badStatement)
			ctx := t.Context()
			if claimed, _, err := st.Claim(ctx, rec("pre", "owner-of-pre")); err != nil || !claimed {
				t.Fatalf("claim pre: %v %v", claimed, err)
			}
			release, first := block(t, b, st, "first", true)
			ch := queue(t, st, 0, []string{"good-1", "bad-1", "good-2", "good-3"}, []string{"pre"})
			release()
			if err := <-first; err != nil {
				t.Fatal(err)
			}
			got := collect(t, ch, 5)
			for _, id := range []string{"good-1", "good-2", "good-3"} {
				if o := got[id]; o.err != nil || !o.claimed {
					t.Errorf("%s: claimed %v, %v; a neighbour's bad statement must not fail it", id, o.claimed, o.err)
				}
			}
			if o := got["complete pre"]; o.err != nil {
				t.Errorf("complete pre: %v", o.err)
			}
			if o := got["bad-1"]; o.err == nil || !strings.Contains(o.err.Error(), "gc_bad") {
				t.Errorf("bad-1: claimed %v, %v; want the trigger's refusal", o.claimed, o.err)
			}
			for _, id := range []string{"first", "good-1", "good-2", "good-3"} {
				if r, err := st.GetRecord(ctx, key(id)); err != nil || r.State != store.StateStarted {
					t.Errorf("read back %s: %+v %v", id, r, err)
				}
			}
			if r, err := st.GetRecord(ctx, key("pre")); err != nil || r.State != store.StateSucceeded || string(r.Outcome) != "done pre" {
				t.Errorf("read back pre: %+v %v", r, err)
			}
			if _, err := st.GetRecord(ctx, key("bad-1")); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("read back bad-1: %v, want not found", err)
			}
		})
	}
}

// TestGroupCommitCommitFails: a batch whose COMMIT fails (a deferred
// constraint refuses one of its rows) reports the error to every op in it,
// none is reported done, and nothing of it is in the store; the store
// works on afterwards.
func TestGroupCommitCommitFails(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			where := b.where(t)
			st := b.open(t, where, &store.Options{GroupCommit: store.GroupCommitOn})
			exec(t, st, b.badCommit)
			ctx := t.Context()
			if claimed, _, err := st.Claim(ctx, rec("pre", "owner-of-pre")); err != nil || !claimed {
				t.Fatalf("claim pre: %v %v", claimed, err)
			}
			release, first := block(t, b, st, "first", true)
			ch := queue(t, st, 0, []string{"good-1", "poison-1", "good-2"}, []string{"pre"})
			release()
			if err := <-first; err != nil {
				t.Fatal(err)
			}
			got := collect(t, ch, 4)
			for id, o := range got {
				if o.err == nil || o.claimed || !strings.Contains(o.err.Error(), "group commit of 4 calls failed") {
					t.Errorf("%s: claimed %v, err %v; want the failed commit's error", id, o.claimed, o.err)
				}
			}
			// Read back through another store on the same database.
			other := b.open(t, where, &store.Options{GroupCommit: store.GroupCommitOff})
			for _, id := range []string{"good-1", "poison-1", "good-2"} {
				if r, err := other.GetRecord(ctx, key(id)); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("%s is in the store after its batch failed to commit: %+v %v", id, r, err)
				}
			}
			if r, err := other.GetRecord(ctx, key("pre")); err != nil || r.State != store.StateStarted {
				t.Errorf("pre: %+v %v; its completion was not committed", r, err)
			}
			// Every connection of the pool is usable afterwards.
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					id := fmt.Sprintf("after-%d", i)
					if claimed, _, err := st.Claim(ctx, rec(id, "x")); err != nil || !claimed {
						t.Errorf("claim %s after the failed batch: %v %v", id, claimed, err)
					}
				})
			}
			wg.Wait()
			if claimed, _, err := st.Claim(ctx, rec("good-1", "x")); err != nil || !claimed {
				t.Errorf("claim good-1 again: %v %v", claimed, err)
			}
		})
	}
}

// TestGroupCommitCancelAndClose: a caller that gives up while its op is
// queued gets its context's error and its op is never written; Close
// waits for the queued ops, which commit, and then refuses new ones.
func TestGroupCommitCancelAndClose(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			where := b.where(t)
			st := b.open(t, where, &store.Options{GroupCommit: store.GroupCommitOn})
			release, first := block(t, b, st, "first", true)
			cctx, cancel := context.WithCancel(context.Background())
			gone := make(chan error, 1)
			go func() {
				_, _, err := st.Claim(cctx, rec("gone", "x"))
				gone <- err
			}()
			waitFor(t, "the cancelled claim to queue", func() bool { _, q := st.GroupQueue(); return q == 1 })
			ch := queue(t, st, 1, []string{"stay-1", "stay-2"}, nil)
			cancel()
			if err := <-gone; !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled claim: %v, want context.Canceled", err)
			}
			waitFor(t, "the cancelled claim to leave the queue", func() bool { _, q := st.GroupQueue(); return q == 2 })
			closed := make(chan error, 1)
			go func() { closed <- st.Close() }()
			waitFor(t, "Close to begin", st.GroupClosing)
			if _, _, err := st.Claim(t.Context(), rec("late", "x")); !errors.Is(err, store.ErrClosed) {
				t.Fatalf("claim while closing: %v, want ErrClosed", err)
			}
			release()
			if err := <-first; err != nil {
				t.Fatal(err)
			}
			got := collect(t, ch, 2)
			for id, o := range got {
				if o.err != nil || !o.claimed {
					t.Errorf("%s, queued before Close: %v %v", id, o.claimed, o.err)
				}
			}
			if err := <-closed; err != nil {
				t.Fatal(err)
			}
			other := b.open(t, where, &store.Options{GroupCommit: store.GroupCommitOn})
			for _, id := range []string{"first", "stay-1", "stay-2"} {
				if _, err := other.GetRecord(t.Context(), key(id)); err != nil {
					t.Errorf("%s: %v", id, err)
				}
			}
			for _, id := range []string{"gone", "late"} {
				if _, err := other.GetRecord(t.Context(), key(id)); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("%s is in the store: %v", id, err)
				}
			}
		})
	}
}

// TestGroupCommitDefaults: on for SQLite and PostgreSQL unless set; a
// value other than on, off or empty is refused.
func TestGroupCommitDefaults(t *testing.T) {
	for _, b := range backends() {
		for _, c := range []struct {
			set  store.GroupCommit
			want bool
		}{{store.GroupCommitDefault, true}, {store.GroupCommitOn, true}, {store.GroupCommitOff, false}} {
			t.Run(fmt.Sprintf("%s/%q", b.name, c.set), func(t *testing.T) {
				st := b.open(t, b.where(t), &store.Options{GroupCommit: c.set})
				release, first := block(t, b, st, "first", c.want)
				if !c.want {
					// Without group commit nothing queues: the blocked
					// claim and this one both wait on the lock.
					second := make(chan error, 1)
					go func() { _, _, err := st.Claim(context.Background(), rec("second", "x")); second <- err }()
					release()
					if err := <-second; err != nil {
						t.Fatal(err)
					}
				} else {
					ch := queue(t, st, 0, []string{"second", "third"}, nil)
					release()
					collect(t, ch, 2)
				}
				if err := <-first; err != nil {
					t.Fatal(err)
				}
				batches, ops := st.GroupStats()
				if got := batches > 0; got != c.want {
					t.Fatalf("%d batches (%d ops), want group commit %v", batches, ops, c.want)
				}
			})
		}
	}
	_, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "x.db"), &store.Options{GroupCommit: "yes"})
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), `group commit "yes"`) {
		t.Fatalf("GroupCommit yes: %v", err)
	}
}
