package upauth

import (
	"context"
	"database/sql"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // database/sql's "sqlite", to count the store's rows

	"github.com/gatehouse-dev/gatehouse/internal/fixture/testclock"
	"github.com/gatehouse-dev/gatehouse/internal/vault"
	"github.com/gatehouse-dev/gatehouse/store/dsn"
)

// sqliteFlows is StoreFlows on a real SQLite store in a fresh file (the
// vault's key made up), and that file.
func sqliteFlows(t *testing.T) (StoreFlows, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "flows.db")
	st, err := dsn.Open(context.Background(), "sqlite:"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	keys, err := vault.NewKeys([]byte("0123456789abcdef0123456789abcdef"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return StoreFlows{St: st, Vault: vault.New(st, keys, nil)}, path
}

// flowRows counts the rows of the store's connect_flows table.
func flowRows(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM connect_flows`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRefusalsShareAFlow: a subject's refused calls share one connect
// flow, on a real SQLite store: 500 refusals, one row, one URL. A URL
// opened (on this replica or another sharing the store) is not handed out
// again: the next refusal gets a new one; nor is one with half of its
// time or less left. Another subject, or another server, has its own.
func TestRefusalsShareAFlow(t *testing.T) {
	h := startHostile(t)
	flows, path := sqliteFlows(t)
	clk := testclock.New(time.Now())
	a := userManager(t, h, flows, clk, -1)
	b := userManager(t, h, flows, clk, -1) // a replica on the same store
	ctx := context.Background()
	check := func(m *Manager, subject string) (string, string) {
		t.Helper()
		r, err := m.Check(ctx, "up", subject)
		if err != nil || r == nil {
			t.Fatalf("Check: %v %v", r, err)
		}
		return r.ConnectURL, r.Message
	}
	first, msg := check(a, "alice")
	if !strings.Contains(msg, "within 10m0s") {
		t.Fatalf("message %q", msg)
	}
	for i := range 499 {
		if u, _ := check(a, "alice"); u != first {
			t.Fatalf("refusal %d: %s, want %s", i+2, u, first)
		}
	}
	if n := flowRows(t, path); n != 1 {
		t.Fatalf("500 refusals stored %d flows", n)
	}
	clk.Advance(time.Minute)
	if u, msg := check(a, "alice"); u != first || !strings.Contains(msg, "within 9m0s") {
		t.Fatalf("a minute later: %s %q", u, msg)
	}
	if u, _ := check(a, "bob"); u == first {
		t.Fatal("bob was handed alice's URL")
	}

	// Opened on replica B: A hands out a new URL.
	if rec := open(b, first); rec.Code != http.StatusSeeOther {
		t.Fatalf("opening the URL on B: %d %s", rec.Code, rec.Body.String())
	}
	second, _ := check(a, "alice")
	if second == first {
		t.Fatal("a used URL was handed out again")
	}
	if third, _ := check(a, "alice"); third != second {
		t.Fatalf("the new URL was not kept: %s, %s", second, third)
	}
	if rec := open(a, first); rec.Code != http.StatusGone {
		t.Fatalf("the used URL again: %d", rec.Code)
	}

	// Opened on A itself: the same.
	if rec := open(a, second); rec.Code != http.StatusSeeOther {
		t.Fatalf("opening the URL on A: %d", rec.Code)
	}
	third, _ := check(a, "alice")
	if third == second {
		t.Fatal("a used URL was handed out again")
	}

	// Half its time gone: a new one (the old still works until it expires).
	clk.Advance(DefaultFlowTTL / 2)
	fourth, msg := check(a, "alice")
	if fourth == third || !strings.Contains(msg, "within 10m0s") {
		t.Fatalf("half a TTL later: %s %q", fourth, msg)
	}
	if rec := open(b, third); rec.Code != http.StatusSeeOther {
		t.Fatalf("the older URL before it expired: %d", rec.Code)
	}
}
