package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
)

// poolDB adapts a pgxpool.Pool to sqlstore.DB.
type poolDB struct{ p *pgxpool.Pool }

var _ sqlstore.DB = poolDB{}

// mapErr turns the pool's "closed" error into store.ErrClosed and pgx's
// "no rows" into sqlstore.ErrNoRows; other errors pass through.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, puddle.ErrClosedPool):
		return store.ErrClosed
	case errors.Is(err, pgx.ErrNoRows):
		return sqlstore.ErrNoRows
	}
	return err
}

// Close implements sqlstore.DB. It stops the pool's health-check goroutine
// and waits until every acquired connection is released and closed.
func (d poolDB) Close() error {
	d.p.Close()
	return nil
}

func (d poolDB) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := d.p.Exec(ctx, sql, args...)
	return tag.RowsAffected(), mapErr(err)
}

func (d poolDB) QueryRow(ctx context.Context, sql string, args ...any) sqlstore.Row {
	return row{d.p.QueryRow(ctx, sql, args...)}
}

func (d poolDB) Query(ctx context.Context, sql string, args ...any) (sqlstore.Rows, error) {
	rs, err := d.p.Query(ctx, sql, args...)
	if err != nil {
		return nil, mapErr(err)
	}
	return rows{rs}, nil
}

// InTx implements sqlstore.DB on one pooled connection.
func (d poolDB) InTx(ctx context.Context, fn func(tx sqlstore.Querier) error) error {
	return mapErr(pgx.BeginTxFunc(ctx, d.p, pgx.TxOptions{}, func(tx pgx.Tx) error {
		return fn(txQuerier{tx})
	}))
}

// row maps pgx's errors on Scan (the pooled row releases its connection
// there).
type row struct{ r pgx.Row }

func (r row) Scan(dest ...any) error { return mapErr(r.r.Scan(dest...)) }

// rows maps pgx's errors; Close releases a pooled connection.
type rows struct{ pgx.Rows }

func (r rows) Scan(dest ...any) error { return mapErr(r.Rows.Scan(dest...)) }
func (r rows) Err() error             { return mapErr(r.Rows.Err()) }

// txQuerier runs statements inside one transaction on one connection.
type txQuerier struct{ tx pgx.Tx }

func (q txQuerier) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := q.tx.Exec(ctx, sql, args...)
	return tag.RowsAffected(), mapErr(err)
}

func (q txQuerier) QueryRow(ctx context.Context, sql string, args ...any) sqlstore.Row {
	return row{q.tx.QueryRow(ctx, sql, args...)}
}

func (q txQuerier) Query(ctx context.Context, sql string, args ...any) (sqlstore.Rows, error) {
	rs, err := q.tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, mapErr(err)
	}
	return rows{rs}, nil
}
