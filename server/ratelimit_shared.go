package server

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// sharedLimiter counts a subject's calls in a store shared by several
// processes, by quota blocks. The counter store.Key("rl", subject, window
// start ms), expiring at the window's end, holds every permit any process
// has taken for that window. A process takes a block of permits with one
// IncrBy and spends it here, without the store; it is granted
// clamp(max - valueBefore, 0, block) of it and gives back the rest (the
// overshoot) at once, so the counter is always the permits held plus those
// spent, plus overshoots on their way back. The sum over processes of
// calls allowed in a window therefore never exceeds max.
//
// The block a subject asks for starts at one permit and doubles while the
// subject keeps spending, up to maxBlock (a quarter of max): a subject
// that calls rarely holds few permits, one that calls a lot pays one store
// write per maxBlock calls, and the last block of a window is what is
// left, so a lone caller gets its whole quota. Permits a subject has not
// spent for idle are given back (a sweep on a timer armed while any block
// is held, and Close); when the window ends the local state is dropped and
// the counter expires with it.
//
// The cost, at the edges: a caller refused here may have permits sitting
// unspent on another process until that process's block goes idle or the
// window ends; a caller the store has refused is refused here without
// asking it again for idle.
type sharedLimiter struct {
	max      int64
	window   time.Duration
	counters Counters
	now      func() time.Time // the window clock (Options.Clock)
	logger   *slog.Logger
	idle     time.Duration // a block unused this long is given back
	maxBlock int64

	mu     sync.Mutex
	blocks map[Subject]*quotaBlock
	timer  *time.Timer // the sweep; armed while blocks is not empty
	armed  bool
	closed bool
	sweeps sync.WaitGroup // sweeps running (Close waits for them)
}

// quotaBlock is one subject's permits for one window in this process.
type quotaBlock struct {
	start time.Time // the window's start
	held  int64     // permits taken from the store and not spent yet
	next  int64     // how many permits the next fetch asks for
	// last is the time of the subject's last call here (time.Now, so
	// monotonic whatever the window clock says).
	last time.Time
	// emptyUntil: the store had no permit left; until then calls are
	// refused without asking it again (monotonic).
	emptyUntil time.Time
	// fetching is non-nil while one call fetches a block for the
	// subject; it is closed when that fetch is done.
	fetching chan struct{}
}

// giveBack is unspent permits on their way back to the store.
type giveBack struct {
	key string
	n   int64
	end time.Time
}

// giveBackTimeout bounds one IncrBy that gives permits back.
const giveBackTimeout = 5 * time.Second

func newSharedLimiter(maxCalls int, window time.Duration, counters Counters, now func() time.Time, logger *slog.Logger) *sharedLimiter {
	return &sharedLimiter{
		max: int64(maxCalls), window: window, counters: counters, now: now, logger: logger,
		idle:     min(max(window/8, 10*time.Millisecond), time.Second),
		maxBlock: int64(max(1, maxCalls/4)),
		blocks:   make(map[Subject]*quotaBlock),
	}
}

// sharedKey is the counter key of subject's window starting at start: a
// hash, so that whatever Identify returns (a NUL byte, a long claim) the
// key is short and plain and names no other subject's window.
func sharedKey(subject Subject, start time.Time) string {
	return store.Key("rl", string(subject), strconv.FormatInt(start.UnixMilli(), 10))
}

func (l *sharedLimiter) allow(ctx context.Context, subject Subject, _ string) (bool, time.Duration, error) {
	for {
		now, mono := l.now(), time.Now()
		start := windowStart(now, l.window)
		end := start.Add(l.window)
		l.mu.Lock()
		b := l.blocks[subject]
		switch {
		case b == nil:
			b = &quotaBlock{start: start, next: 1}
			l.blocks[subject] = b
			l.armLocked()
		case b.start.Before(start):
			// The window ended: its permits are void (its counter
			// expires). A subject that kept calling keeps its block size.
			next := b.next
			b = &quotaBlock{start: start, next: next}
			l.blocks[subject] = b
		case b.start.After(start):
			// A call that read the clock just before a window turned,
			// after another one replaced the block: one permit of the
			// earlier window, straight from the store.
			l.mu.Unlock()
			granted, err := l.take(ctx, sharedKey(subject, start), 1, end)
			if err != nil || granted == 0 {
				return false, end.Sub(now), err
			}
			return true, 0, nil
		}
		b.last = mono
		if b.held > 0 {
			b.held--
			l.mu.Unlock()
			return true, 0, nil
		}
		if mono.Before(b.emptyUntil) {
			l.mu.Unlock()
			return false, end.Sub(now), nil
		}
		if ch := b.fetching; ch != nil {
			// Another call of this subject is fetching a block: wait for
			// it rather than fetch a second one.
			l.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return false, 0, fmt.Errorf("server: rate limit: %w", ctx.Err())
			}
		}
		want := b.next
		if l.closed {
			want = 1 // nothing held after Close: nothing left unreturned
		}
		ch := make(chan struct{})
		b.fetching = ch
		l.mu.Unlock()

		granted, err := l.take(ctx, sharedKey(subject, start), want, end)

		l.mu.Lock()
		b.fetching = nil
		close(ch)
		if err != nil {
			b.next = 1 // a store that fails may have counted what it was asked
			l.mu.Unlock()
			return false, 0, err
		}
		if granted == 0 {
			b.next = 1
			b.emptyUntil = time.Now().Add(l.idle)
			l.mu.Unlock()
			return false, end.Sub(now), nil
		}
		var extra int64
		if l.closed {
			extra = granted - 1 // a fetch that began before Close
		} else {
			b.held += granted - 1
			b.next = min(2*want, l.maxBlock)
		}
		l.mu.Unlock()
		if extra > 0 {
			l.giveAll(ctx, []giveBack{{key: sharedKey(subject, start), n: extra, end: end}})
		}
		return true, 0, nil
	}
}

// take asks the store for want permits of the window ending at end and
// returns how many it granted; the overshoot is given back before it
// returns. A store error grants nothing (the permits it may have counted
// stay counted: the error never allows a call).
func (l *sharedLimiter) take(ctx context.Context, key string, want int64, end time.Time) (int64, error) {
	n, err := l.counters.IncrBy(ctx, key, want, end)
	if err != nil {
		return 0, fmt.Errorf("server: rate limit counter: %w", err)
	}
	granted := min(max(l.max-(n-want), 0), want)
	if over := want - granted; over > 0 {
		l.giveAll(ctx, []giveBack{{key: key, n: over, end: end}})
	}
	return granted, nil
}

// giveAll gives permits back to the store. A failure is logged: those
// permits stay counted until the window ends, which allows fewer calls,
// never more.
func (l *sharedLimiter) giveAll(ctx context.Context, back []giveBack) {
	ctx = context.WithoutCancel(ctx)
	for _, g := range back {
		gctx, cancel := context.WithTimeout(ctx, giveBackTimeout)
		_, err := l.counters.IncrBy(gctx, g.key, -g.n, g.end)
		cancel()
		if err != nil {
			l.logger.Warn("server: rate limit: unspent permits not given back; they stay counted until the window ends",
				"permits", g.n, "err", err)
		}
	}
}

// armLocked arms the sweep unless it is armed or the limiter is closed.
func (l *sharedLimiter) armLocked() {
	if l.armed || l.closed {
		return
	}
	l.armed = true
	if l.timer == nil {
		l.timer = time.AfterFunc(l.idle/2, l.sweep)
		return
	}
	l.timer.Reset(l.idle / 2)
}

// sweep gives back the permits of blocks idle for l.idle and drops them,
// drops the blocks of ended windows, and re-arms itself while blocks
// remain. It runs on the timer's goroutine, which ends with it.
func (l *sharedLimiter) sweep() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.sweeps.Add(1)
	defer l.sweeps.Done()
	mono := time.Now()
	back := l.collectLocked(func(b *quotaBlock) bool { return mono.Sub(b.last) >= l.idle })
	l.armed = false
	if len(l.blocks) > 0 {
		l.armLocked()
	}
	l.mu.Unlock()
	l.giveAll(context.Background(), back)
}

// collectLocked drops the blocks of windows that have ended and those done
// says are done, and returns the permits the latter hold. A block being
// fetched is left alone.
func (l *sharedLimiter) collectLocked(done func(*quotaBlock) bool) []giveBack {
	current := windowStart(l.now(), l.window)
	var back []giveBack
	for s, b := range l.blocks {
		switch {
		case b.fetching != nil:
		case b.start.Before(current):
			delete(l.blocks, s)
		case done(b):
			if b.held > 0 {
				back = append(back, giveBack{key: sharedKey(s, b.start), n: b.held, end: b.start.Add(l.window)})
				b.held = 0
			}
			delete(l.blocks, s)
		}
	}
	return back
}

// close stops the sweep, waits for one running, and gives back every
// permit held. Calls allowed afterwards take one permit each from the
// store and hold none.
func (l *sharedLimiter) close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	if l.timer != nil {
		l.timer.Stop()
	}
	back := l.collectLocked(func(*quotaBlock) bool { return true })
	l.mu.Unlock()
	l.sweeps.Wait()
	l.giveAll(context.Background(), back)
}
