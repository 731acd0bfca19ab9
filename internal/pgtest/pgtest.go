// Package pgtest gives a test its own PostgreSQL schema on the server named
// by $GATEHOUSE_TEST_POSTGRES, so packages that test against one database
// in parallel never see each other's tables.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env names the environment variable holding the PostgreSQL DSN for tests.
const Env = "GATEHOUSE_TEST_POSTGRES"

// Schema creates a fresh schema named prefix_<random hex>, drops it when
// the test ends, and returns the DSN of $GATEHOUSE_TEST_POSTGRES with its
// search_path set to that schema. When the variable is unset it skips the
// test, saying what is skipped (what) and how to run it.
func Schema(t testing.TB, prefix, what string) string {
	t.Helper()
	base := os.Getenv(Env)
	if base == "" {
		t.Skipf("%s is unset: skipping %s (set it to a PostgreSQL DSN; .ci/run starts one)", Env, what)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", Env, err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := prefix + "_" + hex.EncodeToString(b)
	exec(t, base, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { exec(t, base, "DROP SCHEMA "+schema+" CASCADE") })
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func exec(t testing.TB, dsn, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to %s: %v", Env, err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
