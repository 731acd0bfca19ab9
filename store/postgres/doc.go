// Package postgres is a store.Store on PostgreSQL through
// github.com/jackc/pgx/v5, for several processes sharing state.
//
//	st, err := postgres.Open(ctx, "postgres://gatehouse@db.internal:5432/gatehouse?sslmode=verify-full", nil)
//	if err != nil { ... }
//	defer st.Close()
//
// Every replica opens the same database; Open migrates its schema (see
// below). OpenConfig takes a *pgxpool.Config instead of a URL.
//
// Connections are pooled by github.com/jackc/pgx/v5/pgxpool. The URL given
// to Open may carry pgxpool's pool_* parameters (pool_max_conns,
// pool_max_conn_idle_time, ...) as well as any libpq parameter;
// store.Options.MaxConns, when non-zero, overrides pool_max_conns. The pool
// runs one health-check goroutine, which Store.Close stops. A TCP
// connection the pool dials (with ConnConfig.DialFunc, the caller's when
// OpenConfig's configuration sets one) is read and written with raw
// system calls on Linux: the same reads and writes, without waking the Go
// runtime's monitor thread on every round trip; a connection of another
// kind is used as dialed.
//
// Durability "power" sets synchronous_commit=on on every connection (as a
// startup parameter), so a commit is acknowledged only once its WAL is
// flushed on the server. Durability "process" (the default) leaves the
// server's own setting alone; PostgreSQL's default is on, and a server
// configured with synchronous_commit=off may lose its last commits when the
// database server itself crashes (never when our process does).
//
// Group commit of journal Claims and Completes (store.Options.GroupCommit)
// is on by default here, as on SQLite: a batch of concurrent Claims and
// Completes (and the audit entries committed with them) is one transaction
// sent in one round trip (pgx's pipeline mode: BEGIN, one statement per
// op, the entries' INSERT and COMMIT together), where one transaction per
// op costs a round trip and a commit each. Measured at 8 concurrent
// callers (BenchmarkKeyedCall): 1.5 round trips a keyed call instead of
// 2.4, and a quarter less of the server's CPU. A lone caller runs alone,
// never delayed. store.GroupCommitOff turns it off.
//
// Migrations run in one transaction under pg_advisory_xact_lock keyed by the
// current schema, so several processes may start at once.
package postgres
