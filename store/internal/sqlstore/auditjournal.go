package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlbatch"
)

// Audit entries linked inside the store's transactions
// (store.AuditJournalStore).
//
// These ops always go through the commit queue, group commit of Claims and
// Completes on or off: with it off, the audited Completes of concurrent
// calls still share transactions, instead of each racing the others for
// the chain's head.
//
// An entry is linked to its chain's head as the transaction that inserts
// it sees it: the head is read (one lookup in the (chain, seq) index) in
// that transaction, then the entries are numbered and hashed (the caller's
// link) and inserted. A Complete that carries an
// entry, and a linked append, are ops of the commit queue like Claims and
// Completes: a batch reads each chain's head once, links every entry of
// the batch in queue order after the batch's completions, and inserts them
// in the same transaction, so the completions and their entries commit
// together. Batches run one at a time, so the process never races itself
// for a head. Another process appending to the same chain meanwhile (two
// gateways sharing one instance name, a misconfiguration) makes an insert
// find its (chain, seq) taken: the batch is rolled back and its ops run
// alone, each retrying on a fresh head.

var _ store.AuditJournalStore = (*Store)(nil)

// auditAloneAttempts bounds how often an op run alone re-reads a head
// another writer moved.
const auditAloneAttempts = 20

// AppendAuditLinked implements store.AuditJournalStore.
func (s *Store) AppendAuditLinked(ctx context.Context, entries []store.AuditEntry, link store.AuditLink) ([]store.AuditEntry, error) {
	if err := checkUnlinked(entries, link); err != nil {
		return nil, err
	}
	o := &op{ctx: ctx, kind: opAudit, audit: entries, link: link}
	_, _, err := s.gc.do(o)
	return o.linked, err
}

// CompleteAudited implements store.AuditJournalStore.
func (s *Store) CompleteAudited(ctx context.Context, key store.RecordKey, executor string, state store.State, outcome []byte, e store.AuditEntry, link store.AuditLink) (store.AuditEntry, error) {
	if err := norm.Completion(state); err != nil {
		return store.AuditEntry{}, err
	}
	if err := checkUnlinked([]store.AuditEntry{e}, link); err != nil {
		return store.AuditEntry{}, err
	}
	o := &op{ctx: ctx, kind: opComplete, rec: store.Record{RecordKey: key, Executor: executor, State: state, Outcome: outcome},
		audit: []store.AuditEntry{e}, link: link}
	if _, _, err := s.gc.do(o); err != nil {
		return store.AuditEntry{}, err
	}
	return o.linked[0], nil
}

// checkUnlinked refuses entries that cannot be linked.
func checkUnlinked(es []store.AuditEntry, link store.AuditLink) error {
	if link == nil {
		return norm.Invalid("audit: no link function to append with")
	}
	if len(es) == 0 {
		return norm.Invalid("no audit entries to append")
	}
	for i, e := range es {
		switch {
		case e.Chain == "":
			return norm.Invalid("audit entry %d has no chain", i)
		case e.Kind == "":
			return norm.Invalid("audit entry %d (chain %q) has no kind", i, e.Chain)
		}
	}
	return nil
}

// runAuditAlone runs o (a Complete with its entries, or a linked append)
// in a transaction of its own, again on a fresh head while another writer
// of the chain moves it. leader says whether it runs as a batch of the
// commit queue (then the heads it knows are the chains' own); run alone
// after a poisoned batch, it reads the heads and forgets them after.
func (s *Store) runAuditAlone(o *op, leader bool) error {
	links := make([]store.AuditLink, len(o.audit))
	for i := range links {
		links[i] = o.link
	}
	cache := &s.gc.heads
	inTx := s.db.InTx
	if lt, ok := s.db.(LazyTxer); ok && o.kind == opAudit {
		inTx = lt.InTxLazy // the audit writer's batch alone
	}
	for attempt := 1; ; attempt++ {
		var linked []store.AuditEntry
		var heads []store.AuditHead
		err := inTx(o.ctx, func(tx Querier) error {
			if o.kind == opComplete {
				if err := s.completeOn(o.ctx, tx, o.rec.RecordKey, o.rec.Executor, o.rec.State, o.rec.Outcome); err != nil {
					return err
				}
			}
			var err error
			var known *sqlbatch.Heads
			if leader {
				known = cache
			}
			linked, heads, err = s.linkAndInsert(o.ctx, tx, o.audit, links, known)
			return err
		})
		if err == nil && leader {
			cache.Set(heads)
		} else {
			cache.Drop(o.audit)
		}
		if err == nil {
			o.linked = linked
			return nil
		}
		err = unwrapStmt(err)
		if errors.Is(err, store.ErrConflict) && attempt < auditAloneAttempts && o.ctx.Err() == nil {
			continue
		}
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrNotFound) ||
			errors.Is(err, store.ErrNotStarted) || errors.Is(err, store.ErrLeaseLost) {
			return err
		}
		return fmt.Errorf("store: %s: %w", o.name(), err)
	}
}

// linkAndInsert links es (links[i] links es[i]) to their chains' heads,
// known ones from known (nil: none) and the others as tx sees them,
// inserts them (a few multi-row INSERTs per chain), and returns them as
// written, in es's order, and the chains' heads after them. An entry whose
// (chain, seq) is taken meanwhile is ErrConflict; a failed statement a
// *stmtError.
func (s *Store) linkAndInsert(ctx context.Context, tx Querier, es []store.AuditEntry, links []store.AuditLink, known *sqlbatch.Heads) ([]store.AuditEntry, []store.AuditHead, error) {
	out := make([]store.AuditEntry, len(es))
	type chainRun struct {
		first store.AuditHead // the head before the run
		head  store.AuditHead // after the entries linked so far
		idx   []int
	}
	var runs []*chainRun // in order of first appearance; usually one
	find := func(chain string) *chainRun {
		for _, r := range runs {
			if r.head.Chain == chain {
				return r
			}
		}
		return nil
	}
	for i, e := range es {
		r := find(e.Chain)
		if r == nil {
			h, ok := store.AuditHead{}, false
			if known != nil {
				h, ok = known.Get(e.Chain)
			}
			if !ok {
				var err error
				if h, err = s.audit.last(ctx, tx, e.Chain); err != nil {
					return nil, nil, &stmtError{fmt.Errorf("store: audit head of %q: %w", e.Chain, err)}
				}
			}
			r = &chainRun{first: h, head: h}
			runs = append(runs, r)
		}
		l := links[i](e, r.head)
		if l.Chain != e.Chain || !norm.AuditFollows(l, r.head) || l.Hash == "" {
			return nil, nil, norm.Invalid("audit entry %d (chain %q): the link function did not link it to the head (seq %d)", i, e.Chain, r.head.Last)
		}
		out[i] = l
		r.head.Last, r.head.Hash = l.Seq, l.Hash
		r.idx = append(r.idx, i)
	}
	for _, r := range runs {
		run := out // one chain (the usual case): every entry, in order
		if len(runs) > 1 {
			run = make([]store.AuditEntry, len(r.idx))
			for j, i := range r.idx {
				run[j] = out[i]
			}
		}
		if err := norm.AuditEntriesInPlace(run); err != nil {
			return nil, nil, err
		}
		ids := make([]int64, len(run))
		for rest := run; len(rest) > 0; {
			n := s.audit.chunk(len(rest))
			if err := s.audit.insert(ctx, tx, rest[:n], ids[len(run)-len(rest):], r.first); err != nil {
				if errors.Is(err, store.ErrConflict) {
					return nil, nil, err
				}
				return nil, nil, &stmtError{fmt.Errorf("store: append to audit chain %q: %w", r.first.Chain, err)}
			}
			rest = rest[n:]
		}
		for j, i := range r.idx {
			out[i] = run[j]
			out[i].ID = ids[j]
		}
	}
	heads := make([]store.AuditHead, len(runs))
	for i, r := range runs {
		heads[i] = store.AuditHead{Chain: r.head.Chain, Last: r.head.Last, Hash: r.head.Hash}
	}
	return out, heads, nil
}
