package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
)

// Pipelined batches (PostgreSQL).
//
// Over a DB that is a Pipeliner, a batch of the commit queue is still one
// transaction, but its statements are sent together instead of one round
// trip each: BEGIN, every op's statement in queue order, the INSERTs of
// the batch's audit entries and COMMIT go in one round trip (two when an
// audit chain's head is not known yet: it is read first, in the same
// transaction). Each op's statement returns what the op needs to answer,
// so no statement waits for another's result:
//   - a Claim is claimOneQuery: the INSERT ... ON CONFLICT DO NOTHING in a
//     CTE, with the row the statement's snapshot holds for the key. A
//     claim that inserted nothing and saw no row (a concurrent claim
//     committed after the snapshot was taken) is run again alone after
//     the batch, as a later claim;
//   - a Complete is completeOneQuery: the conditional UPDATE in a CTE,
//     with the state and executor the snapshot holds, which say why
//     nothing was updated (ErrNotFound, ErrNotStarted, ErrLeaseLost) as
//     whyNotHeld does;
//   - an audited Complete (its entry is linked and queued in the same
//     round trip, and must not commit without it) is completeAuditedQuery,
//     which fails when it updates nothing: the batch is rolled back and
//     each op runs alone, which answers the refusal.
//
// Audit entries are linked before the batch is sent, to the chain's head
// as this process's commit queue last committed it (read in the
// transaction otherwise). Their INSERT has no ON CONFLICT here: an entry
// whose (chain, seq) another writer took fails the statement, and with it
// the batch, whose ops run alone on a fresh head.
//
// A statement the server refuses (ErrStatement) aborts the transaction
// before its COMMIT: the batch is poisoned, nothing of it is committed,
// and each op runs alone, as for a batch run statement by statement. Any
// other failure (the connection lost, COMMIT refused) may or may not have
// committed: every op of the batch gets the error.

// ErrStatement marks an error of a Pipeliner that the server reported for
// a statement before COMMIT: the transaction was aborted there and nothing
// of it committed.
var ErrStatement = errors.New("sqlstore: statement refused in a pipelined transaction")

// Pipeliner is implemented by a DB that can send a transaction's
// statements together (PostgreSQL's pipeline mode): the commit queue then
// runs a batch in one round trip.
type Pipeliner interface {
	// Pipeline runs one transaction on one connection. fn queues
	// statements on p and may send what it queued (p.Send: BEGIN goes
	// with the first send). When fn returns nil, what is still queued is
	// sent with COMMIT, in one round trip, and Pipeline returns nil only
	// if the COMMIT succeeded. When fn fails, the transaction is rolled
	// back and fn's error returned. An error wrapping ErrStatement means
	// the server refused a statement before COMMIT (nothing committed);
	// any other error of the last send may or may not have committed.
	Pipeline(ctx context.Context, fn func(p Pipe) error) error
}

// Pipe queues the statements of a pipelined transaction.
type Pipe interface {
	// Queue adds a statement; scan, when not nil, reads its result once it
	// has been sent (a scan error fails the send).
	Queue(sql string, args []any, scan func(Rows) error)
	// Send sends what is queued in one round trip and runs the scans in
	// order.
	Send(ctx context.Context) error
}

// claimOneQuery is a Claim in one statement: whether it inserted, and the
// row the statement's snapshot holds for the key (a row committed after
// the snapshot was taken is not there).
const claimOneQuery = `WITH ins AS (INSERT INTO journal (` + recordCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (scope, run_id, tool_call_id) DO NOTHING RETURNING 1)
SELECT (SELECT COUNT(*) FROM ins), j.scope IS NOT NULL, COALESCE(j.fingerprint, ''), COALESCE(j.state, ''), j.outcome,
 COALESCE(j.owner, ''), COALESCE(j.executor, ''), COALESCE(j.lease_until, 0), COALESCE(j.created_at, 0), COALESCE(j.updated_at, 0),
 COALESCE(j.expires_at, 0)
FROM (SELECT 1) AS one LEFT JOIN journal AS j ON j.scope = $1 AND j.run_id = $2 AND j.tool_call_id = $3`

// claimArgs are claimOneQuery's arguments for rec.
func claimArgs(rec store.Record) []any {
	return []any{rec.Scope, rec.RunID, rec.ToolCallID, rec.Fingerprint, string(rec.State), rec.Outcome, rec.Owner, rec.Executor,
		norm.MS(rec.LeaseUntil), norm.MS(rec.CreatedAt), norm.MS(rec.UpdatedAt), norm.MS(rec.ExpiresAt)}
}

// scanClaimOne reads claimOneQuery's row for rec: claimed, or the stored
// record (seen false: the statement saw none).
func scanClaimOne(r Row, rec store.Record) (claimed, seen bool, stored store.Record, err error) {
	var n int64
	var st string
	var out []byte
	var lease, created, updated, expires int64
	stored.RecordKey = rec.RecordKey
	if err := r.Scan(&n, &seen, &stored.Fingerprint, &st, &out, &stored.Owner, &stored.Executor,
		&lease, &created, &updated, &expires); err != nil {
		return false, false, store.Record{}, err
	}
	if n == 1 {
		return true, true, rec, nil
	}
	if !seen {
		return false, false, store.Record{}, nil
	}
	stored.State = store.State(st)
	stored.Outcome = norm.Bytes(out)
	stored.LeaseUntil = norm.Time(lease)
	stored.CreatedAt = norm.Time(created)
	stored.UpdatedAt = norm.Time(updated)
	stored.ExpiresAt = norm.Time(expires)
	return false, true, stored, nil
}

// completeOneQuery is a Complete in one statement: how many rows it
// updated, and the key's state and executor in the statement's snapshot.
const completeOneQuery = `WITH upd AS (` + completeQuery + ` RETURNING 1)
SELECT (SELECT COUNT(*) FROM upd), j.scope IS NOT NULL, COALESCE(j.state, ''), COALESCE(j.executor, '')
FROM (SELECT 1) AS one LEFT JOIN journal AS j ON j.scope = $1 AND j.run_id = $2 AND j.tool_call_id = $3`

// completeAuditedQuery is a Complete that fails (division by zero) when
// it updates nothing, so that the audit entry queued after it never
// commits without it.
const completeAuditedQuery = `WITH upd AS (` + completeQuery + ` RETURNING 1)
SELECT 1 / (SELECT COUNT(*) FROM upd)::int`

// completeResult is a Complete's answer from completeOneQuery's row.
func completeResult(key store.RecordKey, n int64, seen bool, state, executor string) error {
	switch {
	case n == 1:
		return nil
	case !seen:
		return norm.NotFound("record %s", keyString(key))
	case store.State(state) != store.StateStarted:
		return norm.NotStarted(key, store.State(state))
	}
	// Held by another executor, or changed after the snapshot: the lease
	// is lost, the conservative answer (as whyNotHeld).
	return norm.LeaseLost(key, executor)
}

// runPipelined runs live (two ops or more, or one with audit entries) as
// one pipelined transaction on p and fills in each op's result.
func (s *Store) runPipelined(p Pipeliner, live []*op) {
	ctx, stop := batchContext(live)
	defer stop()
	type claimRes struct {
		claimed, seen bool
		stored        store.Record
	}
	claims := make([]claimRes, len(live))
	completes := make([]error, len(live))
	var entries []store.AuditEntry
	var links []store.AuditLink
	for _, o := range live {
		for _, e := range o.audit {
			entries, links = append(entries, e), append(links, o.link)
		}
	}
	var linked []store.AuditEntry
	var heads []store.AuditHead
	err := p.Pipeline(ctx, func(pp Pipe) error {
		// The heads of the chains this process has not committed to
		// yet are read first, in this transaction.
		known := map[string]store.AuditHead{}
		missing := false
		for _, e := range entries {
			if _, ok := known[e.Chain]; ok {
				continue
			}
			if h, ok := s.gc.heads.get(e.Chain); ok {
				known[e.Chain] = h
				continue
			}
			chain := e.Chain
			known[chain], missing = store.AuditHead{Chain: chain}, true
			pp.Queue(auditLastQuery, []any{chain}, func(r Rows) error {
				h := store.AuditHead{Chain: chain}
				if r.Next() {
					if err := r.Scan(&h.Last, &h.Hash); err != nil {
						return err
					}
				}
				known[chain] = h
				return r.Err()
			})
		}
		if missing {
			if err := pp.Send(ctx); err != nil {
				return err
			}
		}
		for i, o := range live {
			switch o.kind {
			case opClaim:
				pp.Queue(claimOneQuery, claimArgs(o.rec), func(r Rows) error {
					if !r.Next() {
						return errors.Join(ErrNoRows, r.Err())
					}
					c := &claims[i]
					var err error
					c.claimed, c.seen, c.stored, err = scanClaimOne(r, o.rec)
					return err
				})
			case opComplete:
				args := []any{o.rec.Scope, o.rec.RunID, o.rec.ToolCallID, string(o.rec.State), norm.Bytes(o.rec.Outcome), s.nowMS(), o.rec.Executor}
				if len(o.audit) > 0 {
					pp.Queue(completeAuditedQuery, args, nil)
					continue
				}
				pp.Queue(completeOneQuery, args, func(r Rows) error {
					if !r.Next() {
						return errors.Join(ErrNoRows, r.Err())
					}
					var n int64
					var seen bool
					var state, executor string
					if err := r.Scan(&n, &seen, &state, &executor); err != nil {
						return err
					}
					completes[i] = completeResult(o.rec.RecordKey, n, seen, state, executor)
					return nil
				})
			}
		}
		if len(entries) == 0 {
			return nil
		}
		var err error
		linked, heads, err = linkEntries(entries, links, known)
		if err != nil {
			return fmt.Errorf("%w: %w", errPoisoned, err)
		}
		queueAuditInserts(pp, linked)
		return nil
	})
	switch {
	case err == nil:
		s.gc.heads.set(heads)
		if len(live) > 1 {
			s.gc.batches.Add(1)
			s.gc.batched.Add(int64(len(live)))
		}
		for i, o := range live {
			switch {
			case o.kind == opClaim && !claims[i].claimed && !claims[i].seen:
				// A claim committed after the statement's snapshot: read
				// it (or claim again) alone, as a later claim.
				o.alone = true
			case o.kind == opClaim:
				o.claimed, o.stored, o.err = claims[i].claimed, claims[i].stored, nil
			default:
				o.err = completes[i]
				if len(o.audit) > 0 {
					o.linked, linked = linked[:len(o.audit):len(o.audit)], linked[len(o.audit):]
				}
			}
		}
	case errors.Is(err, errPoisoned) || errors.Is(err, ErrStatement):
		// Rolled back: nothing of the batch was written. Each op runs
		// again alone, in its own caller's goroutine.
		s.gc.heads.drop(entries)
		for _, o := range live {
			o.claimed, o.stored, o.err, o.alone, o.linked = false, store.Record{}, nil, true, nil
		}
	default:
		s.gc.heads.drop(entries)
		for _, o := range live {
			o.claimed, o.stored, o.linked = false, store.Record{}, nil
			o.err = fmt.Errorf("store: %s: group commit of %d calls failed: %w", o.name(), len(live), err)
		}
	}
}

// linkEntries links es (links[i] links es[i]) after the heads of their
// chains in heads, and returns them as linked, normalised, in es's order,
// and the chains' heads after them.
func linkEntries(es []store.AuditEntry, links []store.AuditLink, heads map[string]store.AuditHead) ([]store.AuditEntry, []store.AuditHead, error) {
	out := make([]store.AuditEntry, len(es))
	var after []store.AuditHead // in order of first appearance
	for i, e := range es {
		h := heads[e.Chain]
		l := links[i](e, h)
		if l.Chain != e.Chain || !norm.AuditFollows(l, h) || l.Hash == "" {
			return nil, nil, norm.Invalid("audit entry %d (chain %q): the link function did not link it to the head (seq %d)", i, e.Chain, h.Last)
		}
		n, err := norm.AuditEntries([]store.AuditEntry{l})
		if err != nil {
			return nil, nil, err
		}
		out[i] = n[0]
		nh := store.AuditHead{Chain: e.Chain, Last: l.Seq, Hash: l.Hash}
		if _, seen := findHead(after, e.Chain); !seen {
			after = append(after, nh)
		}
		j, _ := findHead(after, e.Chain)
		after[j] = nh
		heads[e.Chain] = nh
	}
	return out, after, nil
}

func findHead(hs []store.AuditHead, chain string) (int, bool) {
	for i, h := range hs {
		if h.Chain == chain {
			return i, true
		}
	}
	return -1, false
}

// queueAuditInserts queues the INSERTs of es (linked, in chain order
// within each chain), a few multi-row statements, with no ON CONFLICT: a
// (chain, seq) taken fails the statement and the transaction. Each fills
// in its entries' IDs from RETURNING.
func queueAuditInserts(pp Pipe, es []store.AuditEntry) {
	for rest := es; len(rest) > 0; {
		n := auditChunk(len(rest))
		chunk := rest[:n]
		args := make([]any, 0, 14*n)
		for _, e := range chunk {
			args = append(args, e.Chain, e.Seq, norm.MS(e.At), e.Kind, e.Subject, e.Server, e.Tool, e.ArgsDigest, e.Outcome,
				e.Duration.Microseconds(), e.Instance, e.PrevHash, e.Hash, e.Detail)
		}
		pp.Queue(auditInsertStrict(n), args, func(r Rows) error {
			got := 0
			for r.Next() {
				var id, seq int64
				var chain string
				if err := r.Scan(&id, &chain, &seq); err != nil {
					return err
				}
				for i := range chunk {
					if chunk[i].Chain == chain && chunk[i].Seq == seq {
						chunk[i].ID = id
						got++
					}
				}
			}
			if err := r.Err(); err != nil {
				return err
			}
			if got != len(chunk) {
				return fmt.Errorf("store: audit insert returned %d of %d rows", got, len(chunk))
			}
			return nil
		})
		rest = rest[n:]
	}
}

// auditInsertStrict is auditInsert(n) without ON CONFLICT, returning each
// row's chain too (a batch's chunk may hold several chains), for the
// chunk sizes of auditChunk.
func auditInsertStrict(n int) string {
	switch n {
	case 1:
		return strictInserts[0]
	case 8:
		return strictInserts[1]
	case 64:
		return strictInserts[2]
	}
	return strictInsert(n)
}

// strictInserts are strictInsert(1), (8) and (64), built once.
var strictInserts = [3]string{strictInsert(1), strictInsert(8), strictInsert(64)}

func strictInsert(n int) string {
	q := auditInsert(n)
	const suffix = ` ON CONFLICT (chain, seq) DO NOTHING RETURNING id, seq`
	return q[:len(q)-len(suffix)] + ` RETURNING id, chain, seq`
}
