package sqlstore

import "context"

// Reading rows.
//
// A result set holds what the adapter gave it for its statement: a
// connection of PostgreSQL's pool, or one of SQLite's read slots. Those
// are few (store.Options.MaxConns, one at the smallest), and a holder that
// waited for a second one while keeping the first could wait for ever:
// with as many callers as there are connections, each holding one and
// waiting for another, none ever gets its second (the gateway's start-up
// hung for its whole deadline that way, every server's OpenObservations
// holding its rows while it asked for the server's baseline version).
//
// So the rule: a store method holds at most one of the pool's resources at
// a time, and holds it only inside the adapter call that took it. Rows are
// read with each or collect, which close them before returning; nothing
// runs another statement, or a method of the Store, while a result set is
// open; and a transaction's function (InTx) uses only its own Querier,
// never s.db or another method of the Store. TestNoNestedStatements holds
// the code to that rule, and the storetest suite runs every store with a
// pool of one connection, where breaking it deadlocks at once.

// each runs query on q and calls scan for each row, then closes the rows:
// it returns the query's error, scan's first error (the rows are closed
// then too) or the rows' error. scan must not run statements of its own.
func each(ctx context.Context, q Querier, scan func(Rows) error, query string, args ...any) error {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// collect runs query on q and returns scan's value of each row, in order,
// in a slice that is not nil (empty when there are no rows); errors as
// each.
func collect[T any](ctx context.Context, q Querier, scan func(Row) (T, error), query string, args ...any) ([]T, error) {
	out := []T{}
	err := each(ctx, q, func(r Rows) error {
		v, err := scan(r)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	}, query, args...)
	if err != nil {
		return nil, err
	}
	return out, nil
}
