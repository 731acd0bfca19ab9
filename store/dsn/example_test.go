package dsn_test

import (
	"context"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/dsn"
)

// Open a store by DSN, claim a call, and see a second claim of the same key
// lose. A program would pass store.DSNFromEnv(configured) so that
// $GATEHOUSE_STORE wins when set.
func Example() {
	ctx := context.Background()
	st, err := dsn.Open(ctx, "memory:", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	rec := store.Record{
		RecordKey:   store.RecordKey{Scope: "agent", RunID: "run-1", ToolCallID: "call-1"},
		Fingerprint: "sha256:...", Owner: "alice", Executor: "worker-a",
		LeaseUntil: time.Now().Add(time.Minute), ExpiresAt: time.Now().Add(24 * time.Hour),
	}
	first, _, _ := st.Claim(ctx, rec)
	rec.Executor = "worker-b"
	second, existing, _ := st.Claim(ctx, rec)
	fmt.Println(first, second, existing.Executor)
	// Output: true false worker-a
}
