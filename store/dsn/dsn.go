// Package dsn opens a store.Store from a data source name:
//
//	st, err := dsn.Open(ctx, store.DSNFromEnv(cfg.Store), nil)
//
// It lives apart from package store so that packages which only consume
// the store interfaces (durable, policy, server, ...) do not link SQLite and
// PostgreSQL drivers; only the binary that opens a store imports this one.
package dsn

import (
	"context"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/memory"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// Open parses dsn with store.ParseDSN and opens (and migrates) the store it
// names, creating it unless opts.MustExist is set. opts may be nil; a
// durability parameter in the DSN overrides opts.Durability. It does not
// consult $GATEHOUSE_STORE: pass store.DSNFromEnv(configured) when the
// environment should win.
//
// Errors wrap store.ErrInvalidDSN (with ErrEmptyDSN, ErrUnknownScheme or
// ErrMissingPath where one applies) for a DSN that does not parse,
// store.ErrUnavailable when the database cannot be opened or reached,
// store.ErrSchemaTooNew for a database migrated by a newer build, and
// store.ErrNoStore when opts.MustExist is set and the DSN names no
// Gatehouse store (memory: never does): then nothing was created. Errors
// never repeat a password.
func Open(ctx context.Context, dsn string, opts *store.Options) (store.Store, error) {
	d, err := store.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	o, err := store.ResolveOptions(d, opts)
	if err != nil {
		return nil, err
	}
	switch d.Kind {
	case store.KindMemory:
		if o.MustExist {
			return nil, fmt.Errorf("%w at memory: (a memory: store lives and dies with the process that opens it)", store.ErrNoStore)
		}
		return memory.New(&o)
	case store.KindSQLite:
		return sqlite.Open(ctx, d.Path, &o)
	case store.KindPostgres:
		return postgres.Open(ctx, d.URL, &o)
	}
	return nil, fmt.Errorf("%w: kind %q", store.ErrUnknownScheme, d.Kind)
}
