package sqlite

import (
	"context"

	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
)

// readSlots admits the users of the read pool, one per connection, each
// waiting for its turn with its own context.
//
// database/sql waits for a free connection with the statement's context,
// and a statement here runs detached from its context (see detach): a
// read that found every connection taken (long exports holding them)
// waited for one past its context, however long that took. A user holds
// a slot from before its statement until its row is scanned or its rows
// are closed, and uses one connection at a time, so a statement run with
// a slot always finds a connection free; only the wait for the slot
// itself remains, and it ends with the context.
//
// Every user of the pool takes a slot: reads (QueryRow, Query) and the
// checkpointer. A slot is taken before the writer's queue, never after
// it, by whoever needs both (the checkpointer's second pass).
type readSlots chan struct{}

// enter waits for a slot, or ctx.
func (s readSlots) enter(ctx context.Context) error {
	select {
	case s <- struct{}{}:
		return nil
	default:
	}
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leave gives a slot back.
func (s readSlots) leave() { <-s }

// heldRow is a row whose statement holds a turn (a read slot, or the
// writer's queue) until the row is scanned.
type heldRow struct {
	r       sqlstore.Row
	release func()
}

func (h *heldRow) Scan(dest ...any) error {
	err := h.r.Scan(dest...)
	if h.release != nil {
		h.release()
		h.release = nil
	}
	return err
}
