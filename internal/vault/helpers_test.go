package vault_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/internal/vault"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// backend is one real database: a SQLite file or a PostgreSQL schema.
type backend struct {
	name string
	// open returns a new handle (a new pool) on the database.
	open func(t *testing.T) store.Store
	// exec runs SQL on the database with a raw connection (no store).
	exec func(t *testing.T, q string, args ...any)
	// dump returns every column of every row of the vault's tables as the
	// database gives them (and, for SQLite, the raw bytes of its files).
	dump func(t *testing.T) []byte
}

// each runs f on SQLite and on PostgreSQL (skipped when
// GATEHOUSE_TEST_POSTGRES is unset).
func each(t *testing.T, f func(t *testing.T, b backend)) {
	t.Run("sqlite", func(t *testing.T) { f(t, sqliteBackend(t)) })
	t.Run("postgres", func(t *testing.T) {
		f(t, pgBackend(t, pgtest.Schema(t, "vault_test", "the vault on PostgreSQL")))
	})
}

var vaultTables = []string{"connections", "connection_leases", "connect_flows"}

func sqliteBackend(t *testing.T) backend {
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	raw := func(t *testing.T) *sql.DB {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	return backend{
		name: "sqlite",
		open: func(t *testing.T) store.Store {
			s, err := sqlite.Open(t.Context(), path, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		exec: func(t *testing.T, q string, args ...any) {
			if _, err := raw(t).Exec(q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		},
		dump: func(t *testing.T) []byte {
			db := raw(t)
			var out []byte
			for _, tb := range vaultTables {
				rows, err := db.Query("SELECT * FROM " + tb)
				if err != nil {
					t.Fatal(err)
				}
				cols, _ := rows.Columns()
				for rows.Next() {
					vals := make([]any, len(cols))
					ptrs := make([]any, len(cols))
					for i := range vals {
						ptrs[i] = &vals[i]
					}
					if err := rows.Scan(ptrs...); err != nil {
						t.Fatal(err)
					}
					for _, v := range vals {
						out = appendVal(out, v)
					}
				}
				rows.Close()
			}
			for _, f := range []string{path, path + "-wal"} {
				b, _ := readFile(f)
				out = append(out, b...)
			}
			return out
		},
	}
}

func pgBackend(t *testing.T, dsn string) backend {
	conn := func(t *testing.T) *pgx.Conn {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	return backend{
		name: "postgres",
		open: func(t *testing.T) store.Store {
			s, err := postgres.Open(t.Context(), dsn, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		exec: func(t *testing.T, q string, args ...any) {
			if _, err := conn(t).Exec(t.Context(), q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		},
		dump: func(t *testing.T) []byte {
			c := conn(t)
			var out []byte
			for _, tb := range vaultTables {
				// Every column, as the server gives it (bytea as bytes),
				// and the row's text form.
				rows, err := c.Query(t.Context(), "SELECT *, t::text FROM "+tb+" t")
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					vals, err := rows.Values()
					if err != nil {
						t.Fatal(err)
					}
					for _, v := range vals {
						out = appendVal(out, v)
					}
				}
				rows.Close()
			}
			return out
		},
	}
}

func appendVal(out []byte, v any) []byte {
	switch v := v.(type) {
	case []byte:
		out = append(out, v...)
	case string:
		out = append(out, v...)
	default:
		out = append(out, []byte(strings.TrimSpace(strings.ReplaceAll(fmtAny(v), "\n", " ")))...)
	}
	return append(out, '\n')
}

func newKey(t *testing.T) []byte {
	k := make([]byte, vault.KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func keys(t *testing.T, current, previous []byte) *vault.Keys {
	ks, err := vault.NewKeys(current, previous)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// secretSet is a token set whose secrets are distinctive strings.
func secretSet(tag string) *upstream.TokenSet {
	return &upstream.TokenSet{
		AccessToken:  "AT-" + tag + "-4f1c9a7e2b",
		TokenType:    "Bearer",
		RefreshToken: "RT-" + tag + "-8d3e6b0c51",
		Expiry:       time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC),
		Scopes:       []string{"mcp", "offline_access"},
		TokenURL:     "https://as.example/token",
		ClientID:     "gatehouse",
		ClientSecret: "CS-" + tag + "-77aa01",
	}
}

func secretsOf(s *upstream.TokenSet) []string {
	return []string{s.AccessToken, s.RefreshToken, s.ClientSecret}
}
