package server

//lint:file-ignore SA1019 a session's log level (deprecated by SEP-2577, still in 2025-11-25) is part of what a replica rebuilds.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/store"
)

// sessionCheck is how often a replica touches a session it holds in the
// store, at most: the touch keeps the session's row alive while this
// replica serves it, and tells the replica when another one ended the
// session (an HTTP DELETE there). A DELETE on one replica ends the
// session on the others by their first request after this long.
const sessionCheck = 5 * time.Second

// sessionSweep is how often, at most, an initialize deletes the rows of
// sessions that expired.
const sessionSweep = time.Minute

// foreverLife is the stored life of a session whose handler never closes
// idle sessions (HTTPOptions.IdleTimeout negative), renewed by its
// requests.
const foreverLife = 24 * time.Hour

// savedSession is what a session's row holds for rebuilding it: the
// go-sdk's state of an initialized session, and what changed since.
type savedSession struct {
	Initialize *mcp.InitializeParams `json:"initialize"`
	Protocol   string                `json:"protocol"`
	replicated
}

// replicated is the part of a session's row that changes after its
// initialize, on whichever replica serves the request that changes it
// (sessionstream.go).
type replicated struct {
	LogLevel mcp.LoggingLevel `json:"logLevel,omitempty"`
	// Subscriptions are the URIs the caller subscribed to, in the order
	// subscribed: the replica holding its standalone stream holds them.
	Subscriptions []string `json:"subscriptions,omitempty"`
	// Stream is the tag of the replica holding the caller's standalone
	// stream (with a Messenger only), "" when none is known to.
	Stream string `json:"stream,omitempty"`
}

// sharedSessions keeps a stateful HTTP handler's sessions in a store that
// replicas share ([HTTPOptions.Sessions]), so that any replica serves any
// session. A session opened here is served by the go-sdk's handler, as
// without a store, and recorded when its initialize succeeds. A request for
// a session this process does not hold is served by rebuilding the session
// from its row: a new go-sdk session on a transport of this handler's own,
// connected with the saved state (initialize parameters, revision, log
// level), which the go-sdk then treats as initialized. Upstream state of
// the caller (a gateway's upstream sessions) is made again as the session's
// requests need it.
type sharedSessions struct {
	st   store.SessionStore
	srv  *mcp.Server
	life time.Duration // a session's stored life without a request
	idle time.Duration // a rebuilt session closes here after this long without a request (0: never)
	// check is how often a held session is touched (sessionCheck, or a
	// quarter of life when shorter).
	check time.Duration
	now   func() time.Time
	log   *slog.Logger
	// inner serves a request on a session held here (dispatch in front
	// of the go-sdk's handler): how a log level set on another replica is
	// replayed into the session here.
	inner http.Handler
	seq   atomic.Int64 // numbers replayed requests
	// bus is the store as a Messenger, when it is one (sessionbus.go);
	// tag names this replica in the IDs of its requests to callers.
	bus       store.Messenger
	tag       string
	listening sync.Once
	listenErr error
	forwarded atomic.Int64 // answers sent to another replica
	// notes counts the notifications passed on to the replica holding
	// the caller's stream; notesDropped those too large to be.
	notes, notesDropped atomic.Int64
	// asked counts the requests passed on to the holder of the caller's
	// stream (sessionask.go).
	asked atomic.Int64
	// askTimes is the heartbeat of a request passed on when not the
	// constants' (nil; tests set it).
	askTimes atomic.Pointer[askTiming]

	mu        sync.Mutex
	held      map[string]*heldSession
	lastSweep time.Time
	// waits are the answers awaited from other replicas, by nonce: a
	// holder's ack of a change (tell) or its answer to a request passed
	// on (askHolder).
	waits map[string]chan []byte
	// beats are the heartbeats awaited of holders still asking, by nonce.
	beats map[string]chan struct{}
}

// heldSession is a session this process serves.
type heldSession struct {
	ss *mcp.ServerSession
	// asking ends, by endAsks, the requests other replicas passed on to
	// the caller through this session (askHere) when it closes: the
	// go-sdk's Close waits for them.
	asking  context.Context
	endAsks context.CancelFunc
	t       *mcp.StreamableServerTransport // nil: opened here, in the go-sdk handler's table
	subject string
	userID  string
	touched atomic.Int64 // when the row was last touched (Unix ns)
	timer   *time.Timer  // rebuilt sessions: closes ss when idle
	// streams counts the caller's standalone (GET) streams being served
	// here: this replica holds the stream while it is not 0.
	streams atomic.Int32
	// streamMu orders the stream's record in the row (took, let go);
	// following orders the making of the row's subscriptions here
	// (follow) and the caller's own subscribing here (subscribed).
	streamMu, following sync.Mutex

	mu    sync.Mutex
	saved savedSession
	// subs are the URIs the session here is subscribed to (true), or
	// failed to be when the row's subscriptions were made here (false).
	subs map[string]bool
	// streamTok is the verified token of the standalone stream's request
	// (nil without one): the credentials of what follow replays.
	streamTok *auth.TokenInfo
}

func newSharedSessions(st store.SessionStore, srv *mcp.Server, idle time.Duration, now func() time.Time, log *slog.Logger) *sharedSessions {
	life := idle
	if idle <= 0 {
		life = foreverLife
	}
	x := &sharedSessions{st: st, srv: srv, life: life, idle: max(idle, 0), check: min(sessionCheck, life/4), now: now, log: log, held: map[string]*heldSession{}, waits: map[string]chan []byte{},
		beats: map[string]chan struct{}{}}
	if m, ok := st.(store.Messenger); ok {
		x.bus, x.tag = m, newTag()
	}
	return x
}

// lookup returns the session id this process holds, or nil.
func (x *sharedSessions) lookup(id string) *heldSession {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.held[id]
}

// hold records h as the session id until its go-sdk session ends. When
// another request rebuilt the same session first, it returns that one.
func (x *sharedSessions) hold(id string, h *heldSession) (*heldSession, bool) {
	x.mu.Lock()
	if prev := x.held[id]; prev != nil {
		x.mu.Unlock()
		return prev, false
	}
	x.held[id] = h
	x.mu.Unlock()
	go func() {
		_ = h.ss.Wait()
		h.stopAsks()
		if h.timer != nil {
			h.timer.Stop()
		}
		x.mu.Lock()
		if x.held[id] == h {
			delete(x.held, id)
		}
		x.mu.Unlock()
	}()
	return h, true
}

// opened records a session the go-sdk's handler just initialized here.
// A store that fails leaves the session served by this process only
// (logged).
func (x *sharedSessions) opened(ctx context.Context, ss *mcp.ServerSession, subject Subject, userID string, params *mcp.InitializeParams, res *mcp.InitializeResult) {
	id := ss.ID()
	if id == "" || params == nil || res == nil {
		return
	}
	h := &heldSession{ss: ss, subject: string(subject), userID: userID, saved: savedSession{Initialize: params, Protocol: res.ProtocolVersion}, subs: map[string]bool{}}
	h.asking, h.endAsks = context.WithCancel(context.Background())
	now := x.now()
	h.touched.Store(now.UnixNano())
	if _, ok := x.hold(id, h); !ok {
		return
	}
	if err := x.put(ctx, id, h, now); err != nil {
		x.log.Error("server: the session was not stored: only this replica serves it", "err", err)
	}
	x.sweep(ctx, now)
}

// put writes h's row.
func (x *sharedSessions) put(ctx context.Context, id string, h *heldSession, now time.Time) error {
	h.mu.Lock()
	state, err := json.Marshal(h.saved)
	h.mu.Unlock()
	if err != nil {
		return err
	}
	return x.st.PutSession(context.WithoutCancel(ctx), store.Session{ID: id, Subject: h.subject, UserID: h.userID, State: state, ExpiresAt: now.Add(x.life)})
}

// sweep deletes expired rows, at most once a sessionSweep.
func (x *sharedSessions) sweep(ctx context.Context, now time.Time) {
	x.mu.Lock()
	due := now.Sub(x.lastSweep) >= sessionSweep
	if due {
		x.lastSweep = now
	}
	x.mu.Unlock()
	if !due {
		return
	}
	if _, err := x.st.SweepSessions(context.WithoutCancel(ctx), now); err != nil {
		x.log.Warn("server: sweeping expired sessions", "err", err)
	}
}

// setLevel records a session's new log level, so that a replica that
// rebuilds it filters log messages as this one does, and, with a
// Messenger, tells every replica: the one holding the caller's standalone
// stream follows the row, and one holding a copy of the session takes the
// level at once (levelChanged), not at its next check, so that a call it
// runs next logs at the caller's level.
func (x *sharedSessions) setLevel(ctx context.Context, ss *mcp.ServerSession, level mcp.LoggingLevel) {
	h := x.lookup(ss.ID())
	if h == nil || h.ss != ss {
		return
	}
	h.mu.Lock()
	same := h.saved.LogLevel == level
	h.saved.LogLevel = level
	h.mu.Unlock()
	if same {
		return // a level replayed from the row (or set again)
	}
	_, _, err := x.update(ctx, ss.ID(), func(r *replicated) bool {
		changed := r.LogLevel != level
		r.LogLevel = level
		return changed
	})
	if err != nil {
		x.log.Warn("server: the session's log level was not stored: other replicas keep the one before", "err", err)
		return
	}
	if x.bus != nil {
		x.announceLevel(ctx, ss.ID(), level)
	}
}

// gate sits in front of the handler's inner chain (HTTPOptions.Inner, then
// dispatch): for a request on a session, it makes sure this process holds
// the session (rebuilding it from the store), that the request's user is
// the session's, and that the session is still live in the store; a DELETE
// ends it in the store for every replica.
func (x *sharedSessions) gate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(replayHeader) // only this process's own replays carry it
		id := r.Header.Get(sessionIDHeader)
		if id == "" {
			next.ServeHTTP(w, r)
			return
		}
		h := x.lookup(id)
		if h == nil {
			var status int
			if h, status = x.rebuild(r, id); status != 0 {
				writeStatus(w, status)
				return
			}
			if h == nil { // unknown or ended: the go-sdk answers 404
				next.ServeHTTP(w, r)
				return
			}
		}
		if !sameUser(r, h.userID) {
			http.Error(w, "session user mismatch", http.StatusForbidden)
			return
		}
		if x.bus != nil && r.Method == http.MethodPost && x.route(w, r, id) {
			return
		}
		now := x.now()
		if r.Method == http.MethodDelete {
			if _, err := x.st.CloseSession(r.Context(), id, now); err != nil {
				x.log.Error("server: the session's end was not stored: other replicas may serve it until it expires", "err", err)
			}
		} else if last := h.touched.Load(); now.UnixNano()-last >= int64(x.check) && h.touched.CompareAndSwap(last, now.UnixNano()) {
			if !x.refresh(r, id, h, now) {
				// Ended on another replica (or expired there): it ends
				// here too, and the request gets the go-sdk's 404.
				h.close()
				x.forget(id, h)
				next.ServeHTTP(w, r)
				return
			}
		}
		if h.timer != nil {
			h.timer.Reset(x.idle)
		}
		if r.Method == http.MethodGet {
			x.stream(w, r, id, h, next)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refresh re-reads the session's row and renews it: false when the
// session ended elsewhere. A log level set through another replica is
// replayed into the session here. A store that fails keeps the session
// served (logged).
func (x *sharedSessions) refresh(r *http.Request, id string, h *heldSession, now time.Time) bool {
	row, ok, err := x.st.Session(r.Context(), id, now)
	if err != nil {
		x.log.Warn("server: reading the session from the store", "err", err)
		return true
	}
	if !ok || row.Closed {
		return false
	}
	if _, err := x.st.TouchSession(r.Context(), id, now, now.Add(x.life)); err != nil {
		x.log.Warn("server: touching the session in the store", "err", err)
	}
	var saved savedSession
	if json.Unmarshal(row.State, &saved) != nil {
		return true
	}
	h.mu.Lock()
	stale := saved.LogLevel != "" && saved.LogLevel != h.saved.LogLevel
	if stale {
		h.saved.LogLevel = saved.LogLevel
	}
	h.saved.Subscriptions, h.saved.Stream = saved.Subscriptions, saved.Stream
	proto := h.saved.Protocol
	behind := h.streams.Load() > 0 && !h.subscribedTo(saved.Subscriptions)
	h.mu.Unlock()
	if stale {
		x.replayLevel(r, id, proto, saved.LogLevel)
	}
	if behind {
		// Holding the caller's stream, this replica holds its
		// subscriptions: one made or ended elsewhere (whose word did not
		// reach here, or without a Messenger) is followed now.
		x.follow(r.Context(), id, h, auth.TokenInfoFromContext(r.Context()))
	}
	return true
}

// replayLevel sets the session's log level here as its caller set it
// elsewhere: a logging/setLevel request of Gatehouse's own on the session,
// served like the caller's (the go-sdk's session and a gateway's relay
// learn the level from it), with the triggering request's credentials.
func (x *sharedSessions) replayLevel(r *http.Request, id, proto string, level mcp.LoggingLevel) {
	x.replay(r.Context(), id, proto, auth.TokenInfoFromContext(r.Context()), "logging/setLevel", map[string]any{"level": level})
}

// replay serves a request of Gatehouse's own on session id here, as a
// request of its caller with the verified token tok, marked as a replay.
func (x *sharedSessions) replay(ctx context.Context, id, proto string, tok *auth.TokenInfo, method string, params any) {
	x.replayAs(ctx, id, proto, "", tok, method, params)
}

// replayAs is replay for the caller userID when tok is nil (inject).
func (x *sharedSessions) replayAs(ctx context.Context, id, proto, userID string, tok *auth.TokenInfo, method string, params any) {
	p, err := json.Marshal(params)
	if err != nil {
		return
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"gatehouse-replay-%d","method":%q,"params":%s}`, x.seq.Add(1), method, p)
	x.inject(ctx, id, proto, userID, tok, true, []byte(body))
}

// inject serves body, a JSON-RPC message, on session id (of the caller
// userID, "" without authentication) through the handler's inner chain,
// as a message of the session's caller: with the verified token tok, or,
// when tok is nil, one of the session's user that a replica verified.
// replayed marks it as Gatehouse's own (replayHeader).
func (x *sharedSessions) inject(ctx context.Context, id, proto, userID string, tok *auth.TokenInfo, replayed bool, body []byte) {
	x.mu.Lock()
	inner := x.inner
	x.mu.Unlock()
	if inner == nil {
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/mcp", bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(sessionIDHeader, id)
	req.Header.Set("Mcp-Protocol-Version", proto)
	if replayed {
		req.Header.Set(replayHeader, "1")
	}
	req.Host = "localhost"
	var next http.Handler = inner
	if tok == nil && userID != "" {
		tok = &auth.TokenInfo{UserID: userID}
	}
	if tok != nil {
		// The go-sdk checks the session's user on every request: the
		// token was verified when it reached a replica (the copy lives a
		// minute, as long as this request).
		info := *tok
		info.Expiration = time.Now().Add(time.Minute)
		req.Header.Set("Authorization", "Bearer forwarded")
		next = auth.RequireBearerToken(func(context.Context, string, *http.Request) (*auth.TokenInfo, error) { return &info, nil }, nil)(inner)
	}
	next.ServeHTTP(&discardWriter{h: http.Header{}}, req)
}

// replayHeader marks a request Gatehouse serves on a session of its own
// accord (a log level or a subscription made again from the row); gate
// removes it from every request that comes from outside.
const replayHeader = "Gatehouse-Replay"

// discardWriter is the response writer of a replayed request.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      {}

// close ends the requests passed on through h, then its go-sdk session.
func (h *heldSession) close() {
	h.stopAsks()
	_ = h.ss.Close()
}

// stopAsks ends the requests passed on through h (none when h was made
// without asking).
func (h *heldSession) stopAsks() {
	if h.endAsks != nil {
		h.endAsks()
	}
}

// forget drops h as the session id.
func (x *sharedSessions) forget(id string, h *heldSession) {
	x.mu.Lock()
	if x.held[id] == h {
		delete(x.held, id)
	}
	x.mu.Unlock()
}

// rebuild serves session id here from its row. It returns nil and 0 when
// the store does not know the session (or it ended), and an HTTP status
// when the request cannot be served: 403 for another user's request, 503
// when the store cannot be read, 500 when the session cannot be made.
func (x *sharedSessions) rebuild(r *http.Request, id string) (*heldSession, int) {
	row, ok, err := x.st.Session(r.Context(), id, x.now())
	switch {
	case err != nil:
		x.log.Error("server: reading a session from the store", "err", err)
		return nil, http.StatusServiceUnavailable
	case !ok || row.Closed:
		return nil, 0
	case !sameUser(r, row.UserID):
		return nil, http.StatusForbidden
	}
	var saved savedSession
	if err := json.Unmarshal(row.State, &saved); err != nil || saved.Initialize == nil {
		x.log.Error("server: a stored session cannot be rebuilt; it is ended", "err", err)
		return nil, 0
	}
	t := &mcp.StreamableServerTransport{SessionID: id}
	ss, err := x.srv.Connect(r.Context(), t, &mcp.ServerSessionOptions{State: &mcp.ServerSessionState{
		InitializeParams:          saved.Initialize,
		InitializedParams:         &mcp.InitializedParams{},
		NegotiatedProtocolVersion: saved.Protocol,
		LogLevel:                  saved.LogLevel,
	}})
	if err != nil {
		x.log.Error("server: rebuilding a session", "err", err)
		return nil, http.StatusInternalServerError
	}
	h := &heldSession{ss: ss, t: t, subject: row.Subject, userID: row.UserID, saved: saved, subs: map[string]bool{}}
	h.asking, h.endAsks = context.WithCancel(context.Background())
	// Its row was read just now: the first touch is due a check later.
	h.touched.Store(x.now().UnixNano())
	if x.idle > 0 {
		h.timer = time.AfterFunc(x.idle, func() { h.close() })
	}
	held, mine := x.hold(id, h)
	if !mine {
		h.close() // another request rebuilt it first
		return held, 0
	}
	if saved.LogLevel != "" {
		// The go-sdk's session has it from the state; a gateway's relay
		// learns it from the request.
		x.replayLevel(r, id, saved.Protocol, saved.LogLevel)
	}
	return held, 0
}

// dispatch serves a request on a session this process rebuilt; every
// other request goes to the go-sdk's handler. It checks what the go-sdk's
// handler checks before handing a request to a session's transport.
func (x *sharedSessions) dispatch(sdk http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(sessionIDHeader)
		var h *heldSession
		if id != "" {
			h = x.lookup(id)
		}
		if h != nil && x.bus != nil && r.Method != http.MethodDelete && h.asks() {
			w = &tagWriter{ResponseWriter: w, tag: x.tag}
		}
		if h == nil || h.t == nil {
			sdk.ServeHTTP(w, r)
			return
		}
		if rebinding(r) {
			http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
			return
		}
		h.mu.Lock()
		proto := h.saved.Protocol
		h.mu.Unlock()
		if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && v != proto {
			http.Error(w, fmt.Sprintf("Bad Request: Unsupported protocol version (the session's is %s)", proto), http.StatusBadRequest)
			return
		}
		switch r.Method {
		case http.MethodDelete:
			h.close()
			x.forget(id, h)
			w.WriteHeader(http.StatusNoContent)
			return
		case http.MethodGet:
			if _, stream := accepts(r.Header.Values("Accept")); !stream {
				http.Error(w, "Accept must contain 'text/event-stream' for GET requests", http.StatusBadRequest)
				return
			}
		case http.MethodPost:
			if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
				http.Error(w, "Content-Type must be 'application/json'", http.StatusUnsupportedMediaType)
				return
			}
			if j, s := accepts(r.Header.Values("Accept")); !j || !s {
				http.Error(w, "Accept must contain both 'application/json' and 'text/event-stream'", http.StatusBadRequest)
				return
			}
		default:
			w.Header().Set("Allow", "GET, POST, DELETE")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		h.t.ServeHTTP(w, r)
	})
}

const sessionIDHeader = "Mcp-Session-Id"

// sameUser reports whether the request's verified token is userID's (a
// session opened without a token has userID "").
func sameUser(r *http.Request, userID string) bool {
	if userID == "" {
		return true
	}
	tok := auth.TokenInfoFromContext(r.Context())
	return tok != nil && tok.UserID == userID
}

func writeStatus(w http.ResponseWriter, status int) {
	msg := http.StatusText(status)
	switch status {
	case http.StatusForbidden:
		msg = "session user mismatch"
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
		msg = "the session store is unavailable; retry"
	}
	http.Error(w, msg, status)
}

// accepts is the go-sdk's reading of Accept: whether JSON and whether an
// event stream are accepted.
func accepts(values []string) (jsonOK, streamOK bool) {
	for _, v := range values {
		for raw := range strings.SplitSeq(v, ",") {
			base, _, _ := strings.Cut(raw, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}

// rebinding reports a request the go-sdk's DNS-rebinding protection
// refuses: arriving on a loopback address with a Host that is not one.
func rebinding(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && local != nil && isLoopback(local.String()) && !isLoopback(r.Host)
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// setInner sets the handler replayed requests go to (the first handler's).
func (x *sharedSessions) setInner(h http.Handler) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.inner == nil {
		x.inner = h
	}
}
