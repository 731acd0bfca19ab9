// Package health holds three small books the gateway keeps about its
// life: which upstream servers are in their restart backoff (Backoff), how
// many tool calls are being served, so that a shutdown admits no more and
// waits for the rest (Inflight), and its readiness while it stops (Drain).
//
//	b := health.NewBackoff(time.Now)
//	b.Observe("pay", true)      // its connection was lost
//	if wait, down := b.Down("pay"); down {
//		// answer unavailable, retry after wait
//	}
package health

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Restart backoff of a server whose connection was lost: the first wait is
// BackoffMin, doubling up to BackoffMax.
const (
	BackoffMin = 500 * time.Millisecond
	BackoffMax = 30 * time.Second
)

// Backoff tracks upstream servers whose connection was lost. While a
// server is in its backoff window its tools answer `unavailable` without
// being sent; the first call after the window lets the toolset reconnect
// (a stdio server is started again). A failed restart doubles the wait.
type Backoff struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*serverHealth
}

type serverHealth struct {
	failures  int
	downUntil time.Time
}

// NewBackoff returns an empty book on the clock now.
func NewBackoff(now func() time.Time) *Backoff {
	return &Backoff{now: now, m: map[string]*serverHealth{}}
}

// Down reports whether server is in its backoff window and how long is
// left.
func (h *Backoff) Down(server string) (time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.m[server]
	if s == nil {
		return 0, false
	}
	if left := s.downUntil.Sub(h.now()); left > 0 {
		return left, true
	}
	return 0, false
}

// Observe records the outcome of one upstream call: lost says its
// connection was lost (a bad answer or a tool's error says nothing against
// the server and ends its backoff like a success).
func (h *Backoff) Observe(server string, lost bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !lost {
		delete(h.m, server)
		return
	}
	s := h.m[server]
	if s == nil {
		s = &serverHealth{}
		h.m[server] = s
	}
	wait := BackoffMin << min(s.failures, 16)
	wait = min(wait, BackoffMax)
	s.failures++
	s.downUntil = h.now().Add(wait)
}

// Snapshot returns the servers currently in backoff.
func (h *Backoff) Snapshot() map[string]time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]time.Duration{}
	now := h.now()
	for name, s := range h.m {
		if left := s.downUntil.Sub(now); left > 0 {
			out[name] = left
		}
	}
	return out
}

// Inflight counts the calls being served; once closed it admits no more.
// Its zero value is ready.
type Inflight struct {
	mu     sync.Mutex
	n      int
	closed bool
	idle   chan struct{}
}

// Enter admits one call, unless the book is closed.
func (f *Inflight) Enter() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.n++
	return true
}

// Leave ends one call admitted by Enter or counted by Add.
func (f *Inflight) Leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.n == 0 && f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
}

// Drain admits no more calls and waits until none is running or ctx ends;
// it reports whether every call finished.
func (f *Inflight) Drain(ctx context.Context) bool {
	f.mu.Lock()
	f.closed = true
	if f.n == 0 {
		f.mu.Unlock()
		return true
	}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	idle := f.idle
	f.mu.Unlock()
	select {
	case <-idle:
		return true
	case <-ctx.Done():
		return false
	}
}

// Count returns the number of calls running.
func (f *Inflight) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// IsClosed reports whether Close or Drain was called.
func (f *Inflight) IsClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// Close admits no more calls.
func (f *Inflight) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
}

// Add counts one more, even after Drain began.
func (f *Inflight) Add() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
}

// Drain is a gateway's readiness while it stops: once Begin is called
// /readyz fails, and the gateway keeps serving for the drain, so that a
// load balancer (or Kubernetes) that watches its readiness takes it out of
// rotation before it stops accepting. The drain is waited only when
// readiness was asked since the start (Probed): nobody else would notice.
// The zero value is ready and never probed.
type Drain struct {
	probed   atomic.Bool
	draining atomic.Bool
}

// Probed records that /readyz was asked.
func (d *Drain) Probed() { d.probed.Store(true) }

// Draining reports whether Begin was called: readiness fails from then on.
func (d *Drain) Draining() bool { return d.draining.Load() }

// Begin fails readiness from now on and returns how long to keep serving:
// wait when readiness was ever asked, else 0.
func (d *Drain) Begin(wait time.Duration) time.Duration {
	d.draining.Store(true)
	if wait <= 0 || !d.probed.Load() {
		return 0
	}
	return wait
}
