package gateway

import (
	"context"
	"sync"
	"time"
)

// Restart backoff of a server whose connection was lost: the first wait is
// backoffMin, doubling up to backoffMax.
const (
	backoffMin = 500 * time.Millisecond
	backoffMax = 30 * time.Second
)

// healthBook tracks upstream servers whose connection was lost. While a
// server is in its backoff window its tools answer `unavailable` without
// being sent; the first call after the window lets the toolset reconnect
// (a stdio server is started again). A failed restart doubles the wait.
type healthBook struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*serverHealth
}

type serverHealth struct {
	failures  int
	downUntil time.Time
}

func newHealthBook(now func() time.Time) *healthBook {
	return &healthBook{now: now, m: map[string]*serverHealth{}}
}

// down reports whether server is in its backoff window and how long is
// left.
func (h *healthBook) down(server string) (time.Duration, bool) {
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

// observe records the outcome of one upstream call. cancelled calls say
// nothing about the server.
func (h *healthBook) observe(server string, err error, cancelled bool) {
	if cancelled {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil || !connectionLost(err) {
		delete(h.m, server)
		return
	}
	s := h.m[server]
	if s == nil {
		s = &serverHealth{}
		h.m[server] = s
	}
	wait := backoffMin << min(s.failures, 16)
	wait = min(wait, backoffMax)
	s.failures++
	s.downUntil = h.now().Add(wait)
}

// snapshot returns the servers currently in backoff.
func (h *healthBook) snapshot() map[string]time.Duration {
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

// inflight counts the tool calls being served; once closed it admits no
// more.
type inflight struct {
	mu     sync.Mutex
	n      int
	closed bool
	idle   chan struct{}
}

func (f *inflight) enter() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.n++
	return true
}

func (f *inflight) leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.n == 0 && f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
}

// drain admits no more calls and waits until none is running or ctx ends;
// it reports whether every call finished.
func (f *inflight) drain(ctx context.Context) bool {
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

// count returns the number of calls running.
func (f *inflight) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// isClosed reports whether drain has begun.
func (f *inflight) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// close admits no more calls.
func (f *inflight) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
}

// add counts one more, even after drain began.
func (f *inflight) add() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
}
