package console

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Failed logins are throttled per client address: after MaxFailedLogins
// failures within FailedLoginWindow of the first, every login from that
// address is refused with 429 until the window ends, the right token
// included (or the throttle would still answer guesses).
const (
	MaxFailedLogins   = 10
	FailedLoginWindow = time.Minute
	// maxThrottled bounds the addresses tracked at once; past it, after
	// forgetting the windows that ended, a login from an address not yet
	// tracked is refused (see throttle.fail).
	maxThrottled = 10_000
)

// throttle counts failed logins per client address: an IPv4 address, or
// an IPv6 address's /64 (what one client usually holds).
type throttle struct {
	mu    sync.Mutex
	fails map[netip.Prefix]*failures
}

type failures struct {
	n     int
	since time.Time // the window's first failure
}

// clientKey is the throttle's key for a request's remote address, false
// when it cannot be read.
func clientKey(r *http.Request) (netip.Prefix, bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}, false
	}
	a = a.Unmap()
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, err := a.Prefix(bits)
	return p, err == nil
}

// wait returns how long logins from key stay refused; 0 means they are
// not.
func (t *throttle) wait(key netip.Prefix, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.fails[key]
	if f == nil {
		return 0
	}
	end := f.since.Add(FailedLoginWindow)
	if !now.Before(end) {
		delete(t.fails, key)
		return 0
	}
	if f.n < MaxFailedLogins {
		return 0
	}
	return end.Sub(now)
}

// fail counts a failed login from key. It reports false when the
// address could not be tracked (too many addresses failing at once): the
// caller then treats it as throttled, failing closed.
func (t *throttle) fail(key netip.Prefix, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fails == nil {
		t.fails = map[netip.Prefix]*failures{}
	}
	f := t.fails[key]
	if f != nil && !now.Before(f.since.Add(FailedLoginWindow)) {
		f = nil
	}
	if f == nil {
		if len(t.fails) >= maxThrottled {
			for k, old := range t.fails {
				if !now.Before(old.since.Add(FailedLoginWindow)) {
					delete(t.fails, k)
				}
			}
			if len(t.fails) >= maxThrottled {
				return false
			}
		}
		f = &failures{since: now}
		t.fails[key] = f
	}
	f.n++
	return true
}
