package relay

//lint:file-ignore SA1019 relaying sampling, elicitation, roots and logging (deprecated by SEP-2577, still in 2025-11-25) is this package's job.

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// session is one calling session of the go-sdk servers the relay is set up
// on.
type session struct {
	ss     *mcp.ServerSession
	caller *Caller
	mu     sync.Mutex
	active map[uint64]context.Context // requests being served, for routing
	local  bool                       // served by the stdio server
	// stateless: the session lasts one request (Options.Stateless, or a
	// 2026-07-28 caller); nothing upstream is kept for it.
	stateless bool
	userID    string       // the token's user on the session's first request
	protocol  string       // the negotiated revision
	toolsSeen bool         // tools/list or tools/call went through the go-sdk
	lastSeen  atomic.Int64 // Unix ns of the last request the go-sdk served
}

// Begin registers a request being served for its session (so upstream
// traffic about it travels on the request's own stream) and returns the
// session's caller and the function that ends the registration. Call it
// around tools/call.
func (r *Relay) Begin(ctx context.Context, req mcp.Request) (*Caller, func()) {
	sess := r.session(req)
	if sess == nil {
		return nil, func() {}
	}
	id := r.seq.Add(1)
	sess.mu.Lock()
	sess.active[id] = ctx
	sess.mu.Unlock()
	return sess.caller, func() {
		sess.mu.Lock()
		delete(sess.active, id)
		sess.mu.Unlock()
	}
}

// routeCtx is the context upstream traffic for sess is sent with: the
// context of a request of this session being served (its response stream),
// else a background one (the session's standalone stream).
func (sess *session) routeCtx(ctx context.Context) context.Context {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	var best context.Context
	var bestID uint64
	for id, c := range sess.active {
		if c.Err() == nil && id >= bestID {
			best, bestID = c, id
		}
	}
	if best != nil {
		return best
	}
	return context.WithoutCancel(ctx)
}

// session returns the state of the request's session, making it on first
// sight (the middleware sees every request first and says whether it is
// the stdio server's: sessionOf).
func (r *Relay) session(req mcp.Request) *session { return r.sessionOf(req, false) }

func (r *Relay) sessionOf(req mcp.Request, local bool) *session {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss == nil {
		return nil
	}
	r.smu.Lock()
	defer r.smu.Unlock()
	if s := r.sessions[ss]; s != nil {
		return s
	}
	s := &session{ss: ss, active: map[uint64]context.Context{}, local: local, stateless: r.o.Stateless && !local}
	caller := &Caller{id: "s" + strconv.FormatUint(r.seq.Add(1), 36)}
	ip := ss.InitializeParams()
	if ip == nil || ip.ProtocolVersion >= "2026-07-28" {
		s.stateless = true
	}
	if ip != nil && ip.ProtocolVersion >= "2026-07-28" && !local {
		// A request of its own: it answers input requests itself.
		caller.takesInput, caller.inputCaps = true, ip.Capabilities
	}
	if ip != nil {
		s.protocol = ip.ProtocolVersion
	}
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		s.userID = ex.TokenInfo.UserID
	}
	if ip != nil && ip.Capabilities != nil && !s.stateless {
		caps := ip.Capabilities
		caller.capabilities = caps
		// Server-initiated requests reach a stateful caller only through an
		// upstream session of its own.
		caller.dedicated = caps.Sampling != nil || caps.Elicitation != nil
	}
	caller.handlers = handlers{
		createMessage: func(ctx context.Context, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
			return ss.CreateMessageWithTools(s.routeCtx(ctx), p)
		},
		elicit: func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return ss.Elicit(s.routeCtx(ctx), p)
		},
		listRoots: func(ctx context.Context, p *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
			return ss.ListRoots(s.routeCtx(ctx), p)
		},
		log: func(ctx context.Context, p *mcp.LoggingMessageParams) {
			_ = ss.Log(s.routeCtx(ctx), p)
		},
		progress: func(ctx context.Context, p *mcp.ProgressNotificationParams) {
			_ = ss.NotifyProgress(s.routeCtx(ctx), p)
		},
		updated: func(p *mcp.ResourceUpdatedNotificationParams) { notifyUpdated(ss, p) },
	}
	s.caller = caller
	r.sessions[ss] = s
	id := ss.ID()
	if id != "" && !s.stateless && !local {
		r.byID[id] = s
	}
	go func() {
		_ = ss.Wait()
		r.smu.Lock()
		delete(r.sessions, ss)
		if r.byID[id] == s {
			delete(r.byID, id)
		}
		r.smu.Unlock()
		// Marked released first: a request of the session that is still
		// on its way (or a caller that never forwarded anything, so has
		// no state to release) registers nothing after this.
		r.mu.Lock()
		caller.released.Store(true)
		r.mu.Unlock()
		r.release(caller.id)
	}()
	return s
}

// allowFunc reports whether a caller may see a server's resources and
// prompts.
type allowFunc func(server string) bool

func (f allowFunc) allows(server string) bool { return f == nil || f(server) }

// callerOf returns the request's session and the server filter of its
// subject.
func (r *Relay) callerOf(ctx context.Context, req mcp.Request, local bool) (*session, allowFunc) {
	sess := r.session(req)
	if sess == nil {
		sess = &session{active: map[uint64]context.Context{}}
	}
	subject, ok := "", true
	if r.o.Subject != nil {
		subject, ok = r.o.Subject(ctx, req, local)
	}
	allow := func(server string) bool {
		return ok && (r.o.Visible == nil || r.o.Visible(server, subject, req, local))
	}
	return sess, allow
}

// limit asks Options.Limit about a request of the caller's subject.
func (r *Relay) limit(ctx context.Context, req mcp.Request, local bool, method string) error {
	if r.o.Limit == nil {
		return nil
	}
	subject, ok := "", true
	if r.o.Subject != nil {
		subject, ok = r.o.Subject(ctx, req, local)
	}
	if !ok {
		return nil // an unplaced caller sees nothing: the request fails as for an unknown name
	}
	return r.o.Limit(ctx, subject, method)
}

// isLocal reports whether the request's session is served over stdio.
func (r *Relay) isLocal(req mcp.Request) bool {
	sess := r.session(req)
	if sess == nil {
		return false
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.local
}

// Direct is what a byte path in front of the go-sdk's server needs of a
// calling session.
type Direct struct {
	// Caller is the session's caller.
	Caller *Caller
	// UserID is the verified token's user the session was opened with
	// ("" without auth): a request with another token is not the
	// session's.
	UserID string
	// ProtocolVersion is the revision the session asked for in initialize
	// (the one its requests carry once negotiated).
	ProtocolVersion string
	// LastSeen is when the go-sdk last served a request of the session
	// (its idle timer runs from there).
	LastSeen time.Time
	// ClientCapabilities are what the session announced in initialize.
	ClientCapabilities *mcp.ClientCapabilities
}

// Direct returns the stateful HTTP session id when its tools/call requests
// may bypass the go-sdk's server: the session is initialized and has
// listed or called tools through it, is not the stdio one, keeps state
// across requests (a revision before 2026-07-28, not Options.Stateless),
// and has no upstream sessions of its own (it advertised neither sampling
// nor elicitation and set no logging level), so nothing upstream can need
// to reach it during a call. ok=false for any other or unknown session.
func (r *Relay) Direct(id string) (Direct, bool) {
	r.smu.Lock()
	s := r.byID[id]
	r.smu.Unlock()
	if s == nil {
		return Direct{}, false
	}
	s.mu.Lock()
	ok := s.toolsSeen && !s.local && !s.stateless
	s.mu.Unlock()
	if !ok || !r.shares(s.caller) {
		return Direct{}, false
	}
	return Direct{Caller: s.caller, UserID: s.userID, ProtocolVersion: s.protocol, LastSeen: time.Unix(0, s.lastSeen.Load()),
		ClientCapabilities: s.caller.capabilities}, true
}

// PerRequest returns the caller of one request at revision (2026-07-28 or
// later) that a byte path serves without the go-sdk's server, and the
// function that ends it: the caller Begin gives such a request served
// through the go-sdk, a new one each time, which answers input requests
// itself for caps (its request's _meta), keeps nothing upstream, and, as
// the go-sdk's session of such a request, refuses a server's request sent
// to it outside a multi round-trip result.
func (r *Relay) PerRequest(revision string, caps *mcp.ClientCapabilities) (*Caller, func()) {
	refuse := func(method string) error {
		return fmt.Errorf("%q cannot be sent while serving a request on protocol version %s: "+
			"return an InputRequests map instead (multi round-trip requests, SEP-2322)", method, revision)
	}
	caller := &Caller{id: "s" + strconv.FormatUint(r.seq.Add(1), 36), takesInput: true, inputCaps: caps}
	caller.handlers = handlers{
		createMessage: func(context.Context, *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
			return nil, refuse("sampling/createMessage")
		},
		elicit: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return nil, refuse("elicitation/create")
		},
		listRoots: func(context.Context, *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
			return nil, refuse("roots/list")
		},
	}
	return caller, func() {
		// As when a go-sdk session ends (sessionOf).
		r.mu.Lock()
		caller.released.Store(true)
		r.mu.Unlock()
		r.release(caller.id)
	}
}
