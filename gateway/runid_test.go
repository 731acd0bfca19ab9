package gateway

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
)

// counterRows reads the counters table of the store at dsn back: name ->
// value.
func counterRows(t *testing.T, dsn string) map[string]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows := map[string]int64{}
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rs, err := db.QueryContext(ctx, "SELECT name, value FROM counters")
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		for rs.Next() {
			var n string
			var v int64
			if err := rs.Scan(&n, &v); err != nil {
				t.Fatal(err)
			}
			rows[n] = v
		}
		if err := rs.Err(); err != nil {
			t.Fatal(err)
		}
		return rows
	}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	rs, err := c.Query(ctx, "SELECT name, value FROM counters")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for rs.Next() {
		var n string
		var v int64
		if err := rs.Scan(&n, &v); err != nil {
			t.Fatal(err)
		}
		rows[n] = v
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

var counterName = regexp.MustCompile(`^fw_[0-9a-f]{32}$`)

// TestRunIDBounds: a caller's _meta.runId out of bounds (a megabyte, a NUL
// byte, a space, not a string, empty) is refused denied on both fronts and
// both stores, nothing is sent and no counter is written; within bounds,
// the cap holds per (subject, runId): another runId is another run with a
// budget of its own, another subject's run of the same name does not share
// the count. The counters table is read back.
func TestRunIDBounds(t *testing.T) {
	stores := map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "gh.db") },
		"postgres": func(t *testing.T) string {
			return pgtest.Schema(t, "runid", "the runId bounds on PostgreSQL")
		},
	}
	bad := map[string]any{
		"a megabyte":     strings.Repeat("r", 1<<20),
		"one too long":   strings.Repeat("r", maxRunIDLen+1),
		"a NUL byte":     "run\x00one",
		"a space":        "run one",
		"non-ASCII":      "ラン",
		"an ANSI escape": "\x1b[31mrun",
		"a number":       7,
		"empty":          "",
	}
	for _, storeName := range []string{"sqlite", "postgres"} {
		for _, bytePath := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/bytePath=%v", storeName, bytePath), func(t *testing.T) {
				dsn := stores[storeName](t)
				e := parityGateway(t, newParityUpstream(t), bytePath, dsn, "firewall: {maxCallsPerRun: 2}\n")
				alice, bob := e.session("alice-token"), e.session("bob-token")
				call := func(cs *mcp.ClientSession, run any) string {
					t.Helper()
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					return answer(cs.CallTool(ctx, &mcp.CallToolParams{Name: "count", Meta: mcp.Meta{"runId": run}}))
				}
				for what, run := range bad {
					a := call(alice, run)
					wantCodes(t, []string{a}, "denied")
					if !strings.Contains(a, "_meta.runId must be a string of 1 to 128 printable ASCII characters") {
						t.Errorf("%s: the refusal does not say the rule: %.300s", what, a)
					}
					if len(a) > 1000 {
						t.Errorf("%s: the refusal repeats the value (%d bytes)", what, len(a))
					}
				}
				if n := e.up.effectCounts()["count"]; n != 0 {
					t.Fatalf("%d calls with a runId out of bounds reached the upstream", n)
				}
				if rows := counterRows(t, dsn); len(rows) != 0 {
					t.Fatalf("refused calls wrote counters: %d rows", len(rows))
				}

				longest := strings.Repeat("r", maxRunIDLen)
				wantCodes(t, []string{call(alice, longest), call(alice, longest), call(alice, longest)}, "", "", "call_limit")
				// Another runId is another run: the cap does not carry over.
				wantCodes(t, []string{call(alice, "job-2"), call(alice, "job-2"), call(alice, "job-2")}, "", "", "call_limit")
				// Bob's run of the same name is his own.
				wantCodes(t, []string{call(bob, longest), call(bob, longest), call(bob, longest)}, "", "", "call_limit")
				if n := e.up.effectCounts()["count"]; n != 6 {
					t.Fatalf("upstream ran %d calls, want 6", n)
				}
				rows := counterRows(t, dsn)
				if len(rows) != 3 {
					t.Fatalf("counters: %d rows, want 3 (alice's two runs, bob's one): %v", len(rows), rows)
				}
				for name, v := range rows {
					if !counterName.MatchString(name) || v != 3 {
						t.Errorf("counter %.80q = %d, want a short hashed name counting 3 calls", name, v)
					}
				}
			})
		}
	}
}

// TestRunIDRuleNamesTheBound: the refusal's message states the bound the
// check applies.
func TestRunIDRuleNamesTheBound(t *testing.T) {
	if !strings.Contains(runIDRule, fmt.Sprintf(" 1 to %d ", maxRunIDLen)) {
		t.Fatalf("runIDRule %q does not name the bound %d", runIDRule, maxRunIDLen)
	}
	if !validRunID(strings.Repeat("r", maxRunIDLen)) || validRunID(strings.Repeat("r", maxRunIDLen+1)) {
		t.Fatal("validRunID does not apply maxRunIDLen")
	}
}
