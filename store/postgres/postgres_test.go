package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/storetest"
	"github.com/gatehouse-dev/gatehouse/store/internal/storetest/audittest"
	"github.com/gatehouse-dev/gatehouse/store/internal/storetest/conntest"
	"github.com/gatehouse-dev/gatehouse/store/internal/storetest/sesstest"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
)

// testDSN returns $GATEHOUSE_TEST_POSTGRES or skips the test.
func testDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("GATEHOUSE_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("GATEHOUSE_TEST_POSTGRES is unset; skipping PostgreSQL store tests")
	}
	return dsn
}

// freshSchema creates a uniquely named schema, drops it at cleanup, and
// returns a pool config whose search_path is that schema, so parallel test
// packages sharing one database never collide.
func freshSchema(t testing.TB) (schema string, cfg func() *pgxpool.Config) {
	t.Helper()
	dsn := testDSN(t)
	b := make([]byte, 6)
	rand.Read(b)
	schema = "gh_store_test_" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to GATEHOUSE_TEST_POSTGRES: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("cleanup: drop schema %s: %v", schema, err)
		}
	})
	return schema, func() *pgxpool.Config {
		c, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		c.ConnConfig.RuntimeParams["search_path"] = schema
		return c
	}
}

func openFresh(t testing.TB, opts *store.Options) *postgres.Store {
	t.Helper()
	_, cfg := freshSchema(t)
	return openCfg(t, cfg(), opts)
}

func openCfg(t testing.TB, cfg *pgxpool.Config, opts *store.Options) *postgres.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := postgres.OpenConfig(ctx, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openFresh(t, nil) })
}

func TestConformancePowerDurability(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s := openFresh(t, &store.Options{Durability: store.DurabilityPower})
		var v string
		if err := s.DB().QueryRow(t.Context(), "SHOW synchronous_commit").Scan(&v); err != nil || v != "on" {
			t.Fatalf("synchronous_commit = %q, %v; want on", v, err)
		}
		return s
	})
}

// TestConformanceNoGroupCommit: the conformance suite with group commit
// off (on by default).
func TestConformanceNoGroupCommit(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return openFresh(t, &store.Options{GroupCommit: store.GroupCommitOff})
	})
}

func TestAuditConformance(t *testing.T) {
	audittest.Run(t, func(t *testing.T) store.AuditStore { return openFresh(t, nil) })
}

// TestConnectionConformance: the vault's rows, raced through two pools on
// one database (two replicas).
func TestConnectionConformance(t *testing.T) {
	conntest.Run(t, func(t *testing.T) (store.Store, store.Store) {
		_, cfg := freshSchema(t)
		return openCfg(t, cfg(), nil), openCfg(t, cfg(), nil)
	})
}

// TestSessionConformance: callers' sessions through two pools on one
// database (two replicas).
func TestSessionConformance(t *testing.T) {
	sesstest.Run(t, func(t *testing.T) (store.Store, store.Store) {
		_, cfg := freshSchema(t)
		return openCfg(t, cfg(), nil), openCfg(t, cfg(), nil)
	})
}

// TestAuditJournalConformance: entries linked in the store's transactions,
// with group commit of the journal off (the default) and on.
func TestAuditJournalConformance(t *testing.T) {
	for _, gc := range []store.GroupCommit{store.GroupCommitOff, store.GroupCommitOn} {
		t.Run(fmt.Sprintf("groupCommit=%v", gc), func(t *testing.T) {
			audittest.RunJournal(t, func(t *testing.T) store.AuditStore { return openFresh(t, &store.Options{GroupCommit: gc}) })
		})
	}
}
