package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"sync"
)

// maxCachedStmts bounds the prepared statements a store keeps. The store's
// statements are constant strings from its own code (a few dozen); one
// built at run time past the bound is run unprepared.
const maxCachedStmts = 128

// stmtCache keeps one prepared *sql.Stmt per query text for the life of
// the store. modernc.org/sqlite compiles a statement's SQL on every
// Exec/Query of the pool (its parser is Go translated from C, about a
// third of a keyed call's journal cost); a prepared *sql.Stmt is compiled
// once per connection and reused (on the pool, database/sql re-prepares it
// on a connection that lacks it; the writer's cache prepares on its one
// connection, transactions included).
type stmtCache struct {
	db sqlHandle

	mu     sync.RWMutex
	stmts  map[string]*sql.Stmt
	closed bool
}

// get returns the prepared statement of query, preparing it on first use,
// or nil when it is not cached (the cache is full or closed, or preparing
// failed: the caller runs the query unprepared, and any error in it is
// then reported by that run).
func (c *stmtCache) get(ctx context.Context, query string) *sql.Stmt {
	if st := c.peek(query); st != nil {
		return st
	}
	if !dml(query) || c.full() {
		return nil
	}
	// Prepared without the lock: preparing waits for a connection of the
	// pool, and a transaction holding one may meanwhile peek at the cache.
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.stmts[query]; ok { // prepared meanwhile by another call
		_ = st.Close()
		return prev
	}
	if c.closed || len(c.stmts) >= maxCachedStmts {
		_ = st.Close()
		return nil
	}
	if c.stmts == nil {
		c.stmts = make(map[string]*sql.Stmt)
	}
	c.stmts[query] = st
	return st
}

// full reports whether the cache takes no more statements.
func (c *stmtCache) full() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.closed || len(c.stmts) >= maxCachedStmts
}

// peek returns the prepared statement of query if it is cached, else nil.
func (c *stmtCache) peek(query string) *sql.Stmt {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.stmts[query]
}

// dml reports whether query is a SELECT, INSERT, UPDATE, DELETE or WITH:
// the statements worth keeping. Migrations' DDL runs once and is never
// cached (it would fill the cache).
func dml(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n")
	for _, kw := range []string{"SELECT", "INSERT", "UPDATE", "DELETE", "WITH"} {
		if len(q) >= len(kw) && strings.EqualFold(q[:len(kw)], kw) {
			return true
		}
	}
	return false
}

// sqlHandle is what a stmtCache prepares on and runs unprepared
// statements on: the pool (*sql.DB) or the writer's connection
// (*sql.Conn).
type sqlHandle interface {
	sqlQuerier
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// writes reports whether query is an INSERT, UPDATE, DELETE or REPLACE
// (with or without RETURNING): a statement for the writer's connection.
// A write inside WITH is not recognised, and none is used.
func writes(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n")
	for _, kw := range []string{"INSERT", "UPDATE", "DELETE", "REPLACE"} {
		if len(q) >= len(kw) && strings.EqualFold(q[:len(kw)], kw) {
			return true
		}
	}
	return false
}

// close closes every cached statement; later gets return nil.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, st := range c.stmts {
		_ = st.Close()
	}
	c.stmts = nil
}

// cachedQuerier runs statements through the cache: on the pool, or on
// the writer's connection, inside its transaction when inTx is set.
type cachedQuerier struct {
	c    *stmtCache
	inTx bool
}

// stmt returns the statement to run query with, or nil to run it
// unprepared. Inside a transaction only a statement already prepared is
// used: the commit queue's statements are prepared at Open (Prepare) or by
// their first run outside one, and a statement the store runs only once
// (a migration's) is not worth keeping.
func (q cachedQuerier) stmt(ctx context.Context, query string) *sql.Stmt {
	if q.inTx {
		return q.c.peek(query)
	}
	return q.c.get(ctx, query)
}

func (q cachedQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := q.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return q.c.db.ExecContext(ctx, query, args...)
}

func (q cachedQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := q.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return q.c.db.QueryRowContext(ctx, query, args...)
}

func (q cachedQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := q.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return q.c.db.QueryContext(ctx, query, args...)
}
