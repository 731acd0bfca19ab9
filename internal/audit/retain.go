package audit

import (
	"context"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/store"
	"time"
)

// Retain deletes, from the start of every chain, the entries older than
// cutoff that lie behind a checkpoint: each chain is cut after its latest
// checkpoint whose entry is older than cutoff, so what remains verifies from
// that checkpoint. Entries older than cutoff but after that checkpoint stay
// until a later checkpoint passes the cutoff. It returns how many entries
// it deleted.
func Retain(ctx context.Context, st store.AuditStore, cutoff time.Time) (int64, error) {
	heads, err := st.AuditHeads(ctx)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, h := range heads {
		cps, err := st.AuditCheckpoints(ctx, h.Chain)
		if err != nil {
			return total, err
		}
		// The latest checkpoint whose entry is before cutoff, and not the
		// head (the head stays).
		var cut int64
		for i := len(cps) - 1; i >= 0; i-- {
			c := cps[i]
			if c.Seq < h.First || c.Seq >= h.Last {
				continue
			}
			es, err := st.ReadAuditChain(ctx, h.Chain, c.Seq-1, 1)
			if err != nil {
				return total, err
			}
			if len(es) == 1 && es[0].Seq == c.Seq && es[0].At.Before(cutoff) {
				cut = c.Seq
				break
			}
		}
		if cut == 0 || cut < h.First {
			continue
		}
		n, err := st.TruncateAudit(ctx, h.Chain, cut+1)
		if err != nil {
			return total, fmt.Errorf("audit: retention of chain %q: %w", h.Chain, err)
		}
		total += n
	}
	return total, nil
}
