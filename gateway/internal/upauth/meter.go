package upauth

import (
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// DefaultConnectLimit is Options.ConnectLimit's default: requests to
// /connect/* a minute per client address. A person connecting an account
// makes two (the connect URL, the callback); the limit leaves room for
// retries and for a few people behind one address, and stops a client that
// hammers the endpoint (each request may take a flow, read the store and
// fetch the upstream's metadata) at 30 a minute.
const DefaultConnectLimit = 30

// maxMetered bounds the client addresses a meter remembers.
const maxMetered = 10000

// meter is a token bucket per client address: limit requests a minute, in
// bursts of limit. In memory: each replica meters what it serves.
type meter struct {
	limit float64
	mu    sync.Mutex
	addrs map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newMeter(limit int) *meter {
	return &meter{limit: float64(limit), addrs: map[string]*bucket{}}
}

// allow spends one request of addr's bucket at now; when it is empty it
// returns false and how long until it holds one again.
func (mt *meter) allow(addr string, now time.Time) (bool, time.Duration) {
	rate := mt.limit / float64(time.Minute) // tokens per ns
	mt.mu.Lock()
	defer mt.mu.Unlock()
	b := mt.addrs[addr]
	if b == nil {
		if len(mt.addrs) >= maxMetered {
			for a, o := range mt.addrs {
				if now.Sub(o.at) >= time.Minute { // full again: forgotten alike
					delete(mt.addrs, a)
				}
			}
			if len(mt.addrs) >= maxMetered {
				clear(mt.addrs)
			}
		}
		b = &bucket{tokens: mt.limit, at: now}
		mt.addrs[addr] = b
	}
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(mt.limit, b.tokens+float64(d)*rate)
		b.at = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / rate)
}

// clientAddr is what a /connect request is metered by: the address of the
// connection's peer (behind a proxy, the proxy's), an IPv6 address by its
// /64 (what one client typically holds).
func clientAddr(r *http.Request) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	a := ap.Addr().Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
