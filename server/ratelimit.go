package server

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// limiter decides whether subject may make one more call now.
type limiter interface {
	allow(ctx context.Context, subject Subject, tool string) (ok bool, retryAfter time.Duration, err error)
}

type funcLimiter RateLimitFunc

func (f funcLimiter) allow(ctx context.Context, subject Subject, tool string) (bool, time.Duration, error) {
	return f(ctx, subject, tool)
}

// windowStart returns the start of the epoch-aligned window holding now.
func windowStart(now time.Time, window time.Duration) time.Time {
	return now.Truncate(window)
}

// memLimiter counts calls per subject per fixed window in this process.
// One mutex makes it exact under concurrency. Windows that have ended are
// swept at most once per window length, so a subject that stops calling
// leaves memory; a live window is never evicted.
type memLimiter struct {
	max    int
	window time.Duration
	now    func() time.Time

	mu        sync.Mutex
	counts    map[Subject]memWindow
	lastSweep time.Time
}

type memWindow struct {
	start time.Time
	n     int
}

func newMemLimiter(max int, window time.Duration, now func() time.Time) *memLimiter {
	return &memLimiter{max: max, window: window, now: now, counts: make(map[Subject]memWindow)}
}

func (l *memLimiter) allow(_ context.Context, subject Subject, _ string) (bool, time.Duration, error) {
	now := l.now()
	start := windowStart(now, l.window)
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) >= l.window {
		l.sweepLocked(start)
		l.lastSweep = now
	}
	w := l.counts[subject]
	if !w.start.Equal(start) {
		w = memWindow{start: start}
	}
	if w.n >= l.max {
		return false, start.Add(l.window).Sub(now), nil
	}
	w.n++
	l.counts[subject] = w
	return true, 0, nil
}

// sweepLocked deletes every window that started before current (it has
// ended: windows are aligned).
func (l *memLimiter) sweepLocked(current time.Time) {
	for s, w := range l.counts {
		if w.start.Before(current) {
			delete(l.counts, s)
		}
	}
}

// size returns how many subjects the limiter holds (for tests).
func (l *memLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.counts)
}

// sharedLimiter counts in a store shared by several processes: one atomic
// IncrBy per call on store.Key("rl", subject, window start ms), expiring
// at the window's end. A call over the limit still increments (the count only
// grows within a window), which keeps it one statement and exact.
type sharedLimiter struct {
	max      int64
	window   time.Duration
	counters Counters
	now      func() time.Time
}

// sharedKey is the counter key of subject's window starting at start: a
// hash, so that whatever Identify returns (a NUL byte, a long claim) the
// key is short and plain and names no other subject's window.
func sharedKey(subject Subject, start time.Time) string {
	return store.Key("rl", string(subject), strconv.FormatInt(start.UnixMilli(), 10))
}

func (l *sharedLimiter) allow(ctx context.Context, subject Subject, _ string) (bool, time.Duration, error) {
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
