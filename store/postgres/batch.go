package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlbatch"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
)

// A batch of the commit queue in one round trip.
//
// The queue's batch (concurrent Claims and Completes, and the audit
// entries committed with them) is one transaction whose statements are
// sent together, instead of one round trip each: every op's statement in
// queue order and the INSERTs of the batch's audit entries go in one round
// trip, the pipeline's implicit transaction, which the server commits at
// its Sync (two round trips, between BEGIN and COMMIT, when an audit
// chain's head is not known yet: it is read first, in the same
// transaction). Each op's statement
// returns what the op needs to answer, so no statement waits for another's
// result:
//   - a Claim is claimOneQuery: the INSERT ... ON CONFLICT DO NOTHING in a
//     CTE, with the row the statement's snapshot holds for the key. A claim
//     that inserted nothing and saw no row (a concurrent claim committed
//     after the snapshot was taken) is run again alone after the batch, as
//     a later claim;
//   - a Complete is completeOneQuery: the conditional UPDATE in a CTE, with
//     the state and executor the snapshot holds, which say why nothing was
//     updated (ErrNotFound, ErrNotStarted, ErrLeaseLost);
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
// A statement the server reports failed (an error, or its backend
// terminated while running it) aborts the transaction before its COMMIT:
// nothing of it is committed (sqlbatch.ErrStatement), and each op runs
// alone. Any other failure (the connection lost without such a report,
// COMMIT refused) may or may not have committed: every op of the batch
// gets the error.

var _ sqlbatch.Batcher = poolDB{}

// claimOneQuery is a Claim in one statement: whether it inserted, and the
// row the statement's snapshot holds for the key (a row committed after
// the snapshot was taken is not there).
const claimOneQuery = `WITH ins AS (INSERT INTO journal (` + recordCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (scope, run_id, tool_call_id) DO NOTHING RETURNING 1)
SELECT (SELECT COUNT(*) FROM ins), j.scope IS NOT NULL, COALESCE(j.fingerprint, ''), COALESCE(j.state, ''), j.outcome,
 COALESCE(j.owner, ''), COALESCE(j.executor, ''), COALESCE(j.lease_until, 0), COALESCE(j.created_at, 0), COALESCE(j.updated_at, 0),
 COALESCE(j.expires_at, 0)
FROM (SELECT 1) AS one LEFT JOIN journal AS j ON j.scope = $1 AND j.run_id = $2 AND j.tool_call_id = $3`

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

// RunBatch implements sqlbatch.Batcher in one pipelined transaction.
func (d poolDB) RunBatch(ctx context.Context, ops []*sqlbatch.Op, cached func(string) (store.AuditHead, bool)) ([]store.AuditHead, error) {
	var entries []store.AuditEntry
	var links []store.AuditLink
	for _, o := range ops {
		for _, e := range o.Audit {
			entries, links = append(entries, e), append(links, o.Link)
		}
	}
	var linked []store.AuditEntry
	var heads []store.AuditHead
	err := d.pipeline(ctx, func(p *pipe) error {
		// The heads of the chains this process has not committed to yet
		// are read first, in this transaction.
		known := map[string]store.AuditHead{}
		missing := false
		for _, e := range entries {
			if _, ok := known[e.Chain]; ok {
				continue
			}
			if h, ok := cached(e.Chain); ok {
				known[e.Chain] = h
				continue
			}
			chain := e.Chain
			known[chain], missing = store.AuditHead{Chain: chain}, true
			p.queue(auditLastQuery, []any{chain}, func(r sqlstore.Rows) error {
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
			if err := p.send(ctx, false); err != nil {
				return err
			}
		}
		for _, o := range ops {
			queueOp(p, o)
		}
		if len(entries) == 0 {
			return nil
		}
		var err error
		if linked, heads, err = linkEntries(entries, links, known); err != nil {
			return fmt.Errorf("%w: %w", sqlbatch.ErrStatement, err)
		}
		queueAuditInserts(p, linked)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, o := range ops {
		if len(o.Audit) > 0 {
			o.Linked, linked = linked[:len(o.Audit):len(o.Audit)], linked[len(o.Audit):]
		}
	}
	return heads, nil
}

// queueOp queues o's statement, whose scan fills in o's result.
func queueOp(p *pipe, o *sqlbatch.Op) {
	r := o.Rec
	switch o.Kind {
	case sqlbatch.Claim:
		p.queue(claimOneQuery, []any{r.Scope, r.RunID, r.ToolCallID, r.Fingerprint, string(r.State), r.Outcome, r.Owner, r.Executor,
			norm.MS(r.LeaseUntil), norm.MS(r.CreatedAt), norm.MS(r.UpdatedAt), norm.MS(r.ExpiresAt)}, func(rs sqlstore.Rows) error {
			if !rs.Next() {
				return errors.Join(sqlstore.ErrNoRows, rs.Err())
			}
			return scanClaimOne(rs, o)
		})
	case sqlbatch.Complete:
		args := []any{r.Scope, r.RunID, r.ToolCallID, string(r.State), norm.Bytes(r.Outcome), norm.MS(r.UpdatedAt), r.Executor}
		if len(o.Audit) > 0 {
			p.queue(completeAuditedQuery, args, nil)
			return
		}
		p.queue(completeOneQuery, args, func(rs sqlstore.Rows) error {
			if !rs.Next() {
				return errors.Join(sqlstore.ErrNoRows, rs.Err())
			}
			var n int64
			var seen bool
			var state, executor string
			if err := rs.Scan(&n, &seen, &state, &executor); err != nil {
				return err
			}
			o.Err = completeResult(r.RecordKey, n, seen, state, executor)
			return nil
		})
	}
}

// scanClaimOne reads claimOneQuery's row into o's result.
func scanClaimOne(r sqlstore.Row, o *sqlbatch.Op) error {
	var n int64
	var seen bool
	var st string
	var out []byte
	var lease, created, updated, expires int64
	stored := store.Record{RecordKey: o.Rec.RecordKey}
	if err := r.Scan(&n, &seen, &stored.Fingerprint, &st, &out, &stored.Owner, &stored.Executor,
		&lease, &created, &updated, &expires); err != nil {
		return err
	}
	switch {
	case n == 1:
		o.Claimed, o.Stored = true, o.Rec
	case !seen:
		o.Again = true // committed after the snapshot: read it alone
	default:
		stored.State = store.State(st)
		stored.Outcome = norm.Bytes(out)
		stored.LeaseUntil = norm.Time(lease)
		stored.CreatedAt = norm.Time(created)
		stored.UpdatedAt = norm.Time(updated)
		stored.ExpiresAt = norm.Time(expires)
		o.Stored = stored
	}
	return nil
}

// completeResult is a Complete's answer from completeOneQuery's row.
func completeResult(key store.RecordKey, n int64, seen bool, state, executor string) error {
	switch {
	case n == 1:
		return nil
	case !seen:
		return norm.NotFound("record %s/%s/%s", key.Scope, key.RunID, key.ToolCallID)
	case store.State(state) != store.StateStarted:
		return norm.NotStarted(key, store.State(state))
	}
	// Held by another executor, or changed after the snapshot: the lease
	// is lost, the conservative answer (as the store's whyNotHeld).
	return norm.LeaseLost(key, executor)
}

// linkEntries links es (links[i] links es[i]) after the heads of their
// chains in heads, and returns them as linked, normalised, in es's order,
// and the chains' heads after them.
func linkEntries(es []store.AuditEntry, links []store.AuditLink, heads map[string]store.AuditHead) ([]store.AuditEntry, []store.AuditHead, error) {
	out := make([]store.AuditEntry, len(es))
	var order []string // the chains, in order of first appearance
	for i, e := range es {
		h := heads[e.Chain]
		l := links[i](e, h)
		if l.Chain != e.Chain || !norm.AuditFollows(l, h) || l.Hash == "" {
			return nil, nil, norm.Invalid("audit entry %d (chain %q): the link function did not link it to the head (seq %d)", i, e.Chain, h.Last)
		}
		out[i] = l
		if err := norm.AuditEntriesInPlace(out[i : i+1]); err != nil {
			return nil, nil, err
		}
		if !contains(order, e.Chain) {
			order = append(order, e.Chain)
		}
		heads[e.Chain] = store.AuditHead{Chain: e.Chain, Last: l.Seq, Hash: l.Hash}
	}
	after := make([]store.AuditHead, len(order))
	for i, c := range order {
		after[i] = heads[c]
	}
	return out, after, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// queueAuditInserts queues the INSERT of es, one statement whatever their
// number (unnestInsert), with no ON CONFLICT: a (chain, seq) taken fails
// the statement and the transaction. It fills in the entries' IDs.
func queueAuditInserts(p *pipe, es []store.AuditEntry) {
	if len(es) == 0 {
		return
	}
	query, args := unnestInsert, auditArrays(es)
	if len(es) == 1 {
		// One entry (a keyed call's completion alone in its batch): its
		// values as parameters, which pgx encodes for less than 14 arrays
		// of one.
		query, args = rowInsert, auditRow(es[0])
	}
	p.queue(query, args, func(r sqlstore.Rows) error {
		got := 0
		for r.Next() {
			var id, seq int64
			var chain string
			if err := r.Scan(&id, &chain, &seq); err != nil {
				return err
			}
			for i := range es {
				if es[i].Chain == chain && es[i].Seq == seq {
					es[i].ID = id
					got++
				}
			}
		}
		if err := r.Err(); err != nil {
			return err
		}
		if got != len(es) {
			return fmt.Errorf("store: audit insert returned %d of %d rows", got, len(es))
		}
		return nil
	})
}

// unnestInsert inserts any number of audit entries, one array a column
// (auditArrays), with no ON CONFLICT, returning each row's id, chain and
// seq: one statement, one text for every batch, and pgx encodes 14 arrays
// instead of 14 parameters a row (what the rows' encoding cost the gateway:
// docs/BENCHMARKS.md, "The audit trail on PostgreSQL").
const unnestInsert = `INSERT INTO audit_log (chain, seq, at, kind, subject, server, tool, args_digest, outcome, duration_us, instance, prev_hash, hash, detail)
SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::bigint[], $11::text[], $12::text[], $13::text[], $14::bytea[])
RETURNING id, chain, seq`

// rowInsert is unnestInsert for one entry (auditRow).
const rowInsert = `INSERT INTO audit_log (chain, seq, at, kind, subject, server, tool, args_digest, outcome, duration_us, instance, prev_hash, hash, detail)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
RETURNING id, chain, seq`

// auditRow is rowInsert's arguments for e (a nil detail is NULL).
func auditRow(e store.AuditEntry) []any {
	return []any{e.Chain, e.Seq, norm.MS(e.At), e.Kind, e.Subject, e.Server, e.Tool, e.ArgsDigest, e.Outcome,
		e.Duration.Microseconds(), e.Instance, e.PrevHash, e.Hash, e.Detail}
}

// auditArrays is unnestInsert's arguments for es: each column's values
// in es's order (a nil detail is NULL).
func auditArrays(es []store.AuditEntry) []any {
	n := len(es)
	chain, kind, subject, server, tool := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	digest, outcome, instance, prev, hash := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	seq, at, dur := make([]int64, n), make([]int64, n), make([]int64, n)
	detail := make([][]byte, n)
	for i, e := range es {
		chain[i], seq[i], at[i], kind[i], subject[i] = e.Chain, e.Seq, norm.MS(e.At), e.Kind, e.Subject
		server[i], tool[i], digest[i], outcome[i], dur[i] = e.Server, e.Tool, e.ArgsDigest, e.Outcome, e.Duration.Microseconds()
		instance[i], prev[i], hash[i], detail[i] = e.Instance, e.PrevHash, e.Hash, e.Detail
	}
	return []any{chain, seq, at, kind, subject, server, tool, digest, outcome, dur, instance, prev, hash, detail}
}

// The journal's columns, Complete's UPDATE and the audit head's query, as
// store/internal/sqlstore has them (the schema is its migrations').
const (
	recordCols    = `scope, run_id, tool_call_id, fingerprint, state, outcome, owner, executor, lease_until, created_at, updated_at, expires_at`
	completeQuery = `UPDATE journal SET state = $4, outcome = $5, updated_at = $6
WHERE scope = $1 AND run_id = $2 AND tool_call_id = $3 AND state = 'started' AND executor = $7`
	auditLastQuery = `SELECT seq, hash FROM audit_log WHERE chain = $1 ORDER BY seq DESC LIMIT 1`
)
