package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

func newStoreCmd() *cobra.Command {
	return groupCmd("store", "Create the store the gateway and the operator's commands share",
		newStoreInitCmd())
}

func newStoreInitCmd() *cobra.Command {
	var sf storeFlags
	cmd := &cobra.Command{
		Use:   "init [--store DSN | --config FILE]",
		Short: "Create the store (or say that it exists), at this build's schema version",
		Long: "Creates the store when there is none and prints what it created: for sqlite:PATH the folder (0700)\n" +
			"when it was missing and its parent exists, the file (0600) and the schema; for postgres://... the\n" +
			"tables, in the schema the URL's search_path selects. A store that exists is migrated to this build's\n" +
			"schema, and init says it exists and at which schema version (exit 0).\n\n" +
			"The operator's commands (approvals, runs, drift, trust, audit, connections, connect) never create a\n" +
			"store: `gatehouse serve` or this command does. `gatehouse tools` with a store creates it too.\n\n" +
			"The store is --store, else $GATEHOUSE_STORE, else the config's store, else\n" +
			"sqlite:.gatehouse/gatehouse.db in the working directory.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := sf.dsn()
			if err != nil {
				return err
			}
			return storeInit(cmd.Context(), cmd.OutOrStdout(), d)
		},
	}
	sf.add(cmd)
	return cmd
}

// storeInit opens the store d names if it exists, or creates it, and says
// which it did.
func storeInit(ctx context.Context, out io.Writer, d string) error {
	parsed, err := store.ParseDSN(d)
	if err != nil {
		return usagef("%v", err)
	}
	if parsed.Kind == store.KindMemory {
		return usagef("store init: a memory: store is not one to create: it lives and dies with the process that opens it (name sqlite:PATH or postgres://...)")
	}
	where := parsed.String()
	var abs string
	if parsed.Kind == store.KindSQLite {
		if abs, err = filepath.Abs(parsed.Path); err != nil {
			return err
		}
		where = "sqlite:" + abs
	}
	st, err := openStore(ctx, d, false)
	if err == nil {
		defer st.Close()
		v, err := schemaVersion(ctx, st)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "the store %s exists, at schema version %d: nothing created\n", where, v)
		return nil
	}
	if !errors.Is(err, store.ErrNoStore) {
		return err
	}
	var dirBefore, fileBefore bool
	if abs != "" {
		dirBefore, fileBefore = present(filepath.Dir(abs)), present(abs)
	}
	st, err = openStore(ctx, d, true)
	if err != nil {
		return err
	}
	defer st.Close()
	v, err := schemaVersion(ctx, st)
	if err != nil {
		return err
	}
	if abs != "" {
		if !dirBefore {
			fmt.Fprintf(out, "created the folder %s (%s)\n", filepath.Dir(abs), modeOf(filepath.Dir(abs)))
		}
		if !fileBefore {
			fmt.Fprintf(out, "created the file %s (%s)\n", abs, modeOf(abs))
		}
	}
	if pg, ok := st.(*postgres.Store); ok {
		var schema string
		if err := pg.DB().QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			return fmt.Errorf("the store was created, but its schema cannot be read: %w", err)
		}
		where += fmt.Sprintf(" (PostgreSQL schema %q)", schema)
	}
	fmt.Fprintf(out, "created the store %s, at schema version %d\n", where, v)
	return nil
}

// schemaVersion reads the store's schema version from its
// schema_migrations table.
func schemaVersion(ctx context.Context, st store.Store) (int64, error) {
	const q = `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`
	var v int64
	var err error
	switch s := st.(type) {
	case *sqlite.Store:
		err = s.SQLDB().QueryRowContext(ctx, q).Scan(&v)
	case *postgres.Store:
		err = s.DB().QueryRow(ctx, q).Scan(&v)
	default:
		return 0, fmt.Errorf("a %T store has no schema version", st)
	}
	if err != nil {
		return 0, fmt.Errorf("reading the store's schema version: %w", err)
	}
	return v, nil
}

func present(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// modeOf names path's permission bits ("mode 0700"), or says they cannot
// be read.
func modeOf(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "mode unknown: " + err.Error()
	}
	return fmt.Sprintf("mode %04o", fi.Mode().Perm())
}
