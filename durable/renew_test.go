package durable

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/store"
)

// renewCounter counts the lease renewals made on a real store.
type renewCounter struct {
	store.Store
	renewals atomic.Int32
}

func (r *renewCounter) RenewLease(ctx context.Context, key store.RecordKey, executor string, until time.Time) error {
	r.renewals.Add(1)
	return r.Store.RenewLease(ctx, key, executor, until)
}

// TestRenewalWithoutGoroutine: while a call's effect runs, no goroutine of
// the journal waits to renew its lease (a timer is armed instead); a long
// effect still has its lease renewed, and once Do has returned nothing
// renews it any more.
func TestRenewalWithoutGoroutine(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		ctx := ctxT(t)
		cs := inMemServer(t, filepath.Join(t.TempDir(), "effects"))
		rc := &renewCounter{Store: s}
		j := newJournal(t, rc, &JournalOptions{Lease: 30 * time.Millisecond})
		args := json.RawMessage(`{"amount":1}`)
		var waiting []string
		quick := func(ctx context.Context, key string) (*mcp.CallToolResult, error) {
			buf := make([]byte, 1<<20)
			for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
				if strings.Contains(g, "durable.(*Journal).renew") {
					waiting = append(waiting, g)
				}
			}
			return effectOf(cs, "charge", args)(ctx, key)
		}
		if _, _, err := j.Do(ctx, Call{RunID: "r", ToolCallID: "quick", Server: "bank", Tool: "charge", Args: args}, quick); err != nil {
			t.Fatal(err)
		}
		if len(waiting) > 0 {
			t.Errorf("%d goroutines of the journal waited to renew the lease during the effect:\n%s", len(waiting), strings.Join(waiting, "\n\n"))
		}

		// A long effect (several leases): renewed, then never again.
		long := json.RawMessage(`{"amount":1,"sleepMs":150}`)
		if _, _, err := j.Do(ctx, Call{RunID: "r", ToolCallID: "long", Server: "bank", Tool: "charge", Args: long}, effectOf(cs, "charge", long)); err != nil {
			t.Fatal(err)
		}
		n := rc.renewals.Load()
		if n == 0 {
			t.Fatal("a call lasting five leases was never renewed")
		}
		time.Sleep(60 * time.Millisecond) // six renewal periods
		if m := rc.renewals.Load(); m != n {
			t.Fatalf("%d renewals after Do returned", m-n)
		}
	})
}
