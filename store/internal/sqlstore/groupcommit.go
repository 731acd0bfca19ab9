package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/commitdelay"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlbatch"
)

// Group commit.
//
// Concurrent Claims and Completes share one transaction: a caller queues
// its op; if no batch is being committed it becomes the leader at once (no
// timer, no goroutine hop: a lone caller runs its own op, alone, exactly as
// without group commit). The leader takes every op queued at that moment,
// runs them in one transaction in queue order, each op computing its own
// result inside it (a Claim that finds a record returns claimed=false and
// that record; a Complete that finds the lease lost gets ErrLeaseLost, for
// that op only), commits, and only then answers each caller. Ops queued
// meanwhile wait for the next batch, led by the first of them. A leader
// alone in the queue while other calls are in flight (claimed, not yet
// completing) first yields its processor once (commitdelay): on a
// CPU-bound process, the calls ready to run queue their ops and join.
//
// Failures:
//   - A statement that fails inside the batch (not a logical refusal) rolls
//     the batch back; nothing of it was committed, so every op of it is
//     run again alone, by its own caller, with its own context: one bad op
//     cannot fail its neighbours.
//   - BEGIN or COMMIT failing fails every op of the batch with that error
//     (wrapped): none is ever answered as done unless the commit succeeded.
//     A failed COMMIT is not retried, as it may have committed (a
//     connection lost during COMMIT).
//
// Cancellation: an op whose caller's context is done before its batch
// starts is dropped, never written. A caller whose op is already in a
// batch being committed may stop waiting (it gets its context's error);
// its op's outcome is then whatever the batch committed: a claim committed
// for a caller that is gone is a started record nobody renews, which the
// journal's lease and in_doubt machinery already handles, as it does for
// a process killed after its claim. The batch's transaction itself is
// cancelled only when every caller in it has given up.

// opKind is in the order of sqlbatch.Kind.
type opKind uint8

const (
	opClaim opKind = iota
	opComplete
	opAudit // a linked append of audit entries alone (auditjournal.go)
)

func (k opKind) String() string {
	switch k {
	case opClaim:
		return "claim"
	case opComplete:
		return "complete"
	}
	return "audit append"
}

// op is one queued Claim, Complete or linked audit append. rec holds the
// normalised record of a Claim, or the key, executor, state and outcome
// of a Complete.
type op struct {
	ctx  context.Context
	kind opKind
	rec  store.Record
	// audit are the entries appended with the op (a Complete's, committed
	// with it, or an opAudit's), each linked by link inside the batch's
	// transaction; linked is them as written.
	audit  []store.AuditEntry
	link   store.AuditLink
	linked []store.AuditEntry

	// Written by the leader before the op's wake is sent; read by its
	// caller after receiving it.
	claimed bool
	stored  store.Record
	err     error
	alone   bool // the batch was poisoned: run the op alone

	// wake carries at most two signals, each received before the next is
	// sent: "lead the next batch", then "answered".
	wake chan struct{}
	// Under committer.mu.
	taken bool // in a batch being run
	lead  bool // told to lead the next batch
}

// name says what o is, for errors.
func (o *op) name() string {
	if o.kind == opAudit {
		if len(o.audit) > 0 {
			return fmt.Sprintf("audit append to %q", o.audit[0].Chain)
		}
		return "audit append"
	}
	return o.kind.String() + " " + keyString(o.rec.RecordKey)
}

// committer is the commit queue of one Store.
type committer struct {
	s    *Store
	mu   sync.Mutex
	idle sync.Cond // signalled when running becomes false
	// queue holds the ops waiting for the next batch, in arrival order.
	queue    []*op
	running  bool // a leader exists
	inflight int  // ops in the batch being run
	closed   bool

	// heads are the audit chains' heads as the queue last committed them.
	heads sqlbatch.Heads
	delay *commitdelay.Tracker // when a lone leader yields to the calls in flight

	// Counted for tests: transactions that held more than one op, and the
	// ops in them.
	batches, batched atomic.Int64
}

func newCommitter(s *Store, delay commitdelay.Options) *committer {
	c := &committer{s: s, delay: commitdelay.New(delay)}
	c.idle.L = &c.mu
	return c
}

// do queues o and returns its result once its batch has committed. The
// delay tracks the calls in flight between a claim and its completion.
func (c *committer) do(o *op) (bool, store.Record, error) {
	if o.kind == opComplete {
		c.delay.Completing(o.rec.RecordKey)
	}
	claimed, rec, err := c.enqueue(o)
	if claimed && o.kind == opClaim {
		c.delay.Claimed(o.rec.RecordKey)
	}
	return claimed, rec, err
}

// enqueue queues o, leads its batch or waits for it, and returns o's
// result.
func (c *committer) enqueue(o *op) (bool, store.Record, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false, store.Record{}, fmt.Errorf("store: %s: %w", o.name(), store.ErrClosed)
	}
	if !c.running {
		c.running = true
		c.queue = append(c.queue, o)
		c.mu.Unlock()
		c.lead(o)
		return c.result(o)
	}
	o.wake = make(chan struct{}, 1)
	c.queue = append(c.queue, o)
	c.mu.Unlock()

	select {
	case <-o.wake:
	case <-o.ctx.Done():
		c.mu.Lock()
		switch {
		case o.lead:
			// Told to lead as the caller gave up: lead anyway (the op
			// itself is dropped as cancelled), so the queue moves on.
			c.mu.Unlock()
			<-o.wake
		case o.taken:
			c.mu.Unlock()
			select {
			case <-o.wake: // answered meanwhile: the answer, not the cancellation
				return c.result(o)
			default:
			}
			return false, store.Record{}, fmt.Errorf("store: %s: stopped waiting for its group commit (its outcome is what the batch committed): %w",
				o.name(), context.Cause(o.ctx))
		default:
			c.queue = slices.DeleteFunc(c.queue, func(q *op) bool { return q == o })
			c.mu.Unlock()
			return false, store.Record{}, fmt.Errorf("store: %s: %w", o.name(), context.Cause(o.ctx))
		}
	}
	if o.lead {
		c.lead(o)
	}
	return c.result(o)
}

// result returns o's answer, running it alone first when its batch was
// poisoned.
func (c *committer) result(o *op) (bool, store.Record, error) {
	if o.alone {
		return c.s.runAlone(o)
	}
	return o.claimed, o.stored, o.err
}

// lead runs one batch: every op queued now (self among them), then hands
// the lead to the first op queued meanwhile, or ends.
func (c *committer) lead(self *op) {
	c.mu.Lock()
	if n := len(c.queue); n == 1 { // alone: let the calls in flight join (commitdelay)
		c.mu.Unlock()
		c.delay.Yield(n)
		c.mu.Lock()
	}
	batch := c.queue
	c.queue = nil
	for _, o := range batch {
		o.taken = true
	}
	c.inflight = len(batch)
	c.mu.Unlock()

	finished := false
	defer func() {
		if !finished { // runBatch panicked: answer the batch, hand on the lead, panic on
			for _, o := range batch {
				o.claimed, o.stored, o.alone, o.linked = false, store.Record{}, false, nil
				o.err = fmt.Errorf("store: %s: its group commit panicked", o.name())
			}
			c.answer(batch, self)
		}
	}()
	c.s.runBatch(batch)
	finished = true
	c.answer(batch, self)
}

// answer wakes every op of batch but self, then hands the lead to the
// first op queued meanwhile, or ends.
func (c *committer) answer(batch []*op, self *op) {
	for _, o := range batch {
		if o != self {
			o.wake <- struct{}{}
		}
	}

	c.mu.Lock()
	c.inflight = 0
	if len(c.queue) > 0 {
		next := c.queue[0]
		next.lead = true
		next.wake <- struct{}{}
	} else {
		c.running = false
		c.idle.Broadcast()
	}
	c.mu.Unlock()
}

// close refuses new ops and waits until every queued op is answered.
func (c *committer) close() {
	c.mu.Lock()
	c.closed = true
	for c.running {
		c.idle.Wait()
	}
	c.mu.Unlock()
}

// runAlone runs o as its own statement (or transaction, with audit
// entries), as without group commit.
func (s *Store) runAlone(o *op) (bool, store.Record, error) {
	if len(o.audit) > 0 {
		return false, store.Record{}, s.runAuditAlone(o, false)
	}
	if o.kind == opClaim {
		claimed, stored, err := s.claimOn(o.ctx, s.db, o.rec)
		return claimed, stored, unwrapStmt(err)
	}
	return false, store.Record{}, unwrapStmt(s.completeOn(o.ctx, s.db, o.rec.RecordKey, o.rec.Executor, o.rec.State, o.rec.Outcome))
}

// errPoisoned ends a batch's transaction when one of its statements failed.
var errPoisoned = errors.New("a statement of the batch failed")

// runBatch fills in the result of every op of batch.
func (s *Store) runBatch(batch []*op) {
	live := make([]*op, 0, len(batch))
	for _, o := range batch {
		if err := o.ctx.Err(); err != nil {
			o.err = fmt.Errorf("store: %s: %w", o.name(), context.Cause(o.ctx))
			continue
		}
		live = append(live, o)
	}
	switch len(live) {
	case 0:
		return
	case 1:
		if o := live[0]; len(o.audit) == 0 {
			o.claimed, o.stored, o.err = s.runAlone(o)
			return
		} else if s.bt == nil {
			o.err = s.runAuditAlone(o, true)
			return
		}
	}
	if s.bt != nil {
		s.runBatcher(s.bt, live)
		return
	}
	ctx, stop := sqlbatch.Context(opContexts(live))
	defer stop()
	var entries []store.AuditEntry // the audit entries of the batch's ops that stand
	var links []store.AuditLink
	var heads []store.AuditHead
	err := s.db.InTx(ctx, func(tx Querier) error {
		entries, links = entries[:0], links[:0]
		for _, o := range live {
			switch o.kind {
			case opClaim:
				o.claimed, o.stored, o.err = s.claimOn(ctx, tx, o.rec)
			case opComplete:
				o.err = s.completeOn(ctx, tx, o.rec.RecordKey, o.rec.Executor, o.rec.State, o.rec.Outcome)
			}
			if _, ok := o.err.(*stmtError); ok {
				return errPoisoned
			}
			if o.err == nil {
				// A refused Complete writes nothing, its entry included.
				for _, e := range o.audit {
					entries, links = append(entries, e), append(links, o.link)
				}
			}
		}
		if len(entries) == 0 {
			return nil
		}
		linked, hs, err := s.linkAndInsert(ctx, tx, entries, links, &s.gc.heads)
		heads = hs
		if err != nil {
			// A head moved by another writer, or a failed insert: the
			// completions must not commit without their entries.
			return errPoisoned
		}
		for _, o := range live {
			if o.err == nil && len(o.audit) > 0 {
				o.linked, linked = linked[:len(o.audit):len(o.audit)], linked[len(o.audit):]
			}
		}
		return nil
	})
	s.settle(live, heads, entries, err, errPoisoned)
}

// settle ends a batch by err: committed (nil), its heads kept and counted;
// rolled back with nothing of it written (poisoned), each op run again
// alone, in its own caller's goroutine; otherwise every op fails with err.
func (s *Store) settle(live []*op, heads []store.AuditHead, entries []store.AuditEntry, err, poisoned error) {
	switch {
	case err == nil:
		s.gc.heads.Set(heads)
		if len(live) > 1 {
			s.gc.batches.Add(1)
			s.gc.batched.Add(int64(len(live)))
		}
		return
	case errors.Is(err, poisoned):
		for _, o := range live {
			o.claimed, o.stored, o.err, o.alone, o.linked = false, store.Record{}, nil, true, nil
		}
	default:
		for _, o := range live {
			o.claimed, o.stored, o.linked = false, store.Record{}, nil
			o.err = fmt.Errorf("store: %s: group commit of %d calls failed: %w", o.name(), len(live), err)
		}
	}
	s.gc.heads.Drop(entries)
}

// runBatcher runs live on bt (sqlbatch: PostgreSQL, one round trip) and
// fills in each op's result.
func (s *Store) runBatcher(bt sqlbatch.Batcher, live []*op) {
	ctx, stop := sqlbatch.Context(opContexts(live))
	defer stop()
	ops := make([]*sqlbatch.Op, len(live))
	var entries []store.AuditEntry
	for i, o := range live {
		ops[i] = &sqlbatch.Op{Kind: sqlbatch.Kind(o.kind), Rec: o.rec, Audit: o.audit, Link: o.link}
		if o.kind == opComplete {
			ops[i].Rec.UpdatedAt = s.now()
		}
		entries = append(entries, o.audit...)
	}
	heads, err := bt.RunBatch(ctx, ops, s.gc.heads.Get)
	if err == nil {
		for i, o := range live {
			o.claimed, o.stored, o.err, o.linked, o.alone = ops[i].Claimed, ops[i].Stored, ops[i].Err, ops[i].Linked, ops[i].Again
		}
	}
	s.settle(live, heads, entries, err, sqlbatch.ErrStatement)
}

func opContexts(ops []*op) []context.Context {
	ctxs := make([]context.Context, len(ops))
	for i, o := range ops {
		ctxs[i] = o.ctx
	}
	return ctxs
}

// stmtError marks the error of a failed SQL statement, as opposed to a
// logical refusal (ErrNotFound, ErrNotStarted, ErrLeaseLost): in a batch,
// it poisons the transaction.
type stmtError struct{ err error }

func (e *stmtError) Error() string { return e.err.Error() }
func (e *stmtError) Unwrap() error { return e.err }

// unwrapStmt removes the *stmtError mark from err, if any.
func unwrapStmt(err error) error {
	if se, ok := err.(*stmtError); ok {
		return se.err
	}
	return err
}
