package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse-dev/gatehouse/internal/rawio"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/commitdelay"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
)

// Store is a store.Store on a PostgreSQL database.
type Store struct {
	*sqlstore.Store
	pool  *pgxpool.Pool
	chans string // chanPrefix of the store's schema
}

var _ store.Store = (*Store)(nil)

var dialect = sqlstore.Dialect{
	Name:           "postgres",
	Bytes:          "BYTEA",
	Serial:         "BIGSERIAL PRIMARY KEY",
	LockMigrations: `SELECT pg_advisory_xact_lock(hashtext('gatehouse/store/migrate:' || COALESCE(current_schema(), '')))`,
}

// defaultConnectTimeout bounds each connection attempt when the URL sets no
// connect_timeout.
const defaultConnectTimeout = 10 * time.Second

// Open connects to the database named by a postgres:// or postgresql:// URL
// and migrates its schema. opts may be nil. The URL may carry any libpq
// parameter (search_path=... included) and pgxpool's pool_* parameters; a
// durability=... parameter is not accepted here: pass Options.Durability
// (store.ParseDSN strips it).
func Open(ctx context.Context, url string, opts *store.Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx errors can quote the connection string; do not repeat it.
		return nil, fmt.Errorf("%w: postgres URL %s does not parse", store.ErrInvalidDSN, store.Redact(url))
	}
	return OpenConfig(ctx, cfg, opts)
}

// OpenConfig is Open with a pool configuration the caller built, for
// example to set TLS, ConnConfig.RuntimeParams["search_path"], pool limits
// or hooks such as AfterConnect (which are kept). opts may be nil.
//
// cfg must come from pgxpool.ParseConfig: a Config built by hand (or nil)
// is refused with store.ErrInvalid. cfg itself is not modified; OpenConfig
// works on cfg.Copy(), on which it sets
//   - MaxConns to opts.MaxConns when that is non-zero (otherwise cfg's own
//     MaxConns stands: pool_max_conns, or pgxpool's default);
//   - ConnConfig.ConnectTimeout to defaultConnectTimeout when it is zero;
//   - ConnConfig.RuntimeParams["synchronous_commit"] to "on" when
//     opts.Durability is store.DurabilityPower;
//   - ConnConfig.DialFunc to one that calls the DialFunc cfg has and reads
//     and writes the TCP connection it returns with raw system calls on
//     Linux (rawDial).
//
// Errors wrap store.ErrUnavailable when the database cannot be reached,
// store.ErrSchemaTooNew for a database migrated by a newer build, and
// store.ErrNoStore when opts.MustExist is set and the schema the tables
// would be created in (the first of the search_path that exists) has no
// schema_migrations table: then nothing was created.
func OpenConfig(ctx context.Context, cfg *pgxpool.Config, opts *store.Options) (*Store, error) {
	if cfg == nil || cfg.ConnConfig == nil {
		return nil, fmt.Errorf("%w: postgres: nil pool configuration (use pgxpool.ParseConfig)", store.ErrInvalid)
	}
	o, err := store.ResolveOptions(store.DSN{}, opts)
	if err != nil {
		return nil, err
	}
	if o.MaxConns > math.MaxInt32 {
		return nil, fmt.Errorf("%w: postgres: MaxConns %d is too large", store.ErrInvalid, o.MaxConns)
	}
	cfg = cfg.Copy()
	if o.MaxConns != 0 {
		cfg.MaxConns = int32(o.MaxConns)
		if cfg.MinConns > cfg.MaxConns {
			cfg.MinConns = cfg.MaxConns
		}
		if cfg.MinIdleConns > cfg.MaxConns {
			cfg.MinIdleConns = cfg.MaxConns
		}
	}
	cc := cfg.ConnConfig
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = defaultConnectTimeout
	}
	if cc.DialFunc != nil {
		cc.DialFunc = rawDial(cc.DialFunc)
	}
	if o.Durability == store.DurabilityPower {
		if cc.RuntimeParams == nil {
			cc.RuntimeParams = map[string]string{}
		}
		cc.RuntimeParams["synchronous_commit"] = "on"
	}
	where := fmt.Sprintf("postgres %s@%s:%d/%s", cc.User, cc.Host, cc.Port, cc.Database)
	pool, err := newPool(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("%w: %s: %w", store.ErrUnavailable, where, err)
	}
	if o.MustExist {
		if err := probe(ctx, pool, where); err != nil {
			pool.Close()
			return nil, err
		}
	}
	db := poolDB{pool}
	if err := sqlstore.Migrate(ctx, db, dialect, 0); err != nil {
		pool.Close()
		if errors.Is(err, store.ErrSchemaTooNew) {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		return nil, fmt.Errorf("store: %s: %w", where, err)
	}
	// The schema the tables are in (the first of the search_path that
	// exists, as Migrate created them) marks the messenger's channels.
	var schema string
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("%w: %s: reading the current schema: %w", store.ErrUnavailable, where, err)
	}
	return &Store{Store: sqlstore.New(db, sqlstore.Options{Now: o.Now, GroupCommit: o.GroupCommit.Enabled(true), Delay: commitdelay.Defaults()}),
		pool: pool, chans: chanPrefix(schema)}, nil
}

// probe checks that the schema Migrate would create its tables in holds
// Gatehouse's schema_migrations table, creating nothing.
func probe(ctx context.Context, pool *pgxpool.Pool, where string) error {
	var schema *string
	var found bool
	err := pool.QueryRow(ctx, `SELECT current_schema(), EXISTS (
		SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relname = 'schema_migrations' AND c.relkind IN ('r', 'p'))`).Scan(&schema, &found)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s: looking for the schema_migrations table: %w", store.ErrUnavailable, where, err)
	case schema == nil:
		return fmt.Errorf("%w at %s (no schema of its search_path exists)", store.ErrNoStore, where)
	case !found:
		return fmt.Errorf("%w at %s (schema %q has no schema_migrations table)", store.ErrNoStore, where, *schema)
	}
	return nil
}

// rawDial wraps dial so that a TCP connection it makes to the server is
// read and written with raw system calls (internal/rawio): a store's
// round trips no longer wake the runtime's monitor thread, which a
// gateway that goes idle between calls paid on each (docs/BENCHMARKS.md,
// issue 36 item 5). pgx sees a net.Conn as before (TLS, when the URL
// asks for it, is set up over it); a Unix socket, a connection of
// another kind the caller's own DialFunc returns, or a platform rawio
// does not support is returned as dialed.
func rawDial(dial pgconn.DialFunc) pgconn.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return c, err
		}
		if tc, ok := c.(*net.TCPConn); ok {
			if rc, err := rawio.New(tc); err == nil {
				return rc, nil
			}
		}
		return c, nil
	}
}

// newPool is pgxpool.NewWithConfig, with its panic on a Config that
// pgxpool.ParseConfig did not create turned into store.ErrInvalid. The
// panic comes before the pool starts anything.
func newPool(ctx context.Context, cfg *pgxpool.Config) (p *pgxpool.Pool, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("%w: %v (use pgxpool.ParseConfig)", store.ErrInvalid, r)
		}
	}()
	return pgxpool.NewWithConfig(ctx, cfg)
}
