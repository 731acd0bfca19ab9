package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
	"github.com/gatehouse-dev/gatehouse/store/internal/storetest"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
)

func connect(t *testing.T, cfg *pgx.ConnConfig) *pgx.Conn {
	t.Helper()
	c, err := pgx.ConnectConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// columnsOf describes every column of every table in schema.
func columnsOf(t *testing.T, c *pgx.Conn, schema string) (desc string, tables []string) {
	t.Helper()
	rows, err := c.Query(t.Context(), `SELECT table_name, column_name, data_type, is_nullable, COALESCE(column_default, '')
FROM information_schema.columns WHERE table_schema = $1 ORDER BY table_name, ordinal_position`, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	seen := map[string]bool{}
	for rows.Next() {
		var tb, col, typ, null, dflt string
		if err := rows.Scan(&tb, &col, &typ, &null, &dflt); err != nil {
			t.Fatal(err)
		}
		seen[tb] = true
		// A serial's default names its sequence, with the schema when it
		// is not on the connection's search_path.
		dflt = strings.ReplaceAll(dflt, schema+".", "")
		fmt.Fprintln(&b, tb, col, typ, null, dflt)
	}
	return b.String(), slices.Sorted(maps.Keys(seen))
}

// snapshot dumps the schema's columns and every row of every table.
func snapshot(t *testing.T, c *pgx.Conn, schema string) string {
	t.Helper()
	desc, tables := columnsOf(t, c, schema)
	var b strings.Builder
	b.WriteString(desc)
	for _, tb := range tables {
		rs, err := c.Query(t.Context(), `SELECT * FROM `+schema+`.`+tb+` ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		for rs.Next() {
			vals, err := rs.Values()
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&b, tb, vals)
		}
		rs.Close()
	}
	return b.String()
}

func TestMigrateFromV1(t *testing.T) {
	ctx := t.Context()
	schema, cfg := freshSchema(t)
	fixture, err := os.ReadFile("testdata/v1.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connect(t, cfg().ConnConfig).Exec(ctx, string(fixture)); err != nil {
		t.Fatal(err)
	}
	s := openCfg(t, cfg(), nil)
	bank, err := s.GetServer(ctx, "acme/bank")
	if err != nil {
		t.Fatal(err)
	}
	if bank.Name != "bank" || bank.URL != "https://bank.example/mcp" || string(bank.Catalogue) != `{"tools":[{"name":"transfer"}]}` ||
		bank.UpdatedAt.UnixMilli() != 1767225600123 || bank.BaselineVersion != 0 {
		t.Fatalf("v1 row after migration = %+v", bank)
	}
	if local, err := s.GetServer(ctx, "acme/local"); err != nil || local.Catalogue != nil {
		t.Fatalf("v1 stdio row = %+v, %v", local, err)
	}
	if n, err := s.SaveBaseline(ctx, "acme/bank", store.Baseline{{Kind: store.KindTool, Name: "transfer"}: {Value: "fp"}}); err != nil || n != 1 {
		t.Fatalf("SaveBaseline on migrated db = %d, %v", n, err)
	}
	var versions []int64
	rows, err := s.DB().Query(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v int64
		rows.Scan(&v)
		versions = append(versions, v)
	}
	rows.Close()
	if !reflect.DeepEqual(versions, allVersions()) {
		t.Fatalf("schema versions %v", versions)
	}
	// Same columns as a fresh schema.
	freshName, freshCfg := freshSchema(t)
	openCfg(t, freshCfg(), nil)
	c := connect(t, cfg().ConnConfig)
	got, _ := columnsOf(t, c, schema)
	want, _ := columnsOf(t, c, freshName)
	if got != want {
		t.Fatalf("migrated schema differs from fresh:\n%s\n---\n%s", got, want)
	}
}

func TestSchemaTooNew(t *testing.T) {
	ctx := t.Context()
	schema, cfg := freshSchema(t)
	s := openCfg(t, cfg(), nil)
	if err := s.PutServer(ctx, store.Server{ID: "a", Name: "a", Type: "stdio"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	c := connect(t, cfg().ConnConfig)
	if _, err := c.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, 'from_the_future', 1)`, sqlstore.LatestVersion()+1); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, c, schema)
	_, err := postgres.OpenConfig(ctx, cfg(), nil)
	if !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("Open of a newer schema = %v, want ErrSchemaTooNew", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("version %d", sqlstore.LatestVersion()+1)) || !strings.Contains(err.Error(), fmt.Sprintf("up to %d", sqlstore.LatestVersion())) {
		t.Fatalf("error does not name the versions: %v", err)
	}
	if after := snapshot(t, c, schema); after != before {
		t.Fatalf("a refused Open changed the database:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestTwoPools: two pools open one fresh schema at once (both migrate),
// then race the same claims and counter.
func TestTwoPools(t *testing.T) {
	_, cfg := freshSchema(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	stores := make([]*postgres.Store, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() { stores[i], errs[i] = postgres.OpenConfig(ctx, cfg(), &store.Options{MaxConns: 4}) })
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		defer stores[i].Close()
	}
	const keys, incs = 200, 200
	results := make([]storetest.ContentionResult, 2)
	for i := range 2 {
		wg.Go(func() { results[i], errs[i] = storetest.Contend(ctx, stores[i], fmt.Sprintf("pool%d", i), keys, incs) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	storetest.CheckContention(t, stores[0], results, keys, incs)
	var migrations int
	if err := stores[0].DB().QueryRow(ctx, `SELECT COUNT(*) FROM schema_migrations`).Scan(&migrations); err != nil || migrations != int(sqlstore.LatestVersion()) {
		t.Fatalf("schema_migrations rows = %d, %v", migrations, err)
	}
}

func TestClosedStore(t *testing.T) {
	s := openFresh(t, nil)
	s.Close()
	if _, err := s.ListServers(t.Context()); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}

func BenchmarkClaimComplete(b *testing.B) {
	for _, d := range []store.Durability{store.DurabilityProcess, store.DurabilityPower} {
		b.Run(string(d), func(b *testing.B) {
			s := openFresh(b, &store.Options{Durability: d})
			storetest.BenchClaimComplete(b, s, 1)
		})
	}
}

// BenchmarkDrift: the drift record on PostgreSQL (storetest.BenchDrift).
func BenchmarkDrift(b *testing.B) {
	storetest.BenchDrift(b, openFresh(b, nil))
}
