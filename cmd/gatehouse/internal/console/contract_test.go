package console

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// TestApprovalsShowContract: an approval asked under a known contract of
// its tool shows the contract's fingerprint (its first 12 digits) with the
// tool, so an operator can tell an approval asked before a trust; one
// asked without a contract shows none.
func TestApprovalsShowContract(t *testing.T) {
	eachStore(t, func(t *testing.T, d string) {
		st := openStore(t, d)
		ctx := context.Background()
		now := time.Now()
		contract := strings.Repeat("c0ffee12", 8)
		for _, a := range []store.Approval{
			{ID: "apr_with", RecordKey: store.RecordKey{Scope: "gateway", RunID: "gw_run", ToolCallID: "with"}, Server: "bank",
				Tool: "bank__transfer", ArgsFingerprint: "fp", Contract: contract, Owner: "acme-ltd", CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
			{ID: "apr_without", RecordKey: store.RecordKey{Scope: "gateway", RunID: "gw_run", ToolCallID: "without"}, Server: "bank",
				Tool: "bank__transfer", ArgsFingerprint: "fp", Owner: "acme-ltd", CreatedAt: now.Add(time.Millisecond), ExpiresAt: now.Add(time.Hour)},
		} {
			if _, _, err := st.CreateApproval(ctx, a, 0); err != nil {
				t.Fatal(err)
			}
		}
		srv := startConsole(t, st, nil)
		c := newClient(t, srv.URL)
		c.login(aliceToken)
		_, _, page := c.do("GET", "/approvals", nil, nil)
		m := toolCell.FindAllStringSubmatch(page, -1)
		if len(m) != 2 {
			t.Fatalf("%d tool cells in:\n%s", len(m), page)
		}
		short := regexp.MustCompile(`contract <code>([0-9a-f]+)</code>`)
		if got := short.FindStringSubmatch(m[0][1]); got == nil || got[1] != contract[:12] {
			t.Fatalf("approval with a contract: %s", m[0][1])
		}
		if strings.Contains(m[1][1], "contract <code>") {
			t.Fatalf("approval without a contract: %s", m[1][1])
		}
	})
}
