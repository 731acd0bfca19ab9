package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gatehouse-dev/gatehouse/store/internal/sqlbatch"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
)

// rollbackTimeout bounds the ROLLBACK of a pipelined transaction that
// failed (its caller's context may be what ended it).
const rollbackTimeout = 5 * time.Second

// pipeline runs one transaction on one pooled connection with pgx batches:
// fn queues statements on p and may send them (p.send); when fn returns
// nil, what is still queued is sent with COMMIT. Each send is one
// pgx.Batch (pipeline mode: the statements and one Sync in one write,
// their results read in order), BEGIN queued before the first send's
// statements; a transaction sent in one batch is the pipeline's implicit
// transaction instead (see send). When fn fails the transaction is rolled back and fn's error
// returned. An error wrapping sqlbatch.ErrStatement means the server
// refused a statement before COMMIT (nothing committed); any other error
// of the last send may or may not have committed.
func (d poolDB) pipeline(ctx context.Context, fn func(p *pipe) error) error {
	c, err := d.p.Acquire(ctx)
	if err != nil {
		return mapErr(err)
	}
	// Release destroys a connection left in a transaction or broken.
	defer c.Release()
	p := &pipe{c: c.Conn()}
	if err := fn(p); err != nil {
		p.rollback()
		return err
	}
	if err := p.send(ctx, true); err != nil {
		p.rollback()
		return err
	}
	return nil
}

// pipe queues the statements of a pipelined transaction on one
// connection.
type pipe struct {
	c      *pgx.Conn
	begun  bool
	queued []queued
}

type queued struct {
	sql  string
	args []any
	scan func(sqlstore.Rows) error
}

// queue adds a statement; scan, when not nil, reads its result once it
// has been sent (a scan error fails the send).
func (p *pipe) queue(sql string, args []any, scan func(sqlstore.Rows) error) {
	p.queued = append(p.queued, queued{sql, args, scan})
}

// send sends what is queued, after BEGIN on the first send and followed
// by COMMIT when commit is set, in one batch, and reads every result. A
// transaction sent whole in one batch (the first send, committing) needs
// neither: a pipeline's statements up to its one Sync are one implicit
// transaction, which the server commits at the Sync, or rolls back
// whole when one of them fails (two statements fewer to encode, run and
// read, the commit queue's usual batch). A statement the server refused
// before the commit is sqlbatch.ErrStatement.
func (p *pipe) send(ctx context.Context, commit bool) error {
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(p.queued)+2)}
	begin := !p.begun
	implicit := begin && commit
	if begin && !implicit {
		b.Queue("BEGIN")
	}
	for _, q := range p.queued {
		b.Queue(q.sql, q.args...)
	}
	if commit && !implicit {
		b.Queue("COMMIT")
	}
	qs := p.queued
	p.queued, p.begun = nil, true
	br := p.c.SendBatch(ctx, b)
	err := readBatch(br, begin && !implicit, qs, commit && !implicit)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("store: postgres pipeline: %w", mapErr(cerr))
	}
	return err
}

// readBatch reads a batch's results in order; the first error ends it.
func readBatch(br pgx.BatchResults, begin bool, qs []queued, commit bool) error {
	if begin {
		if _, err := br.Exec(); err != nil {
			return refused("BEGIN", err)
		}
	}
	for _, q := range qs {
		rs, err := br.Query()
		if err == nil && q.scan != nil {
			err = q.scan(rows{rs})
		}
		if rs != nil {
			rs.Close()
			if err == nil {
				err = rs.Err()
			}
		}
		if err != nil {
			return refused("statement", err)
		}
	}
	if commit {
		tag, err := br.Exec()
		if err != nil {
			return fmt.Errorf("store: postgres pipeline: COMMIT: %w", mapErr(err))
		}
		if tag.String() != "COMMIT" {
			// COMMIT of a transaction already aborted answers ROLLBACK.
			return fmt.Errorf("store: postgres pipeline: COMMIT answered %q: the transaction was rolled back", tag.String())
		}
	}
	return nil
}

// refused wraps the error of a statement before COMMIT: one the server
// reported aborted the transaction (sqlbatch.ErrStatement); any other (the
// connection lost, a result that did not scan) is returned as it is.
func refused(what string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return fmt.Errorf("%w: %s: %w", sqlbatch.ErrStatement, what, mapErr(err))
	}
	return fmt.Errorf("store: postgres pipeline: %s: %w", what, mapErr(err))
}

// rollback ends a transaction the pipe began and did not commit, when the
// connection is still in it.
func (p *pipe) rollback() {
	if !p.begun || p.c.IsClosed() || p.c.PgConn().TxStatus() == 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
	defer cancel()
	_, _ = p.c.Exec(ctx, "ROLLBACK") // failing, Release destroys the connection
}
