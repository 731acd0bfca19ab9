// Package sqlbatch is the contract between the commit queue of
// store/internal/sqlstore and a database adapter that runs a batch of it
// itself, in one transaction of its own making (store/postgres sends a
// batch's statements and its COMMIT in one round trip).
//
// The queue's rules hold whatever runs the batch: no op is answered before
// the COMMIT succeeded; a batch of which nothing was committed
// (ErrStatement) has its ops run again alone, each by its own caller; a
// batch that may or may not have committed fails every op.
//
// It also holds what both sides share: the context a batch's transaction
// runs in (Context) and the audit chains' heads as the queue last
// committed them (Heads).
package sqlbatch

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
)

// ErrStatement marks a Batcher's error when nothing of the batch was
// committed (the server refused a statement before COMMIT, or the batch
// could not be built): each op is then run again alone.
var ErrStatement = errors.New("sqlbatch: a statement of the batch failed (nothing committed)")

// Kind says what an Op is.
type Kind uint8

// Kind values.
const (
	// Claim is a journal Claim: Rec is the normalised record.
	Claim Kind = iota
	// Complete is a journal Complete: Rec holds its key, executor, state,
	// outcome and UpdatedAt.
	Complete
	// Audit is a linked append of audit entries alone.
	Audit
)

// Op is one op of a batch, and its result.
type Op struct {
	Kind Kind
	Rec  store.Record
	// Audit are the entries committed with the op, each linked by Link.
	Audit []store.AuditEntry
	Link  store.AuditLink

	// Set by the Batcher once the batch committed.
	Claimed bool               // the Claim inserted Rec
	Stored  store.Record       // the record a Claim found, or Rec
	Err     error              // a Complete's refusal (ErrNotFound, ErrNotStarted, ErrLeaseLost)
	Linked  []store.AuditEntry // Audit as written
	// Again asks for the op to be run again alone, after the batch: its
	// statement could not tell (a Claim that found a record committed
	// after its statement's snapshot).
	Again bool
}

// Batcher runs a batch of the commit queue in one transaction.
type Batcher interface {
	// RunBatch runs ops, in order, in one transaction, each op computing
	// its own result; the audit entries are linked in op order after the
	// heads known returns (the queue's last committed ones; the others are
	// read in the transaction). It returns the chains' heads after the
	// batch once its COMMIT succeeded; an error wrapping ErrStatement when
	// nothing was committed; any other error when the batch may or may not
	// have committed.
	RunBatch(ctx context.Context, ops []*Op, known func(chain string) (store.AuditHead, bool)) ([]store.AuditHead, error)
}

// Context returns the context a batch's transaction runs in, given its
// ops' contexts: the first one's values, cancelled once every one is done
// (a batch keeps going while any caller still waits for it). Call stop
// when the batch ends.
func Context(ctxs []context.Context) (ctx context.Context, stop func()) {
	if len(ctxs) == 1 {
		return ctxs[0], func() {}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctxs[0]))
	var left atomic.Int64
	left.Store(int64(len(ctxs)))
	stops := make([]func() bool, len(ctxs))
	for i, c := range ctxs {
		stops[i] = context.AfterFunc(c, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// Heads holds the heads of the chains a process's commit queue last
// committed, so that a batch links its entries without reading the
// head first. A head another writer moved since is found out by the
// insert ((chain, seq) taken: ErrConflict), and forgotten.
type Heads struct {
	mu sync.Mutex
	m  map[string]store.AuditHead
}

// Get returns the head of chain, if known.
func (h *Heads) Get(chain string) (store.AuditHead, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.m[chain]
	return v, ok
}

// Set records heads as committed.
func (h *Heads) Set(heads []store.AuditHead) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]store.AuditHead{}
	}
	for _, hd := range heads {
		h.m[hd.Chain] = hd
	}
}

// Drop forgets the heads of the chains of es.
func (h *Heads) Drop(es []store.AuditEntry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range es {
		delete(h.m, e.Chain)
	}
}

// AuditValues returns the INSERT of n audit entries into audit_log up to
// its VALUES rows, $1 to $(14n), in AuditArgs's order: each store's
// statement appends its own conflict and RETURNING clauses.
func AuditValues(n int) string { return auditValues(n, false) }

// AuditValuesAnon is AuditValues with anonymous parameters (?), in the same
// order, for SQLite. Its driver looks up the name of every parameter it
// binds (sqlite3_bind_parameter_name, a scan of the statement's list of
// names), so that binding the 14n named parameters $1 to $(14n) takes time
// in the square of n: with 64 rows, more than the rows' insert. An
// anonymous parameter has no name and no list to scan.
func AuditValuesAnon(n int) string { return auditValues(n, true) }

func auditValues(n int, anon bool) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO audit_log (chain, seq, at, kind, subject, server, tool, args_digest, outcome, duration_us, instance, prev_hash, hash, detail) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for j := range 14 {
			if j > 0 {
				b.WriteString(", ")
			}
			if anon {
				b.WriteByte('?')
			} else {
				b.WriteString("$" + strconv.Itoa(i*14+j+1))
			}
		}
		b.WriteByte(')')
	}
	return b.String()
}

// AuditArgs appends the arguments of AuditValues(len(es)) to args. A
// text equal to the row before's (a batch's chain and instance, mostly
// its kind, subject, server, tool, outcome and often its arguments'
// digest; a previous hash is the row before's hash) is passed as that
// row's argument, the same interface value: a string put in an interface
// is allocated, ten a row otherwise.
func AuditArgs(args []any, es []store.AuditEntry) []any {
	for i, e := range es {
		if i == 0 {
			args = append(args, e.Chain, e.Seq, norm.MS(e.At), e.Kind, e.Subject, e.Server, e.Tool, e.ArgsDigest, e.Outcome,
				e.Duration.Microseconds(), e.Instance, e.PrevHash, e.Hash, e.Detail)
			continue
		}
		p, prev := es[i-1], args[len(args)-14:]
		same := func(s, was string, j int) any {
			if s == was {
				return prev[j]
			}
			return s
		}
		args = append(args, same(e.Chain, p.Chain, 0), e.Seq, norm.MS(e.At), same(e.Kind, p.Kind, 3),
			same(e.Subject, p.Subject, 4), same(e.Server, p.Server, 5), same(e.Tool, p.Tool, 6), same(e.ArgsDigest, p.ArgsDigest, 7),
			same(e.Outcome, p.Outcome, 8), e.Duration.Microseconds(), same(e.Instance, p.Instance, 10),
			same(e.PrevHash, p.Hash, 12), e.Hash, e.Detail)
	}
	return args
}
