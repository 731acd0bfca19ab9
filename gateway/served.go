package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/bearer"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/stablelist"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// servedMap is the tool map the gateway serves: the toolset's tools,
// registered on every go-sdk server (the HTTP one and the stdio one), and
// who may see which (tools.allow/block and the tokens' scopes).
type servedMap struct {
	ts          *toolset.Toolset
	log         *slog.Logger
	allow, deny map[string]bool
	auth        *bearer.Authenticator
	search      *stablelist.Policy // gatehouse__search_tools and the stable list
	// gates, when set, says which tools a server offers only to clients
	// with sampling, elicitation or roots (the relay: relay.Classify).
	gates gates

	mu    sync.RWMutex
	tools map[string]toolset.ToolInfo
	// current is tools for the call path, read without the lock: refresh
	// publishes each new map here and never changes a published one.
	current atomic.Pointer[map[string]toolset.ToolInfo]
	servers []registered // every go-sdk server the tools are registered on
	// sizes is each served tool's size as listed, in bytes, when the
	// stable list depends on it (stablelist.Policy.Sizes).
	sizes map[string]int
}

// registered is a go-sdk server and the handler its tools get.
type registered struct {
	s       *mcp.Server
	handler mcp.ToolHandler
}

func newServedMap(ts *toolset.Toolset, log *slog.Logger, cfg *Config, auth *bearer.Authenticator) *servedMap {
	return &servedMap{ts: ts, log: log, allow: set(cfg.Tools.Allow), deny: set(cfg.Tools.Block), auth: auth, search: stablelist.New(&cfg.Search, &cfg.Disclosure)}
}

// tool returns the served tool called name. It takes no lock (it runs
// several times on every call; the RWMutex cost 1% of the gateway's CPU
// at 8 sessions).
func (m *servedMap) tool(name string) (toolset.ToolInfo, bool) {
	cur := m.current.Load()
	if cur == nil {
		return toolset.ToolInfo{}, false
	}
	t, ok := (*cur)[name]
	return t, ok
}

// gates learns and answers which tools a server offers only to clients
// with a capability (relay.Relay).
type gates interface {
	Classify(ctx context.Context, tools []toolset.ToolInfo)
	Allows(server, remote string, caps *mcp.ClientCapabilities) bool
}

// visible reports whether subject may see and call the tool: the tool is
// served, tools.allow/block let it through, the caller's scopes (of the
// request's token, info) cover it, and its session announced what the
// tool's server offers it for (gates: a tool a server lists only to
// clients with sampling, elicitation or roots).
func (m *servedMap) visible(name string, subject server.Subject, info server.RequestInfo) bool {
	t, ok := m.tool(name)
	if ok && m.gates != nil && !m.gates.Allows(t.Server, t.RemoteName, info.ClientCapabilities) {
		return false
	}
	if !ok {
		// The gateway's own search tool: every caller may call it, and it
		// answers only what the caller may see.
		return name == searchToolName && m.search.On
	}
	if name != toolset.DescribeToolName {
		if len(m.allow) > 0 && !m.allow[name] {
			return false
		}
		if m.deny[name] {
			return false
		}
	}
	return m.auth.Allows(string(subject), info.TokenInfo, name)
}

// serverVisible reports whether subject may see the resources and prompts
// of a server: when it may see at least one of the server's tools (with
// the scopes of the request's token, info).
func (m *servedMap) serverVisible(srv, subject string, info server.RequestInfo) bool {
	m.mu.RLock()
	var names []string
	for name, t := range m.tools {
		if t.Server == srv {
			names = append(names, name)
		}
	}
	m.mu.RUnlock()
	for _, name := range names {
		if m.visible(name, server.Subject(subject), info) {
			return true
		}
	}
	return false
}

// names returns the names of the served tools, sorted.
func (m *servedMap) names() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Sorted(maps.Keys(m.tools))
}

// add registers the served tools on one more go-sdk server, whose tools'
// calls go to handler.
func (m *servedMap) add(s *mcp.Server, handler mcp.ToolHandler) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := registered{s: s, handler: handler}
	m.servers = append(m.servers, r)
	for _, name := range slices.Sorted(maps.Keys(m.tools)) {
		m.register(r, m.tools[name])
	}
}

// mcpServers returns the go-sdk servers the tools are registered on.
func (m *servedMap) mcpServers() []*mcp.Server {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*mcp.Server, len(m.servers))
	for i, r := range m.servers {
		out[i] = r.s
	}
	return out
}

// register adds one tool to a go-sdk server; a tool the go-sdk refuses is
// logged and left out.
func (m *servedMap) register(r registered, t toolset.ToolInfo) {
	def := stablelist.Def(t)
	defer func() {
		if rec := recover(); rec != nil {
			m.log.Error("gateway: tool not served", "tool", t.Name, "reason", fmt.Sprint(rec))
		}
	}()
	r.s.AddTool(def, r.handler)
}

// refresh re-reads the toolset's tool map and updates what every session
// sees: new tools are added, changed ones replaced (a quarantined tool
// shows the toolset's text), withdrawn ones removed. The go-sdk tells
// clients with notifications/tools/list_changed.
//
// The snapshot is taken under the lock, so concurrent refreshes apply in
// order and the last one leaves the newest map.
func (m *servedMap) refresh(ctx context.Context) error {
	list, err := m.publish(ctx)
	if err == nil && m.gates != nil {
		// Which tools need a capability (only for servers whose tools
		// changed), learned once the map is out: a slow server delays no
		// quarantine. visible asks gates at each request.
		cctx, cancel := context.WithTimeout(ctx, classifyTimeout)
		m.gates.Classify(cctx, list)
		cancel()
	}
	return err
}

// classifyTimeout bounds refresh's learning of the capability-gated tools.
const classifyTimeout = 30 * time.Second

// publish is refresh's update of the map; it returns the toolset's tools.
func (m *servedMap) publish(ctx context.Context) ([]toolset.ToolInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	list, err := m.ts.Tools(ctx)
	if err != nil {
		return nil, err
	}
	list = slices.DeleteFunc(list, func(t toolset.ToolInfo) bool {
		if !m.search.Reserved(t) {
			return false
		}
		m.log.Error("gateway: tool not served: its name is the gateway's search tool; give its server another prefix", "tool", t.Name, "server", t.Server)
		return true
	})
	next := make(map[string]toolset.ToolInfo, len(list))
	for _, t := range list {
		next[t.Name] = t
	}
	var gone []string
	for name := range m.tools {
		if _, ok := next[name]; !ok {
			gone = append(gone, name)
		}
	}
	for _, r := range m.servers {
		if len(gone) > 0 {
			r.s.RemoveTools(gone...)
		}
		for _, t := range list {
			if old, ok := m.tools[t.Name]; !ok || old.ContractHash != t.ContractHash || old.State != t.State || old.Description != t.Description {
				m.register(r, t)
			}
		}
	}
	m.sizes = m.search.Sizes(list, m.tools, m.sizes)
	m.tools = next
	m.current.Store(&next)
	return list, nil
}

func set(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
