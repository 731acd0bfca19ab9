package relay

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// Defaults of Options.UpstreamPerServer and Options.UpstreamPerSubject.
const (
	DefaultUpstreamPerServer  = 64
	DefaultUpstreamPerSubject = 4
)

// Capped says which cap kept a caller from an upstream session of its own
// (Options.Capped).
type Capped string

const (
	// CappedServer: the server's callers hold Options.UpstreamPerServer
	// sessions of their own.
	CappedServer Capped = "server"
	// CappedSubject: the callers of the caller's subject hold
	// Options.UpstreamPerSubject sessions of their own to the server.
	CappedSubject Capped = "subject"
)

// placement is who a caller is, for the caps: its subject, or the local
// (stdio) caller, which is not counted.
type placement struct {
	subject string
	local   bool
}

// unplaced is the subject of a caller whose subject was never learned (or
// could not be): its sessions are counted under a subject of their own.
const unplaced = "\x00unplaced"

// slotCount is what the callers hold of one server's upstream sessions.
type slotCount struct {
	total     int
	bySubject map[string]int
}

// place learns the subject of a stateful session's caller on its first
// request (once: later requests of the session are the same token's).
func (r *Relay) place(ctx context.Context, req mcp.Request, local bool, c *Caller) {
	if c.placed.Load() != nil {
		return
	}
	p := &placement{local: local}
	if !local && r.o.Subject != nil {
		if s, ok := r.o.Subject(ctx, req, false); ok {
			p.subject = s
		} else {
			p.subject = unplaced
		}
	}
	c.placed.CompareAndSwap(nil, p)
}

func capOf(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

// acquire takes one of u's upstream-session slots for st's caller, or
// says which cap refused it. Called with st.mu held.
func (r *Relay) acquire(u *toolset.Upstream, st *callerState) (Capped, bool) {
	if st.held == nil {
		if st.held = st.caller.placed.Load(); st.held == nil {
			st.held = &placement{subject: unplaced}
		}
	}
	p := st.held
	if p.local {
		return "", true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.slots[u]
	if c == nil {
		c = &slotCount{bySubject: map[string]int{}}
		r.slots[u] = c
	}
	if n := capOf(r.o.UpstreamPerServer, DefaultUpstreamPerServer); n >= 0 && c.total >= n {
		return CappedServer, false
	}
	if n := capOf(r.o.UpstreamPerSubject, DefaultUpstreamPerSubject); n >= 0 && c.bySubject[p.subject] >= n {
		return CappedSubject, false
	}
	c.total++
	c.bySubject[p.subject]++
	return "", true
}

// free gives back a slot of u that p's caller held.
func (r *Relay) free(u *toolset.Upstream, p *placement) {
	if p == nil || p.local {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.slots[u]
	if c == nil {
		return
	}
	c.total--
	if c.bySubject[p.subject]--; c.bySubject[p.subject] <= 0 {
		delete(c.bySubject, p.subject)
	}
	if c.total <= 0 {
		delete(r.slots, u)
	}
}

// refused records that st's caller shares u's session because of a cap:
// logged and told to Options.Capped once per caller and server (a caller
// keeps asking on each request, and gets a slot once one frees). Called
// with st.mu held.
func (r *Relay) refused(u *toolset.Upstream, st *callerState, why Capped) {
	if st.capped == nil {
		st.capped = map[*toolset.Upstream]bool{}
	}
	if st.capped[u] {
		return
	}
	st.capped[u] = true
	r.log.Warn("relay: upstream session cap reached; the caller shares the server's session (no sampling, elicitation or log level of its own there)",
		"server", u.Name(), "subject", st.held.subject, "cap", string(why))
	if r.o.Capped != nil {
		r.o.Capped(u.Name(), why)
	}
}
