package sqlstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migration is one numbered schema step.
type Migration struct {
	Version int64
	Name    string
	SQL     string
}

// Migrations returns the embedded migrations in order.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("sqlstore: migration file %q is not NNNN_name.sql", name)
		}
		b, err := migrationFS.ReadFile(path.Join("migrations", name))
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: strings.TrimSuffix(name, ".sql"), SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != int64(i+1) {
			return nil, fmt.Errorf("sqlstore: migration %q out of sequence (want version %d)", m.Name, i+1)
		}
	}
	return out, nil
}

// LatestVersion is the schema version this build migrates to.
func LatestVersion() int64 {
	ms, err := Migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// Statements splits a migration into statements for d: comments dropped,
// {{BYTES}} and {{SERIAL}} substituted, split at semicolons that end a
// line. A comment line "-- only NAME" makes the statements after it, up to
// a line "-- every dialect" or the end, those of the dialect NAME alone
// (Dialect.Name): the others skip them.
func Statements(d Dialect, sql string) []string {
	var out []string
	var cur strings.Builder
	skip := false
	for line := range strings.SplitSeq(sql, "\n") {
		t := strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(t, "-- only "); ok {
			skip = strings.TrimSpace(name) != d.Name
			continue
		}
		if t == "-- every dialect" {
			skip = false
			continue
		}
		if t == "" || strings.HasPrefix(t, "--") || skip {
			continue
		}
		cur.WriteString(strings.NewReplacer("{{BYTES}}", d.Bytes, "{{SERIAL}}", d.Serial).Replace(line))
		cur.WriteByte('\n')
		if strings.HasSuffix(t, ";") {
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    BIGINT PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at BIGINT NOT NULL
)`

// Migrate brings the schema to upTo (0 = latest) in one transaction. Two
// processes migrating at once serialise (SQLite: BEGIN IMMEDIATE;
// PostgreSQL: an advisory transaction lock); the second sees the work done.
// A database whose version is newer than this build knows fails with
// store.ErrSchemaTooNew and is left unchanged.
func Migrate(ctx context.Context, db DB, d Dialect, upTo int64) error {
	ms, err := Migrations()
	if err != nil {
		return err
	}
	latest := ms[len(ms)-1].Version
	if upTo == 0 {
		upTo = latest
	}
	return db.InTx(ctx, func(tx Querier) error {
		if d.LockMigrations != "" {
			if _, err := tx.Exec(ctx, d.LockMigrations); err != nil {
				return fmt.Errorf("store: lock for migration: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, createMigrationsTable); err != nil {
			return fmt.Errorf("store: create schema_migrations: %w", err)
		}
		var cur int64
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&cur); err != nil {
			return fmt.Errorf("store: read schema version: %w", err)
		}
		if cur > latest {
			return fmt.Errorf("%w: the database is at schema version %d, this build knows versions up to %d; upgrade gatehouse (nothing was changed)", store.ErrSchemaTooNew, cur, latest)
		}
		now := time.Now().UnixMilli()
		for _, m := range ms {
			if m.Version <= cur || m.Version > upTo {
				continue
			}
			for _, stmt := range Statements(d, m.SQL) {
				if strings.Contains(stmt, "{{") {
					return fmt.Errorf("store: migration %s: the %q dialect leaves a template unfilled in %q", m.Name, d.Name, stmt)
				}
				if _, err := tx.Exec(ctx, stmt); err != nil {
					return fmt.Errorf("store: migration %s: %w", m.Name, err)
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`, m.Version, m.Name, now); err != nil {
				return fmt.Errorf("store: record migration %s: %w", m.Name, err)
			}
		}
		return nil
	})
}
