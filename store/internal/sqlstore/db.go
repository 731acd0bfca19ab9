// Package sqlstore implements store.Store once, in SQL that SQLite and
// PostgreSQL both accept, over a small adapter each driver package provides.
//
//	var dialect = sqlstore.Dialect{Name: "sqlite", Bytes: "BLOB", Serial: "INTEGER PRIMARY KEY AUTOINCREMENT"}
//
//	adapter := &sqlDB{db: db} // the driver package's sqlstore.DB
//	if err := sqlstore.Migrate(ctx, adapter, dialect, 0); err != nil { // 0: the latest version
//		return nil, err
//	}
//	return &Store{Store: sqlstore.New(adapter, sqlstore.Options{Now: o.Now, GroupCommit: o.GroupCommit.Enabled(true)})}, nil
//
// The dialect differences are explicit and few: the binary column type
// ({{BYTES}} in migrations), the database-assigned integer key
// ({{SERIAL}}) and how the migration transaction is locked
// (Dialect.LockMigrations). Statements use $1-style placeholders (Querier)
// on both.
//
// With Options.GroupCommit, concurrent Claims and Completes share
// transactions through a commit queue (groupcommit.go says how, what a
// failure does to each op, and what cancellation means).
package sqlstore

import (
	"context"
	"errors"
)

// ErrNoRows is what an adapter's Row.Scan returns when there is no row.
var ErrNoRows = errors.New("sqlstore: no rows")

// Row is one result row.
type Row interface {
	Scan(dest ...any) error
}

// Rows is a result set.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Querier runs statements with $1-style placeholders.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (rowsAffected int64, err error)
	QueryRow(ctx context.Context, sql string, args ...any) Row
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
}

// DB is a connection pool that can run a write transaction.
type DB interface {
	Querier
	// InTx runs fn in one write transaction (SQLite: BEGIN IMMEDIATE),
	// committing when fn returns nil and rolling back otherwise.
	InTx(ctx context.Context, fn func(tx Querier) error) error
	Close() error
}

// LazyTxer is implemented by a DB that checkpoints its log on its own
// (SQLite's adapter): InTxLazy is InTx for a write whose commit need not
// hasten the next checkpoint (the audit writer's batches alone: what a
// crash may lose of them before they commit is already written down), so
// that a store whose only writes are those pays for fewer checkpoints.
type LazyTxer interface {
	InTxLazy(ctx context.Context, fn func(tx Querier) error) error
}

// Preparer is implemented by a DB that keeps prepared statements but
// prepares them only outside transactions (SQLite's adapter): Prepare
// prepares query on the pool, so that a transaction finds it ready. New
// prepares the statements that run only inside transactions (the audit
// trail's inserts of the commit queue).
type Preparer interface {
	Prepare(ctx context.Context, query string)
}

// Inserter is implemented by a Querier that reports the row ID of the
// last row an INSERT added (SQLite's adapter). There a multi-row INSERT
// into a table with an integer key the database assigns ({{SERIAL}}, or
// audit_log's row ID), the write lock held, assigns consecutive IDs in
// VALUES order, so the audit trail's INSERT needs no RETURNING, whose rows
// SQLite first collects in a temporary table; an audit block's row ID
// (its first entry's) is the one it reports.
type Inserter interface {
	Insert(ctx context.Context, sql string, args ...any) (rowsAffected, lastID int64, err error)
}

// Dialect holds what differs between SQL engines.
type Dialect struct {
	// Name is "sqlite" or "postgres".
	Name string
	// Bytes is the binary column type substituted for {{BYTES}}.
	Bytes string
	// Serial is the column definition substituted for {{SERIAL}}: an
	// integer primary key the database assigns, ascending and never
	// reused (SQLite: INTEGER PRIMARY KEY AUTOINCREMENT; PostgreSQL:
	// BIGSERIAL PRIMARY KEY).
	Serial string
	// LockMigrations, when set, runs first in the migration transaction to
	// serialise concurrent migrators (PostgreSQL: pg_advisory_xact_lock).
	LockMigrations string
}
