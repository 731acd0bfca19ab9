package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/commitdelay"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlbatch"
)

// Store implements store.Store over a DB.
type Store struct {
	db  DB
	now func() time.Time
	// gc is the commit queue: of Claims and Completes when batch is set
	// (Options.GroupCommit), and always of the linked audit appends and the
	// Completes that carry an entry (auditjournal.go), so that this
	// process never races itself for a chain's head.
	gc    *committer
	batch bool
	bt    sqlbatch.Batcher // db when it runs the queue's batches itself (PostgreSQL)
	audit auditLayout      // the trail's table: audit_log or audit_blocks (Options.AuditBlocks)
	sweep string           // Sweep's DELETE (Options.SweepQuery)
}

var _ store.Store = (*Store)(nil)

var _ store.AuditStore = (*Store)(nil)

// Options configure New.
type Options struct {
	// Now is the store's clock; nil means time.Now.
	Now func() time.Time
	// GroupCommit makes concurrent Claims and Completes share transactions
	// (see the package doc). Off, each is its own statement.
	GroupCommit bool
	// Delay is when a lone leader of the commit queue yields to the calls
	// in flight (zero: never).
	Delay commitdelay.Options
	// SweepQuery is the statement Sweep runs, $1 the time in unix
	// milliseconds; empty, sweepQuery (a range of the journal's index on
	// expires_at). SQLite's journal has no such index since migration 13.
	SweepQuery string
	// AuditBlocks keeps the audit trail in audit_blocks, a row a run of
	// entries (auditblocks.go; SQLite's schema since migration 14), not
	// in audit_log, a row an entry.
	AuditBlocks bool
}

// New returns a Store over db (already migrated).
func New(db DB, o Options) *Store {
	s := &Store{db: db, now: o.Now, sweep: o.SweepQuery, audit: auditRows{}}
	if o.AuditBlocks {
		s.audit = auditBlocks{}
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.sweep == "" {
		s.sweep = sweepQuery
	}
	s.gc, s.batch = newCommitter(s, o.Delay), o.GroupCommit
	s.bt, _ = db.(sqlbatch.Batcher)
	if p, ok := db.(Preparer); ok {
		// The commit queue's audit statements run only in transactions.
		ctx := context.Background()
		_, exec := db.(Inserter)
		switch {
		case o.AuditBlocks:
			p.Prepare(ctx, blocksInsert)
			p.Prepare(ctx, blocksLastQuery)
		default:
			for n := 1; n <= 64; n *= 2 { // every auditChunk size
				if exec {
					p.Prepare(ctx, auditInsertExec(n))
				} else {
					p.Prepare(ctx, auditInsert(n))
				}
			}
			p.Prepare(ctx, auditLastQuery)
		}
		p.Prepare(ctx, completeQuery)
	}
	return s
}

// DB returns the underlying adapter.
func (s *Store) DB() DB { return s.db }

// Close closes the pool. It first refuses new ops of the commit queue
// (Claims and Completes with group commit on, the linked audit appends and
// audited Completes always: store.ErrClosed) and waits until every one
// already queued has been committed and answered.
func (s *Store) Close() error {
	s.gc.close()
	return s.db.Close()
}

func (s *Store) nowMS() int64 { return norm.MS(s.now()) }

// ---- servers and baselines ----

const serverCols = `id, name, type, url, catalogue, updated_at, baseline_version`

func scanServer(r Row) (store.Server, error) {
	var sv store.Server
	var cat []byte
	var upd int64
	if err := r.Scan(&sv.ID, &sv.Name, &sv.Type, &sv.URL, &cat, &upd, &sv.BaselineVersion); err != nil {
		return store.Server{}, err
	}
	sv.Catalogue = norm.Bytes(cat)
	sv.UpdatedAt = norm.Time(upd)
	return sv, nil
}

// PutServer implements store.ServerStore.
func (s *Store) PutServer(ctx context.Context, sv store.Server) error {
	if err := norm.Server(sv); err != nil {
		return err
	}
	upd := norm.MS(sv.UpdatedAt)
	if upd == 0 {
		upd = s.nowMS()
	}
	_, err := s.db.Exec(ctx, `INSERT INTO servers (id, name, type, url, catalogue, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (id) DO UPDATE SET name = excluded.name, type = excluded.type, url = excluded.url, catalogue = excluded.catalogue, updated_at = excluded.updated_at`,
		sv.ID, sv.Name, sv.Type, sv.URL, norm.Bytes(sv.Catalogue), upd)
	if err != nil {
		return fmt.Errorf("store: put server %q: %w", sv.ID, err)
	}
	return nil
}

// GetServer implements store.ServerStore.
func (s *Store) GetServer(ctx context.Context, id string) (store.Server, error) {
	sv, err := scanServer(s.db.QueryRow(ctx, `SELECT `+serverCols+` FROM servers WHERE id = $1`, id))
	if errors.Is(err, ErrNoRows) {
		return store.Server{}, norm.NotFound("server %q", id)
	}
	if err != nil {
		return store.Server{}, fmt.Errorf("store: get server %q: %w", id, err)
	}
	return sv, nil
}

// ListServers implements store.ServerStore.
func (s *Store) ListServers(ctx context.Context) ([]store.Server, error) {
	out, err := collect(ctx, s.db, scanServer, `SELECT `+serverCols+` FROM servers ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("store: list servers: %w", err)
	}
	return out, nil
}

// DeleteServer implements store.ServerStore. Its baseline and
// observations go with it (ON DELETE CASCADE).
func (s *Store) DeleteServer(ctx context.Context, id string) error {
	n, err := s.db.Exec(ctx, `DELETE FROM servers WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("store: delete server %q: %w", id, err)
	}
	if n == 0 {
		return norm.NotFound("server %q", id)
	}
	return nil
}

// BaselineVersion implements store.ServerStore.
func (s *Store) BaselineVersion(ctx context.Context, serverID string) (int64, error) {
	var v int64
	err := s.db.QueryRow(ctx, `SELECT baseline_version FROM servers WHERE id = $1`, serverID).Scan(&v)
	if errors.Is(err, ErrNoRows) {
		return 0, norm.NotFound("server %q", serverID)
	}
	if err != nil {
		return 0, fmt.Errorf("store: baseline version of %q: %w", serverID, err)
	}
	return v, nil
}

// ---- journal ----

const recordCols = `scope, run_id, tool_call_id, fingerprint, state, outcome, owner, executor, lease_until, created_at, updated_at, expires_at`

func scanRecord(r Row) (store.Record, error) {
	var rec store.Record
	var st string
	var out []byte
	var lease, created, updated, expires int64
	if err := r.Scan(&rec.Scope, &rec.RunID, &rec.ToolCallID, &rec.Fingerprint, &st, &out, &rec.Owner, &rec.Executor,
		&lease, &created, &updated, &expires); err != nil {
		return store.Record{}, err
	}
	rec.State = store.State(st)
	rec.Outcome = norm.Bytes(out)
	rec.LeaseUntil = norm.Time(lease)
	rec.CreatedAt = norm.Time(created)
	rec.UpdatedAt = norm.Time(updated)
	rec.ExpiresAt = norm.Time(expires)
	return rec, nil
}

func keyString(k store.RecordKey) string { return k.Scope + "/" + k.RunID + "/" + k.ToolCallID }

// Claim implements store.JournalStore: INSERT ... ON CONFLICT DO NOTHING,
// then a read of the existing row when nothing was inserted. With group
// commit on, concurrent Claims and Completes share one transaction (see
// committer); Claim returns only once that transaction has committed.
func (s *Store) Claim(ctx context.Context, rec store.Record) (bool, store.Record, error) {
	rec, err := norm.Claim(rec, s.now())
	if err != nil {
		return false, store.Record{}, err
	}
	if s.batch {
		o := &op{ctx: ctx, kind: opClaim, rec: rec}
		return s.gc.do(o)
	}
	claimed, stored, err := s.claimOn(ctx, s.db, rec)
	return claimed, stored, unwrapStmt(err)
}

// claimOn runs a normalised Claim on q (the pool, or a batch's
// transaction).
func (s *Store) claimOn(ctx context.Context, q Querier, rec store.Record) (bool, store.Record, error) {
	for range 3 {
		n, err := q.Exec(ctx, `INSERT INTO journal (`+recordCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (scope, run_id, tool_call_id) DO NOTHING`,
			rec.Scope, rec.RunID, rec.ToolCallID, rec.Fingerprint, string(rec.State), rec.Outcome, rec.Owner, rec.Executor,
			norm.MS(rec.LeaseUntil), norm.MS(rec.CreatedAt), norm.MS(rec.UpdatedAt), norm.MS(rec.ExpiresAt))
		if err != nil {
			return false, store.Record{}, &stmtError{fmt.Errorf("store: claim %s: %w", keyString(rec.RecordKey), err)}
		}
		if n == 1 {
			return true, rec, nil
		}
		existing, err := getRecord(ctx, q, rec.RecordKey)
		if errors.Is(err, store.ErrNotFound) {
			continue // purged or swept between the two statements: try again
		}
		if err != nil {
			return false, store.Record{}, err
		}
		return false, existing, nil
	}
	return false, store.Record{}, fmt.Errorf("store: claim %s: the record keeps disappearing", keyString(rec.RecordKey))
}

// GetRecord implements store.JournalStore.
func (s *Store) GetRecord(ctx context.Context, key store.RecordKey) (store.Record, error) {
	rec, err := getRecord(ctx, s.db, key)
	return rec, unwrapStmt(err)
}

// getRecord reads one record on q. A failed statement is a *stmtError.
func getRecord(ctx context.Context, q Querier, key store.RecordKey) (store.Record, error) {
	rec, err := scanRecord(q.QueryRow(ctx, `SELECT `+recordCols+` FROM journal WHERE scope = $1 AND run_id = $2 AND tool_call_id = $3`,
		key.Scope, key.RunID, key.ToolCallID))
	if errors.Is(err, ErrNoRows) {
		return store.Record{}, norm.NotFound("record %s", keyString(key))
	}
	if err != nil {
		return store.Record{}, &stmtError{fmt.Errorf("store: get record %s: %w", keyString(key), err)}
	}
	return rec, nil
}

// whyNotHeld explains why a conditional update on a started record held by
// executor touched no row, reading the record on q.
func whyNotHeld(ctx context.Context, q Querier, key store.RecordKey, executor string) error {
	rec, err := getRecord(ctx, q, key)
	if err != nil {
		return err
	}
	if rec.State != store.StateStarted {
		return norm.NotStarted(key, rec.State)
	}
	if rec.Executor != executor {
		return norm.LeaseLost(key, rec.Executor)
	}
	// The record changed between the update and the read; report the
	// lease as lost, the conservative answer.
	return norm.LeaseLost(key, rec.Executor)
}

// Complete implements store.JournalStore: one conditional UPDATE. With
// group commit on it shares a transaction with concurrent Claims and
// Completes and returns once that transaction has committed.
func (s *Store) Complete(ctx context.Context, key store.RecordKey, executor string, state store.State, outcome []byte) error {
	if err := norm.Completion(state); err != nil {
		return err
	}
	if s.batch {
		o := &op{ctx: ctx, kind: opComplete, rec: store.Record{RecordKey: key, Executor: executor, State: state, Outcome: outcome}}
		_, _, err := s.gc.do(o)
		return err
	}
	return unwrapStmt(s.completeOn(ctx, s.db, key, executor, state, outcome))
}

// completeOn runs a Complete on q (the pool, or a batch's transaction).
func (s *Store) completeOn(ctx context.Context, q Querier, key store.RecordKey, executor string, state store.State, outcome []byte) error {
	n, err := q.Exec(ctx, completeQuery,
		key.Scope, key.RunID, key.ToolCallID, string(state), norm.Bytes(outcome), s.nowMS(), executor)
	if err != nil {
		return &stmtError{fmt.Errorf("store: complete %s: %w", keyString(key), err)}
	}
	if n == 0 {
		return whyNotHeld(ctx, q, key, executor)
	}
	return nil
}

// completeQuery is Complete's UPDATE.
const completeQuery = `UPDATE journal SET state = $4, outcome = $5, updated_at = $6
WHERE scope = $1 AND run_id = $2 AND tool_call_id = $3 AND state = 'started' AND executor = $7`

// extendExpiry keeps a non-zero expires_at at or after the new lease ($5).
const extendExpiry = `expires_at = CASE WHEN expires_at <> 0 AND expires_at < $5 THEN $5 ELSE expires_at END`

// TakeOver implements store.JournalStore: one compare-and-swap UPDATE.
func (s *Store) TakeOver(ctx context.Context, key store.RecordKey, newExecutor string, leaseUntil, now time.Time) (bool, error) {
	if newExecutor == "" {
		return false, fmt.Errorf("%w: TakeOver needs an executor", store.ErrInvalid)
	}
	n, err := s.db.Exec(ctx, `UPDATE journal SET executor = $4, lease_until = $5, updated_at = $6, `+extendExpiry+`
WHERE scope = $1 AND run_id = $2 AND tool_call_id = $3 AND state = 'started' AND lease_until <= $6`,
		key.Scope, key.RunID, key.ToolCallID, newExecutor, norm.MS(leaseUntil), norm.MS(now))
	if err != nil {
		return false, fmt.Errorf("store: take over %s: %w", keyString(key), err)
	}
	if n == 0 {
		if _, err := s.GetRecord(ctx, key); err != nil {
			return false, err
		}
		return false, nil
	}
	return true, nil
}

// MarkInDoubt implements store.JournalStore: one compare-and-swap UPDATE.
func (s *Store) MarkInDoubt(ctx context.Context, key store.RecordKey, now time.Time) (bool, error) {
	n, err := s.db.Exec(ctx, `UPDATE journal SET state = 'in_doubt', updated_at = $4
WHERE scope = $1 AND run_id = $2 AND tool_call_id = $3 AND state = 'started' AND lease_until <= $4`,
		key.Scope, key.RunID, key.ToolCallID, norm.MS(now))
	if err != nil {
		return false, fmt.Errorf("store: mark in doubt %s: %w", keyString(key), err)
	}
	if n == 0 {
		if _, err := s.GetRecord(ctx, key); err != nil {
			return false, err
		}
		return false, nil
	}
	return true, nil
}

// RenewLease implements store.JournalStore: one conditional UPDATE.
func (s *Store) RenewLease(ctx context.Context, key store.RecordKey, executor string, until time.Time) error {
	n, err := s.db.Exec(ctx, `UPDATE journal SET executor = $4, lease_until = $5, updated_at = $6, `+extendExpiry+`
WHERE scope = $1 AND run_id = $2 AND tool_call_id = $3 AND state = 'started' AND executor = $4`,
		key.Scope, key.RunID, key.ToolCallID, executor, norm.MS(until), s.nowMS())
	if err != nil {
		return fmt.Errorf("store: renew lease %s: %w", keyString(key), err)
	}
	if n == 0 {
		return unwrapStmt(whyNotHeld(ctx, s.db, key, executor))
	}
	return nil
}

// ListRuns implements store.JournalStore.
func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, error) {
	q := `SELECT scope, run_id, owner, COUNT(*),
 SUM(CASE WHEN state = 'started' THEN 1 ELSE 0 END),
 SUM(CASE WHEN state = 'succeeded' THEN 1 ELSE 0 END),
 SUM(CASE WHEN state = 'failed' THEN 1 ELSE 0 END),
 SUM(CASE WHEN state = 'in_doubt' THEN 1 ELSE 0 END),
 MIN(created_at), MAX(updated_at)
FROM journal`
	var args []any
	if !f.AnyOwner {
		q += ` WHERE owner = $1`
		args = append(args, f.Owner)
	}
	q += ` GROUP BY scope, run_id, owner ORDER BY MAX(updated_at) DESC, scope, run_id, owner`
	if f.Limit > 0 {
		q += ` LIMIT ` + strconv.Itoa(f.Limit)
	}
	out, err := collect(ctx, s.db, func(row Row) (store.Run, error) {
		var r store.Run
		var first, last int64
		if err := row.Scan(&r.Scope, &r.RunID, &r.Owner, &r.Calls, &r.Started, &r.Succeeded, &r.Failed, &r.InDoubt, &first, &last); err != nil {
			return store.Run{}, err
		}
		r.FirstAt, r.LastAt = norm.Time(first), norm.Time(last)
		return r, nil
	}, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list runs: %w", err)
	}
	return out, nil
}

// ListRecords implements store.JournalStore.
func (s *Store) ListRecords(ctx context.Context, scope, runID string) ([]store.Record, error) {
	out, err := collect(ctx, s.db, scanRecord, `SELECT `+recordCols+` FROM journal WHERE scope = $1 AND run_id = $2 ORDER BY created_at, tool_call_id`, scope, runID)
	if err != nil {
		return nil, fmt.Errorf("store: list records: %w", err)
	}
	if len(out) == 0 {
		return nil, nil // as before: no records is a nil slice
	}
	return out, nil
}

// Purge implements store.JournalStore.
func (s *Store) Purge(ctx context.Context, owner string) (int64, error) {
	var total int64
	err := s.db.InTx(ctx, func(tx Querier) error {
		n1, err := tx.Exec(ctx, `DELETE FROM journal WHERE owner = $1`, owner)
		if err != nil {
			return err
		}
		n2, err := tx.Exec(ctx, `DELETE FROM approvals WHERE owner = $1`, owner)
		if err != nil {
			return err
		}
		n3, err := purgeConnections(ctx, tx, owner)
		if err != nil {
			return err
		}
		total = n1 + n2 + n3
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: purge %q: %w", owner, err)
	}
	return total, nil
}

// sweepQuery deletes the journal's expired records.
const sweepQuery = `DELETE FROM journal WHERE expires_at <> 0 AND expires_at <= $1`

// Sweep implements store.JournalStore with Options.SweepQuery.
func (s *Store) Sweep(ctx context.Context, now time.Time) (int64, error) {
	n, err := s.db.Exec(ctx, s.sweep, norm.MS(now))
	if err != nil {
		return 0, fmt.Errorf("store: sweep journal: %w", err)
	}
	return n, nil
}

// OldestStarted implements store.JournalStore. There is no index on
// state: the query reads every journal row (bounded by Sweep's retention).
// Started records are few by design (calls in flight and their leases), so
// a partial index on (created_at) WHERE state = 'started' would be the
// migration to add if the journal ever grows large.
func (s *Store) OldestStarted(ctx context.Context) (time.Time, error) {
	var ms int64
	if err := s.db.QueryRow(ctx, `SELECT COALESCE(MIN(created_at), 0) FROM journal WHERE state = $1`,
		string(store.StateStarted)).Scan(&ms); err != nil {
		return time.Time{}, fmt.Errorf("store: oldest started record: %w", err)
	}
	return norm.Time(ms), nil
}

// ---- counters ----

// IncrBy implements store.CounterStore in one UPSERT ... RETURNING.
func (s *Store) IncrBy(ctx context.Context, key string, delta int64, expiresAt time.Time) (int64, error) {
	if key == "" {
		return 0, fmt.Errorf("%w: counter key is empty", store.ErrInvalid)
	}
	var v int64
	err := s.db.QueryRow(ctx, `INSERT INTO counters (name, value, expires_at) VALUES ($1, $2, $3)
ON CONFLICT (name) DO UPDATE SET
 value = CASE WHEN counters.expires_at <> 0 AND counters.expires_at <= $4 THEN excluded.value ELSE counters.value + excluded.value END,
 expires_at = CASE
   WHEN counters.expires_at <> 0 AND counters.expires_at <= $4 THEN excluded.expires_at
   WHEN counters.expires_at = 0 OR excluded.expires_at = 0 THEN 0
   WHEN excluded.expires_at > counters.expires_at THEN excluded.expires_at
   ELSE counters.expires_at END
RETURNING value`, key, delta, norm.MS(expiresAt), s.nowMS()).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("store: incr %q: %w", key, err)
	}
	return v, nil
}

// GetCounter implements store.CounterStore.
func (s *Store) GetCounter(ctx context.Context, key string, now time.Time) (int64, error) {
	var v, exp int64
	err := s.db.QueryRow(ctx, `SELECT value, expires_at FROM counters WHERE name = $1`, key).Scan(&v, &exp)
	if errors.Is(err, ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: get counter %q: %w", key, err)
	}
	if norm.Expired(exp, norm.MS(now)) {
		return 0, nil
	}
	return v, nil
}

// SweepCounters implements store.CounterStore.
func (s *Store) SweepCounters(ctx context.Context, now time.Time) (int64, error) {
	n, err := s.db.Exec(ctx, `DELETE FROM counters WHERE expires_at <> 0 AND expires_at <= $1`, norm.MS(now))
	if err != nil {
		return 0, fmt.Errorf("store: sweep counters: %w", err)
	}
	return n, nil
}
