package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
)

// tablesIn returns the names of the tables (and sequences, views...) in
// schema, and whether the schema exists.
func tablesIn(t *testing.T, schema string) ([]string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var found bool
	if err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1)`, schema).Scan(&found); err != nil {
		t.Fatal(err)
	}
	rows, err := c.Query(ctx, `SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 ORDER BY 1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names, found
}

// TestMustExistEmptySchema: MustExist on a schema without Gatehouse's
// tables is refused with ErrNoStore naming the schema, and the schema is
// still empty afterwards; a schema holding another application's tables
// is refused the same and keeps only them. Opened without MustExist, the
// schema gets the store, which MustExist then opens.
func TestMustExistEmptySchema(t *testing.T) {
	schema, cfg := freshSchema(t)
	ctx := t.Context()
	_, err := postgres.OpenConfig(ctx, cfg(), &store.Options{MustExist: true})
	if !errors.Is(err, store.ErrNoStore) {
		t.Fatalf("MustExist on an empty schema = %v, want ErrNoStore", err)
	}
	if want := `(schema "` + schema + `" has no schema_migrations table)`; !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want it to say %s", err, want)
	}
	if names, _ := tablesIn(t, schema); len(names) != 0 {
		t.Fatalf("MustExist created %v in %s", names, schema)
	}

	other, ocfg := freshSchema(t)
	c, err := pgx.Connect(ctx, testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, "CREATE TABLE "+other+".invoices (id int)"); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.OpenConfig(ctx, ocfg(), &store.Options{MustExist: true}); !errors.Is(err, store.ErrNoStore) {
		t.Fatalf("MustExist on another application's schema = %v, want ErrNoStore", err)
	}
	if names, _ := tablesIn(t, other); strings.Join(names, ",") != "invoices" {
		t.Fatalf("%s holds %v after MustExist, want only invoices", other, names)
	}

	openCfg(t, cfg(), nil).Close()
	st := openCfg(t, cfg(), &store.Options{MustExist: true})
	if _, err := st.IncrBy(ctx, "k", 1, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
}

// TestMustExistMissingSchema: a search_path naming only a schema that does
// not exist has nowhere a store could be: ErrNoStore, and no schema is
// created. Through postgres.Open and a URL, as the CLI opens it.
func TestMustExistMissingSchema(t *testing.T) {
	u, err := url.Parse(testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	schema := "gh_store_missing_" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	_, err = postgres.Open(t.Context(), u.String(), &store.Options{MustExist: true})
	if !errors.Is(err, store.ErrNoStore) || !strings.Contains(err.Error(), "(no schema of its search_path exists)") {
		t.Fatalf("MustExist with a missing schema = %v, want ErrNoStore", err)
	}
	if names, found := tablesIn(t, schema); found || len(names) != 0 {
		t.Fatalf("schema %s exists (%v) after MustExist, with %v", schema, found, names)
	}
}
