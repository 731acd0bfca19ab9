package trust

import (
	"context"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// Watch is the one poll of the trust state a process runs: every interval
// (0 means one second) it reads the heads of every row (Heads: the baseline
// version and the latest observation of each, one store query) and hands
// them to each fn in order, so that each part of the process (a toolset's
// servers, a plugin's skills) re-judges what moved for it: a trust made by
// another process (`gatehouse trust`, another replica's re-trust) or drift
// another instance recorded. It blocks until ctx ends and returns ctx.Err();
// a store error, or a fn's, is logged and retried at the next tick.
func (l *Ledger) Watch(ctx context.Context, every time.Duration, fns ...func(context.Context, map[string]store.DriftHead) error) error {
	if every <= 0 {
		every = time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		heads, err := l.Heads(ctx)
		if err != nil {
			if ctx.Err() == nil {
				l.log.Warn("trust: reading the trust state", "err", err)
			}
			continue
		}
		for _, fn := range fns {
			if err := fn(ctx, heads); err != nil && ctx.Err() == nil {
				l.log.Warn("trust: applying the trust state", "err", err)
			}
		}
	}
}
