package relay

//lint:file-ignore SA1019 relaying sampling, elicitation and roots (deprecated by SEP-2577, still in 2025-11-25) is this package's job.

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// Capability-gated tools. A server may list some tools only to clients
// that announce a capability (server-everything: trigger-sampling-request
// to clients with sampling, trigger-elicitation-request with elicitation,
// get-roots-list with roots). The relay routes all three back to its
// callers, so the shared sessions announce all three
// (RoutableCapabilities) and their listing, the one judged and pinned,
// holds every such tool; so do the callers' own sessions, which announce
// the same, so their listings are the shared one (a listing that lacked
// the gated tools would read as drift). Which tool needs what is learned
// by listing the server on sessions that announce less (Classify), and a
// caller sees, and may call, a gated tool only when its own session
// announced what the tool needs (Allows).

// Needs is a set of client capabilities a tool is offered for.
type Needs uint8

// The capabilities a tool may be offered for.
const (
	NeedsSampling Needs = 1 << iota
	NeedsElicitation
	NeedsRoots
)

// RoutableCapabilities returns the client capabilities whose requests a
// relay routes back to its callers: sampling, elicitation and roots. Open
// has the shared sessions announce them unless toolset.Options says
// otherwise.
func RoutableCapabilities() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}, Elicitation: &mcp.ElicitationCapabilities{},
		RootsV2: &mcp.RootCapabilities{ListChanged: true}}
}

// NeedsOf returns what c announces (nil: nothing).
func NeedsOf(c *mcp.ClientCapabilities) Needs {
	var n Needs
	if c == nil {
		return 0
	}
	if c.Sampling != nil {
		n |= NeedsSampling
	}
	if c.Elicitation != nil {
		n |= NeedsElicitation
	}
	if c.RootsV2 != nil || c.Roots.ListChanged {
		n |= NeedsRoots
	}
	return n
}

// without returns c less the capability of one.
func without(c *mcp.ClientCapabilities, one Needs) *mcp.ClientCapabilities {
	cp := *c
	switch one {
	case NeedsSampling:
		cp.Sampling = nil
	case NeedsElicitation:
		cp.Elicitation = nil
	case NeedsRoots:
		cp.RootsV2, cp.Roots.ListChanged = nil, false
	}
	return &cp
}

// gateSet is what the relay learned of one server's gated tools.
type gateSet struct {
	key   string           // the served tools it was learned for
	needs map[string]Needs // remote name -> what a caller must announce
}

// classifyConcurrency bounds the servers Classify lists at once.
const classifyConcurrency = 4

// Classify learns which of the served tools each live server offers only
// to clients with sampling, elicitation or roots (tools are the served
// map, toolset.Toolset.Tools). A server is listed again only when its
// served tools changed since it was last learned: once on a session that
// announces nothing, and, when that listing lacks some tools, once more
// per capability the shared session announces, on a session that
// announces all but that one. A tool the first listing lacks needs each
// capability without which it is not listed (a tool listed whichever one
// is left out, e.g. one offered for sampling or elicitation, needs all
// of them). A server Classify cannot list has its tools shown to every
// caller (logged) until its tools change. A server that is not connected
// (woken from the store) is not connected for this.
func (r *Relay) Classify(ctx context.Context, tools []toolset.ToolInfo) {
	byServer := map[string][]string{}
	for _, t := range tools {
		if t.Server != "" {
			byServer[t.Server] = append(byServer[t.Server], t.RemoteName)
		}
	}
	ups, err := r.ts.Upstreams(ctx)
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, classifyConcurrency)
	for _, u := range ups {
		served := byServer[u.Name()]
		slices.Sort(served)
		key := strings.Join(served, "\x00")
		r.gmu.Lock()
		g := r.gates[u]
		r.gmu.Unlock()
		if (g != nil && g.key == key) || u.Live() == nil || len(served) == 0 {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			g, err := r.classify(ctx, u, served)
			if err != nil {
				// Not tried again until its tools change: a server that
				// cannot run twice is not started on every refresh.
				r.log.Warn("relay: listing a server for the capabilities its tools need; its tools are shown to every caller", "server", u.Name(), "err", err)
				g = &gateSet{}
			}
			g.key = key
			r.gmu.Lock()
			r.gates[u] = g
			r.gmu.Unlock()
		})
	}
	wg.Wait()
}

// classify lists u as Classify says.
func (r *Relay) classify(ctx context.Context, u *toolset.Upstream, served []string) (*gateSet, error) {
	g := &gateSet{}
	full := u.ClientCapabilities()
	if NeedsOf(full) == 0 {
		return g, nil // the shared session announces nothing: nothing is gated
	}
	base, err := u.ToolNamesFor(ctx, &mcp.ClientCapabilities{})
	if err != nil {
		return nil, err
	}
	var gated []string
	for _, name := range served {
		if !slices.Contains(base, name) {
			gated = append(gated, name)
		}
	}
	if len(gated) == 0 {
		return g, nil
	}
	g.needs = map[string]Needs{}
	for _, one := range []Needs{NeedsSampling, NeedsElicitation, NeedsRoots} {
		if NeedsOf(full)&one == 0 {
			continue
		}
		listed, err := u.ToolNamesFor(ctx, without(full, one))
		if err != nil {
			return nil, err
		}
		for _, name := range gated {
			if !slices.Contains(listed, name) {
				g.needs[name] |= one
			}
		}
	}
	for _, name := range gated {
		if g.needs[name] == 0 {
			g.needs[name] = NeedsOf(full)
		}
	}
	return g, nil
}

// needs returns what a caller must announce to see u's tool remote.
func (r *Relay) needs(u *toolset.Upstream, remote string) Needs {
	r.gmu.Lock()
	defer r.gmu.Unlock()
	if g := r.gates[u]; g != nil {
		return g.needs[remote]
	}
	return 0
}

// Needs returns what a caller must announce (in its initialize) to see
// and call the tool remote of server: 0 for a tool offered to every
// client, or one Classify has not learned of.
func (r *Relay) Needs(server, remote string) Needs {
	r.gmu.Lock()
	defer r.gmu.Unlock()
	for u, g := range r.gates {
		if u.Name() == server {
			return g.needs[remote]
		}
	}
	return 0
}

// Allows reports whether a caller that announced caps may see and call
// the tool remote of server.
func (r *Relay) Allows(server, remote string, caps *mcp.ClientCapabilities) bool {
	n := r.Needs(server, remote)
	return n == 0 || n&^NeedsOf(caps) == 0
}
