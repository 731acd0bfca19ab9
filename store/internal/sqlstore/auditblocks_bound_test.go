package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/store"
)

// TestMaxAuditBlockNeverShrinks: list finds the block that holds an ID by
// the bound on a block's length, so blocks already written (up to 256
// entries since migration 14) must stay within it.
func TestMaxAuditBlockNeverShrinks(t *testing.T) {
	if maxAuditBlock < 256 {
		t.Fatalf("maxAuditBlock is %d: stores hold blocks of up to 256 entries, which list would then read from the middle", maxAuditBlock)
	}
	for _, n := range []int{1, maxAuditBlock - 1, maxAuditBlock, maxAuditBlock + 1, 4 * maxAuditBlock} {
		if c := (auditBlocks{}).chunk(n); c < 1 || c > maxAuditBlock || c > n {
			t.Errorf("chunk(%d) = %d", n, c)
		}
	}
}

// TestAuditBlockInsertBounds: a block longer than the bound (or empty) is
// refused before any statement (the Querier is nil: touching it panics).
func TestAuditBlockInsertBounds(t *testing.T) {
	for _, n := range []int{0, maxAuditBlock + 1} {
		es := make([]store.AuditEntry, n)
		err := (auditBlocks{}).insert(context.Background(), nil, es, make([]int64, n), store.AuditHead{})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("holds 1 to %d entries, not %d", maxAuditBlock, n)) {
			t.Errorf("%d entries: %v", n, err)
		}
	}
}
