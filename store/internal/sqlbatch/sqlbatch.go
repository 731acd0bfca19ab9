// Package sqlbatch is the contract between the commit queue of
// store/internal/sqlstore and a database adapter that runs a batch of it
// itself, in one transaction of its own making (store/postgres sends a
// batch's statements and its COMMIT in one round trip).
//
// The queue's rules hold whatever runs the batch: no op is answered before
// the COMMIT succeeded; a batch of which nothing was committed
// (ErrStatement) has its ops run again alone, each by its own caller; a
// batch that may or may not have committed fails every op.
package sqlbatch

import (
	"context"
	"errors"

	"github.com/gatehouse-dev/gatehouse/store"
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
