package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/internal/vault"
)

// operatorCommands is every command that reads or changes a store the
// gateway made: each of them, run where there is none, must say so and
// create nothing.
var operatorCommands = [][]string{
	{"approvals", "list"},
	{"approvals", "approve", "apr_0123456789abcdef"},
	{"approvals", "deny", "apr_0123456789abcdef"},
	{"runs", "list"},
	{"runs", "purge", "--subject", "alice"},
	{"drift", "list"},
	{"drift", "show", "pay"},
	{"trust", "pay", "--listing", strings.Repeat("ab", 32)},
	{"audit", "verify"},
	{"audit", "export"},
	{"connections", "list"},
	{"connections", "revoke", "--all"},
	{"connections", "rekey"},
}

// listing returns every path under dir, with its mode and size, one a line.
func listing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s %v %d\n", rel, fi.Mode(), fi.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// setVaultKey sets the token vault's key, so that the connections commands
// get as far as the store.
func setVaultKey(t *testing.T) {
	key := make([]byte, vault.KeySize)
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(key))
	t.Setenv(vault.EnvPreviousKey, "")
}

// TestOperatorCommandsCreateNoStore: every operator command run in a
// folder without a store (no .gatehouse/, an empty .gatehouse/, an empty
// gatehouse.db) exits 1 saying there is no Gatehouse store there and what
// to do, and the folder is as it was.
func TestOperatorCommandsCreateNoStore(t *testing.T) {
	t.Setenv("GATEHOUSE_STORE", "")
	setVaultKey(t)
	dir := t.TempDir()
	t.Chdir(dir)
	db := filepath.Join(dir, ".gatehouse", "gatehouse.db")
	hint := "; start the gateway (gatehouse serve) or create one with gatehouse store init\n"
	for _, state := range []struct {
		name, reason string
		setup        func(t *testing.T)
	}{
		{"no folder", "the folder " + filepath.Join(dir, ".gatehouse") + " does not exist", func(*testing.T) {}},
		{"empty folder", "the file does not exist", func(t *testing.T) {
			if err := os.Mkdir(filepath.Join(dir, ".gatehouse"), 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{"empty file", "the file is empty", func(t *testing.T) {
			if err := os.WriteFile(db, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(state.name, func(t *testing.T) {
			state.setup(t)
			before := listing(t, dir)
			want := "gatehouse: no Gatehouse store at sqlite:" + db + " (" + state.reason + ")" + hint
			for _, args := range operatorCommands {
				code, out, errOut := run(t, args...)
				if code != ExitFailure || errOut != want || out != "" {
					t.Errorf("%s: exit %d, stdout %q, stderr %q\nwant exit 1 and %q", strings.Join(args, " "), code, out, errOut, want)
				}
				if after := listing(t, dir); after != before {
					t.Fatalf("%s changed the folder:\nbefore:\n%s\nafter:\n%s", strings.Join(args, " "), before, after)
				}
			}
		})
	}
}

// TestConnectCreatesNoStore: `gatehouse connect` (an operator's command
// too) refuses a config whose store does not exist, before it listens or
// connects anything, and the config's folder keeps only the config.
func TestConnectCreatesNoStore(t *testing.T) {
	t.Setenv("GATEHOUSE_STORE", "")
	setVaultKey(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gatehouse.yaml")
	yaml := "servers:\n  crm:\n    type: streamable-http\n    url: https://crm.example.com/mcp\n    auth: service\n    oauth: {clientID: gw}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	before := listing(t, dir)
	code, _, errOut := run(t, "connect", "crm", "--config", cfg, "--listen", "127.0.0.1:0")
	want := "gatehouse: no Gatehouse store at sqlite:" + filepath.Join(dir, ".gatehouse", "gatehouse.db") +
		" (the folder " + filepath.Join(dir, ".gatehouse") + " does not exist); start the gateway (gatehouse serve) or create one with gatehouse store init\n"
	if code != ExitFailure || errOut != want {
		t.Fatalf("connect: exit %d, stderr %q\nwant 1 and %q", code, errOut, want)
	}
	if after := listing(t, dir); after != before {
		t.Fatalf("connect changed the folder:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestOperatorCommandsMemoryStore: memory: names no store an operator
// command could read; it is a usage error.
func TestOperatorCommandsMemoryStore(t *testing.T) {
	setVaultKey(t)
	for _, args := range operatorCommands {
		code, _, errOut := run(t, append(args, "--store", "memory:")...)
		if code != ExitUsage || !strings.Contains(errOut, "a memory: store holds nothing for this command") {
			t.Errorf("%s --store memory: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
		}
	}
}

// TestOperatorCommandsEmptyPostgres: on a PostgreSQL schema without
// Gatehouse's tables, every operator command says there is no store, and
// the schema is still empty afterwards.
func TestOperatorCommandsEmptyPostgres(t *testing.T) {
	setVaultKey(t)
	dsn := pgtest.Schema(t, "cli_nostore", "the operator commands on an empty PostgreSQL schema")
	for _, args := range operatorCommands {
		code, _, errOut := run(t, append(args, "--store", dsn)...)
		if code != ExitFailure || !strings.Contains(errOut, "gatehouse: no Gatehouse store at postgres ") ||
			!strings.Contains(errOut, "has no schema_migrations table); start the gateway (gatehouse serve) or create one with gatehouse store init") {
			t.Errorf("%s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
		}
	}
	if n := pgTables(t, dsn); n != 0 {
		t.Fatalf("the operator commands left %d tables in the schema", n)
	}
}

// pgTables counts the relations in the schema dsn's search_path names.
func pgTables(t *testing.T, dsn string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n
		ON n.oid = c.relnamespace WHERE n.nspname = current_schema()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// latestSchema is the schema version of this build: the number of
// migrations the store embeds (read before a test changes directory).
func latestSchema(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join("..", "..", "store", "internal", "sqlstore", "migrations"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sql") {
			n++
		}
	}
	return n
}

// TestStoreInit: in an empty folder, `store init` creates .gatehouse/ and
// its database and says so; `approvals list` run there then opens it;
// init again says the store exists and changes nothing.
func TestStoreInit(t *testing.T) {
	t.Setenv("GATEHOUSE_STORE", "")
	v := latestSchema(t)
	dir := t.TempDir()
	t.Chdir(dir)
	gh := filepath.Join(dir, ".gatehouse")
	db := filepath.Join(gh, "gatehouse.db")

	code, out, errOut := run(t, "store", "init")
	want := fmt.Sprintf("created the folder %s (mode 0700)\ncreated the file %s (mode 0600)\ncreated the store sqlite:%s, at schema version %d\n", gh, db, db, v)
	if code != 0 || out != want {
		t.Fatalf("store init: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, want)
	}
	code, out, errOut = run(t, "approvals", "list")
	if code != 0 || !strings.Contains(out, "(no approvals)") {
		t.Fatalf("approvals list after store init: exit %d, %q %q", code, out, errOut)
	}
	before := listing(t, dir)
	code, out, _ = run(t, "store", "init")
	if want := fmt.Sprintf("the store sqlite:%s exists, at schema version %d: nothing created\n", db, v); code != 0 || out != want {
		t.Fatalf("store init again: exit %d, stdout %q, want %q", code, out, want)
	}
	if after := listing(t, dir); after != before {
		t.Fatalf("store init on an existing store changed the folder:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestStoreInitPaths: init follows --config (a relative store beside the
// config), keeps an empty file it is pointed at (a new database to SQLite),
// and refuses a path two folders deep without creating anything.
func TestStoreInitPaths(t *testing.T) {
	t.Setenv("GATEHOUSE_STORE", "")
	v := latestSchema(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gatehouse.yaml")
	if err := os.WriteFile(cfg, []byte("store: sqlite:data/g.db\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // not the config's folder
	data := filepath.Join(dir, "data")
	code, out, errOut := run(t, "store", "init", "--config", cfg)
	want := fmt.Sprintf("created the folder %s (mode 0700)\ncreated the file %s (mode 0600)\ncreated the store sqlite:%s, at schema version %d\n",
		data, filepath.Join(data, "g.db"), filepath.Join(data, "g.db"), v)
	if code != 0 || out != want {
		t.Fatalf("store init --config: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, want)
	}
	if code, out, errOut := run(t, "runs", "list", "--config", cfg); code != 0 || !strings.Contains(out, "(no runs)") {
		t.Fatalf("runs list --config after init: exit %d %q %q", code, out, errOut)
	}

	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, "store", "init", "--store", "sqlite:"+empty)
	if want := fmt.Sprintf("created the store sqlite:%s, at schema version %d\n", empty, v); code != 0 || out != want {
		t.Fatalf("store init on an empty file: exit %d, stderr %q, stdout %q, want %q", code, errOut, out, want)
	}

	root := t.TempDir()
	code, out, errOut = run(t, "store", "init", "--config", filepath.Join(root, "missing.yaml"))
	if code != ExitFailure || out != "" || !strings.Contains(errOut, "missing.yaml: cannot read the config file") {
		t.Fatalf("store init with a missing config: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = run(t, "store", "init", "--store", "sqlite:"+filepath.Join(root, "gatehuose", "data", "g.db"))
	if code != ExitFailure || out != "" || !strings.Contains(errOut, "the folder "+filepath.Join(root, "gatehuose")+" does not exist") {
		t.Fatalf("store init two folders deep: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Fatalf("store init two folders deep created %v", ents)
	}
}

// TestStoreInitUsage: what init refuses as a usage error (exit 2),
// creating nothing.
func TestStoreInitUsage(t *testing.T) {
	t.Setenv("GATEHOUSE_STORE", "")
	dir := t.TempDir()
	t.Chdir(dir)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"an argument", []string{"store", "init", "now"}, `unknown command "now" for "gatehouse store init"`},
		{"memory", []string{"store", "init", "--store", "memory:"}, "a memory: store is not one to create"},
		{"unknown scheme", []string{"store", "init", "--store", "mysql://db/x"}, "unknown DSN scheme"},
		{"sqlite URL", []string{"store", "init", "--store", "sqlite://x.db"}, "ambiguous"},
		{"unknown flag", []string{"store", "init", "--force"}, "unknown flag: --force"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.args...)
			if code != ExitUsage || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errOut, tc.want)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Fatalf("created %v", ents)
			}
		})
	}
}

// TestStoreInitPostgres: on an empty PostgreSQL schema, init creates the
// tables there and says in which schema; then the operator commands open
// it, and init again says it exists.
func TestStoreInitPostgres(t *testing.T) {
	v := latestSchema(t)
	dsn := pgtest.Schema(t, "cli_init", "store init on PostgreSQL")
	code, out, errOut := run(t, "store", "init", "--store", dsn)
	if code != 0 || !strings.HasPrefix(out, "created the store postgres://") ||
		!strings.Contains(out, `(PostgreSQL schema "cli_init_`) || !strings.HasSuffix(out, fmt.Sprintf(", at schema version %d\n", v)) {
		t.Fatalf("store init: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if pgTables(t, dsn) == 0 {
		t.Fatal("store init created no table")
	}
	if code, out, errOut := run(t, "approvals", "list", "--store", dsn); code != 0 || !strings.Contains(out, "(no approvals)") {
		t.Fatalf("approvals list: exit %d %q %q", code, out, errOut)
	}
	code, out, _ = run(t, "store", "init", "--store", dsn)
	if code != 0 || !strings.HasPrefix(out, "the store postgres://") || !strings.HasSuffix(out, fmt.Sprintf(" exists, at schema version %d: nothing created\n", v)) {
		t.Fatalf("store init again: exit %d, stdout %q", code, out)
	}
}
