package gateway

import (
	"context"
	"database/sql"
	"net/http"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRefusedCallsShareOneFlow: 500 calls of alice refused auth_required
// (from 10 sessions at once) get one connect URL and store one connect
// flow: one row in the gateway's real SQLite store (they stored one each).
// That URL then connects her, and her call reaches the upstream with her
// token.
func TestRefusedCallsShareOneFlow(t *testing.T) {
	e := startUserGatewayOn(t, userSetup{})
	urls := make(chan string, 500)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			cs, err := connectAs(e.url+"/mcp", aliceToken)
			if err != nil {
				t.Errorf("connect: %v", err)
				return
			}
			defer cs.Close()
			for range 50 {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{}})
				if err != nil {
					t.Errorf("call: %v", err)
					return
				}
				urls <- connectURL(t, res)
			}
		})
	}
	wg.Wait()
	close(urls)
	var first string
	n := 0
	for u := range urls {
		if first == "" {
			first = u
		}
		if u != first {
			t.Fatalf("two connect URLs: %s, %s", first, u)
		}
		n++
	}
	if n != 500 {
		t.Fatalf("%d refusals", n)
	}
	if rows := countRows(t, e.db, "connect_flows"); rows != 1 {
		t.Fatalf("500 refused calls stored %d connect flows", rows)
	}
	if code, body := browseBody(t, first); code != http.StatusOK {
		t.Fatalf("walking the connect URL: %d %s", code, body)
	}
	set, err := e.tokens.Token(context.Background(), "up", "alice")
	if err != nil || set == nil {
		t.Fatalf("alice's token: %v %v", set, err)
	}
	if res := e.call(aliceToken); res.IsError || e.up.lastSeen() != set.AccessToken {
		t.Fatalf("the retry: %+v", res)
	}
}

// countRows counts the rows of table in the SQLite file path.
func countRows(t *testing.T, path, table string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
