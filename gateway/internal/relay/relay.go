package relay

//lint:file-ignore SA1019 relaying sampling, elicitation, roots and logging (deprecated by SEP-2577, still in 2025-11-25) is this package's job.

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/inputstate"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/relay/internal/upsub"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// Options configure a Relay. A nil *Options means defaults.
type Options struct {
	// Subject returns the caller's subject for a request (local: served
	// by the stdio server), or ok=false when the caller cannot be placed.
	// Nil: every caller is the subject "".
	Subject func(ctx context.Context, req mcp.Request, local bool) (subject string, ok bool)
	// Visible reports whether subject, calling with req (local: served by
	// the stdio server), may see the resources and prompts of server: the
	// request is there for what its transport authenticated (a token's
	// own scopes). Nil: every server.
	Visible func(server, subject string, req mcp.Request, local bool) bool
	// Limit, when set, is asked before a request that reaches an upstream
	// on the caller's behalf (resources/read, resources/subscribe,
	// prompts/get, completion/complete, and resources/list,
	// resources/templates/list, prompts/list and logging/setLevel, which
	// list every server or may open a session to each) is forwarded; an
	// error refuses it and is the answer. tools/list is not limited (it
	// is answered from the tool map).
	Limit func(ctx context.Context, subject, method string) error
	// Subjects, when set, holds the servers whose content is each
	// subject's own: their resources/read, prompts/get and
	// completion/complete go on the session Subjects gives for the
	// caller's subject, and their resources/subscribe is refused (see
	// SubjectContent). Their lists (resources/list,
	// resources/templates/list, prompts/list: the catalog, judged for
	// drift) still come from their shared sessions. Nil: none.
	Subjects SubjectContent
	// Stateless tells that the HTTP server serves without sessions: each
	// request is a session of its own, so no HTTP caller gets upstream
	// sessions of its own, whatever it advertises or asks
	// (logging/setLevel).
	Stateless bool
	// Dropped, when set, is told of each upstream notification the relay
	// drops because it belongs to nothing of the server that sent it: a
	// progress notification with a token the relay did not send that
	// server for a call in progress, a resource update for a URI the
	// server does not publish. It must not block.
	Dropped func(server string, what Dropped)
	// UpstreamPerServer caps the upstream sessions of their own (see
	// Caller) that callers hold to one server, all callers together; 0
	// means DefaultUpstreamPerServer, a negative number no cap.
	// UpstreamPerSubject caps those the callers of one subject hold to one
	// server; 0 means DefaultUpstreamPerSubject, a negative number no cap.
	// The local (stdio) caller is not counted. A caller a cap refuses
	// shares the server's session: its calls work, but what needed a
	// session of its own does not reach it there (sampling, elicitation
	// and roots are refused as on any shared session; logging/setLevel
	// answers CodeUpstreamCap). It takes a slot on a later request once
	// one frees (a caller's slots free when its session ends).
	UpstreamPerServer, UpstreamPerSubject int
	// Capped, when set, is told when a cap first keeps a caller from a
	// session of its own to server (once per caller and server). It must
	// not block.
	Capped func(server string, why Capped)
	// Inputs seals the requestState of a server's input requests passed
	// on to a caller at 2026-07-28 and opens its retry's (input.go). Nil:
	// no caller is passed input requests.
	Inputs *inputstate.Sealer
	// Logger receives debug logs. Nil discards them.
	Logger *slog.Logger
}

// Relay carries MCP traffic between calling sessions and the servers of a
// toolset. Make one with Open; Close it.
type Relay struct {
	o    Options
	ts   *toolset.Toolset
	log  *slog.Logger
	life context.Context // ends at Close
	stop context.CancelFunc
	seq  atomic.Uint64 // caller IDs, request registrations

	mu        sync.Mutex
	callers   map[string]*callerState
	owners    map[*mcp.ClientSession]*callerState // dedicated sessions
	progress  map[progressKey]progressRoute       // (server, upstream token) -> caller
	uris      map[string]*toolset.Upstream        // resource URI -> server (collisions removed)
	templates []routedTemplate
	prompts   map[string]promptRoute // projected name -> server and remote name
	// Prompts and templates whose contract changed after trust: not
	// listed, their requests refused.
	qprompts   map[string]promptRoute
	qtemplates []routedTemplate
	subs       map[string]map[string]*callerState // URI -> caller ID -> caller (shared sessions)
	subMu      map[*toolset.Upstream]*sync.Mutex  // orders subscribes and last unsubscribes on a shared session
	slots      map[*toolset.Upstream]*slotCount   // callers' own upstream sessions (acquire)
	ups        *upsub.Book                        // the shared sessions' subscriptions upstream
	releasing  sync.WaitGroup                     // releases under way (Close waits for them)

	smu      sync.Mutex
	sessions map[*mcp.ServerSession]*session
	byID     map[string]*session // stateful HTTP sessions by Mcp-Session-Id
	servers  []*mcp.Server

	gmu   sync.Mutex
	gates map[*toolset.Upstream]*gateSet // the servers' capability-gated tools (Classify)
	caps  *mcp.ClientCapabilities        // what every upstream session announces

	rawIDs atomic.Uint64 // JSON-RPC IDs of CallBytes's requests
	bufs   sync.Pool     // CallBytes's read buffers (*[]byte)
	drains *drainer      // reads the ends of CallBytes's response streams
}

type routedTemplate struct {
	tmpl *uritemplate.Template
	up   *toolset.Upstream
	gen  uint64 // the server's Generation when listed
}

type promptRoute struct {
	up     *toolset.Upstream
	remote string
	gen    uint64 // the server's Generation when listed
}

// fresh reports whether no listing of the route's server was judged since
// the route was listed: a route to a prompt or template that was trusted
// then may have drifted since, so a stale one is listed (and judged)
// again before it is used.
func (r promptRoute) fresh() bool    { return r.gen == r.up.Generation() }
func (r routedTemplate) fresh() bool { return r.gen == r.up.Generation() }

// Open opens a toolset of servers (toolset.Open with tsOpts, whose
// SessionHooks must be unset: the relay sets them) and returns a Relay
// over it. Like toolset.Open it does no I/O.
func Open(ctx context.Context, servers []toolset.Server, tsOpts *toolset.Options, opts *Options) (*Relay, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	var to toolset.Options
	if tsOpts != nil {
		to = *tsOpts
	}
	if to.SessionHooks != nil {
		return nil, errors.New("relay: toolset.Options.SessionHooks is the relay's to set")
	}
	if to.ClientCapabilities == nil {
		// What the relay routes back to its callers: the servers list the
		// tools they offer such clients (see Classify).
		to.ClientCapabilities = RoutableCapabilities()
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Relay{
		o: o, log: log,
		callers: map[string]*callerState{}, owners: map[*mcp.ClientSession]*callerState{},
		progress: map[progressKey]progressRoute{}, uris: map[string]*toolset.Upstream{},
		prompts: map[string]promptRoute{}, qprompts: map[string]promptRoute{},
		subs: map[string]map[string]*callerState{}, subMu: map[*toolset.Upstream]*sync.Mutex{},
		slots: map[*toolset.Upstream]*slotCount{}, ups: upsub.New(upsub.Options{}),
		sessions: map[*mcp.ServerSession]*session{}, byID: map[string]*session{},
		gates: map[*toolset.Upstream]*gateSet{}, caps: to.ClientCapabilities,
		drains: newDrainer(),
	}
	r.life, r.stop = context.WithCancel(context.Background())
	to.SessionHooks = &toolset.SessionHooks{
		ListChanged:     r.onListChanged,
		ResourceUpdated: r.onResourceUpdated,
		Notification:    func(server, method string, params json.RawMessage) { r.routeFrom(server, nil, method, params) },
		Middleware:      r.sharedMiddleware,
		Reconnected:     r.resubscribe,
	}
	ts, err := toolset.Open(ctx, servers, &to)
	if err != nil {
		r.stop()
		return nil, err
	}
	r.ts = ts
	return r, nil
}

// Toolset returns the relay's toolset.
func (r *Relay) Toolset() *toolset.Toolset { return r.ts }

// Close releases every caller (their upstream sessions close), then
// closes the toolset.
func (r *Relay) Close() error {
	r.stop() // nothing more is sent on a caller's behalf
	r.drains.close()
	r.mu.Lock()
	ids := make([]string, 0, len(r.callers))
	for id := range r.callers {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	for _, id := range ids {
		r.release(id)
	}
	// A release another goroutine began (a session that ended) took its
	// caller out of r.callers before Close looked: wait until its upstream
	// sessions are closed too, before the toolset goes.
	r.releasing.Wait()
	return r.ts.Close()
}

// closed reports whether Close has begun.
func (r *Relay) closed() bool { return r.life.Err() != nil }

// lock returns the mutex that orders subscribes and last unsubscribes on
// u's shared session.
func (r *Relay) lock(u *toolset.Upstream) *sync.Mutex {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.subMu[u]
	if m == nil {
		m = &sync.Mutex{}
		r.subMu[u] = m
	}
	return m
}
