package server

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// perCallLimiter is the shared limiter as it was before quota blocks: one
// IncrBy per call. It is kept here as the benchmark's baseline.
type perCallLimiter struct {
	max      int64
	window   time.Duration
	counters Counters
	now      func() time.Time
}

func (l *perCallLimiter) allow(ctx context.Context, subject Subject, _ string) (bool, time.Duration, error) {
	now := l.now()
	start := windowStart(now, l.window)
	end := start.Add(l.window)
	n, err := l.counters.IncrBy(ctx, sharedKey(subject, start), 1, end)
	if err != nil {
		return false, 0, fmt.Errorf("server: rate limit counter: %w", err)
	}
	if n > l.max {
		return false, end.Sub(now), nil
	}
	return true, 0, nil
}

// BenchmarkSharedRateLimit is one allow() of a shared rate limit kept in a
// SQLite file: "per-call" is one IncrBy per call (before quota blocks),
// "blocks" the quota blocks; "parallel" runs GOMAXPROCS callers of one
// subject. The quota is large enough never to refuse.
func BenchmarkSharedRateLimit(b *testing.B) {
	for _, kind := range []string{"per-call", "blocks"} {
		for _, parallel := range []bool{false, true} {
			name := kind
			if parallel {
				name += "/parallel"
			}
			b.Run(name, func(b *testing.B) {
				st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "rl.db"), nil)
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				const maxCalls = 1 << 30
				var l limiter = &perCallLimiter{max: maxCalls, window: time.Hour, counters: st, now: time.Now}
				if kind == "blocks" {
					sl := newSharedLimiter(maxCalls, time.Hour, st, time.Now, quietLogger())
					defer sl.close()
					l = sl
				}
				ctx := context.Background()
				call := func() {
					if ok, _, err := l.allow(ctx, "alice", "t"); !ok || err != nil {
						b.Fatalf("refused: %v", err)
					}
				}
				b.ReportAllocs()
				if parallel {
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							call()
						}
					})
					return
				}
				for b.Loop() {
					call()
				}
			})
		}
	}
}
