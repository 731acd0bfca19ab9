package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/effectserver"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/memory"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// envRole selects what a re-executed test binary does.
const envRole = "DURABLE_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(envRole) {
	case "effectserver":
		if err := effectserver.Main(nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "crashchild":
		os.Exit(crashChild())
	case "racechild":
		os.Exit(raceChild())
	case "restartchild":
		os.Exit(restartChild())
	}
	goleak.VerifyTestMain(m)
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// storeKind is one store under test.
type storeKind struct {
	name string
	open func(t testing.TB) (store.Store, string) // the store and a DSN another process can open
}

func storeKinds(t testing.TB, withMemory bool) []storeKind {
	var ks []storeKind
	if withMemory {
		ks = append(ks, storeKind{"memory", func(t testing.TB) (store.Store, string) {
			s, err := memory.New(nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s, ""
		}})
	}
	ks = append(ks, storeKind{"sqlite", func(t testing.TB) (store.Store, string) {
		path := filepath.Join(t.TempDir(), "journal.db")
		s, err := sqlite.Open(ctxT(t), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, "sqlite:" + path
	}})
	ks = append(ks, storeKind{"postgres", func(t testing.TB) (store.Store, string) {
		dsn := pgSchema(t)
		// Group commit on (the default on both SQL stores), as openDSN.
		s, err := postgres.Open(ctxT(t), dsn, &store.Options{GroupCommit: store.GroupCommitOn})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, dsn
	}})
	return ks
}

// pgSchema creates a schema of its own for one test and returns a URL
// whose search_path selects it; the schema is dropped at cleanup.
func pgSchema(t testing.TB) string {
	return pgtest.Schema(t, "durable", "the journal's PostgreSQL tests")
}

// openDSN opens a DSN made by storeKinds (in a child process).
func openDSN(ctx context.Context, dsn string) (store.Store, error) {
	d, err := store.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	// Group commit on for both (PostgreSQL's default is off), so the
	// crash and concurrency tests exercise it.
	o := &store.Options{GroupCommit: store.GroupCommitOn}
	switch d.Kind {
	case store.KindSQLite:
		return sqlite.Open(ctx, d.Path, o)
	case store.KindPostgres:
		return postgres.Open(ctx, d.URL, o)
	}
	return nil, fmt.Errorf("cannot open %s in a child", d)
}

// inMemServer connects a client session to an in-process effect server
// over the go-sdk's in-memory transports.
func inMemServer(t testing.TB, file string) *mcp.ClientSession {
	t.Helper()
	ctx := ctxT(t)
	st, ct := mcp.NewInMemoryTransports()
	srv := effectserver.New(effectserver.Options{File: file})
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "durable-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

// effectOf calls tool on cs carrying the idempotency key in _meta.
func effectOf(cs *mcp.ClientSession, tool string, args json.RawMessage) Effect {
	return func(ctx context.Context, key string) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: mcp.Meta{"idempotencyKey": key}})
	}
}

func mustJSONT(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func effectsIn(t testing.TB, file string) (map[string][]string, map[string]int) {
	t.Helper()
	e, s, err := effectserver.Effects(file)
	if err != nil {
		t.Fatal(err)
	}
	return e, s
}
