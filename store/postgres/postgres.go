// Package postgres is a store.Store on PostgreSQL through
// github.com/jackc/pgx/v5, for several processes sharing state.
//
// Durability "power" sets synchronous_commit=on on every connection, so a
// commit is acknowledged only once its WAL is flushed on the server.
// Durability "process" (the default) leaves the server's own setting alone;
// PostgreSQL's default is on, and a server configured with
// synchronous_commit=off may lose its last commits when the database server
// itself crashes (never when our process does).
//
// Migrations run in one transaction under pg_advisory_xact_lock keyed by the
// current schema, so several processes may start at once.
//
// Connections are pooled by a small pool of pgx.Conn (pool.go): pgxpool
// needs github.com/jackc/puddle/v2 listed in go.mod, which this module does
// not list yet.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
)

// Store is a store.Store on a PostgreSQL database.
type Store struct {
	*sqlstore.Store
	pool *connPool
}

var _ store.Store = (*Store)(nil)

var dialect = sqlstore.Dialect{
	Name:           "postgres",
	Bytes:          "BYTEA",
	LockMigrations: `SELECT pg_advisory_xact_lock(hashtext('gatehouse/store/migrate:' || COALESCE(current_schema(), '')))`,
}

// DefaultConnectTimeout bounds each connection attempt when the URL sets no
// connect_timeout.
const DefaultConnectTimeout = 10 * time.Second

// DefaultMaxConns is the pool size when Options.MaxConns is zero.
const DefaultMaxConns = 8

// Open connects to the database named by a postgres:// or postgresql:// URL
// and migrates its schema. opts may be nil. The URL may carry any libpq
// parameter (search_path=... included); a durability=... parameter is not
// accepted here: pass Options.Durability (store.ParseDSN strips it).
func Open(ctx context.Context, url string, opts *store.Options) (*Store, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		// pgx errors can quote the connection string; do not repeat it.
		return nil, fmt.Errorf("%w: postgres URL %s does not parse", store.ErrInvalidDSN, store.Redact(url))
	}
	return OpenConfig(ctx, cfg, opts)
}

// OpenConfig is Open with a connection configuration the caller built (for
// example with RuntimeParams["search_path"] or TLS). cfg is modified.
func OpenConfig(ctx context.Context, cfg *pgx.ConnConfig, opts *store.Options) (*Store, error) {
	o, err := store.ResolveOptions(store.DSN{}, opts)
	if err != nil {
		return nil, err
	}
	if o.Durability == store.DurabilityPower {
		if cfg.RuntimeParams == nil {
			cfg.RuntimeParams = map[string]string{}
		}
		cfg.RuntimeParams["synchronous_commit"] = "on"
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	maxConns := o.MaxConns
	if maxConns == 0 {
		maxConns = DefaultMaxConns
	}
	where := fmt.Sprintf("postgres %s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
	pool := newConnPool(cfg, maxConns)
	if err := pool.ping(ctx); err != nil {
		pool.close()
		return nil, fmt.Errorf("%w: %s: %w", store.ErrUnavailable, where, err)
	}
	if err := sqlstore.Migrate(ctx, pool, dialect, 0); err != nil {
		pool.close()
		if errors.Is(err, store.ErrSchemaTooNew) {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		return nil, fmt.Errorf("store: %s: %w", where, err)
	}
	return &Store{Store: sqlstore.New(pool, o.Now), pool: pool}, nil
}
