package server

import (
	"context"
	"sync"
	"time"
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
