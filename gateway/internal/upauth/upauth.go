// Package upauth is whose token the gateway presents to an upstream MCP
// server that requires the MCP authorization flow (servers.NAME.auth):
//
//   - service: one token for the gateway, put in the vault by an operator
//     (`gatehouse connect NAME`); the shared upstream session uses it
//     ([Manager.ServiceOAuth]) and nothing interactive happens at run time;
//   - user: each subject connects its own account. A call from a subject
//     without a token is refused auth_required with a connect URL on the
//     gateway ([Manager.Check]); the URL runs the authorization-code grant
//     against the upstream's authorization server ([Manager.ServeHTTP]) and
//     stores the token set for (server, subject); calls go upstream on a
//     session of that subject's own, with that subject's token
//     ([Manager.CallTool]);
//   - exchange: the caller's verified token is exchanged (RFC 8693) for one
//     whose audience is the upstream ([Manager.CallTool] with the caller's
//     token).
//
// Token sets are kept by an upstream.TokenStore (the gateway's vault);
// pending connect flows by a [Flows] (single use across replicas). Every
// request to an upstream, its metadata, its authorization server and its
// token endpoint goes through the egress guard.
package upauth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/relay"
	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/internal/egress"
	"github.com/gatehouse-dev/gatehouse/refusal"
)

// The modes, as servers.NAME.auth spells them.
const (
	Service  = "service"
	User     = "user"
	Exchange = "exchange"
)

// Server is one upstream with an auth mode.
type Server struct {
	// Name is the server's name in the config.
	Name string
	// URL is its MCP endpoint (streamable HTTP), the resource its tokens
	// are for.
	URL string
	// Mode is Service, User or Exchange.
	Mode string
	// ClientID and ClientSecret are the gateway's client at the upstream's
	// authorization server (service, user) or at the exchange's token
	// endpoint (exchange). ClientSecret empty: a public client.
	ClientID, ClientSecret string
	// ClientMetadataURL is the gateway's Client ID Metadata Document
	// (service, user).
	ClientMetadataURL string
	// Scopes, when set, are asked for instead of the discovered ones.
	Scopes []string
	// TokenURL, Audience and Resource are the exchange's (exchange):
	// Audience and Resource default to URL.
	TokenURL, Audience, Resource string
	// Headers are the server's static headers, sent to its origin only.
	Headers map[string]string
	// SharedContent (user, exchange) makes the server's resources,
	// prompts and completions the same for every caller: read through the
	// shared session, not each subject's own ([Manager.OwnContent]).
	SharedContent bool
}

// Flow is a pending connect flow: created with auth_required (State
// empty), then, once its URL is opened, the authorization in progress
// (State holding the PKCE verifier and what the callback checks). Each is
// used once.
type Flow struct {
	ID, Server, Subject string
	State               []byte
	ExpiresAt           time.Time
}

// Flows keeps pending connect flows. TakeFlow returns and removes a flow
// atomically: a second take of the same ID, an expired flow or an unknown
// one returns ok=false. Implementations must be safe for concurrent use,
// and across replicas when they share a store.
type Flows interface {
	PutFlow(ctx context.Context, f Flow) error
	TakeFlow(ctx context.Context, id string, now time.Time) (Flow, bool, error)
}

// Options configure a [Manager].
type Options struct {
	// Servers are the upstreams with an auth mode.
	Servers []Server
	// Tokens keeps the token sets per (server, subject); Subject "" is the
	// service connection.
	Tokens upstream.TokenStore
	// Flows keeps the pending connect flows (required with a user server).
	Flows Flows
	// PublicURL is the gateway's base URL as browsers reach it: connect
	// URLs are PublicURL/connect/NAME?flow=ID and the redirect URI is
	// PublicURL/connect/callback.
	PublicURL string
	// FlowTTL is how long a connect URL, and then an authorization in
	// progress, stays usable (default 10m). A subject's refused calls get
	// the same connect URL while more than half of it is left.
	FlowTTL time.Duration
	// ConnectLimit is how many requests to /connect/* (connect URLs and
	// callbacks) one client address may make a minute, in bursts of as
	// many (an IPv6 address counts by its /64); past it the answer is 429
	// with Retry-After. 0 is DefaultConnectLimit; negative: no limit.
	ConnectLimit int
	// AllowedHosts and LookupIP configure the egress guard (as the
	// toolset's).
	AllowedHosts []string
	LookupIP     func(ctx context.Context, host string) ([]netip.Addr, error)
	// Subject returns the gateway subject of a /connect request that
	// carries credentials (a bearer token): ok=false without any, err for
	// credentials that do not verify. A request whose subject is not the
	// flow's is refused.
	Subject func(r *http.Request) (subject string, ok bool, err error)
	// Prove is how a connect URL's browser proves it is the flow's
	// subject (prove.go); nil only without auth (one local subject).
	Prove *Prove
	// Record, when set, is told each connect flow's end: a connection
	// made, or a proof of another identity (the audit trail).
	Record func(ConnectEvent)
	// Judge, when set, judges each subject's upstream session against its
	// server's trusted contracts: before its first call, and again when it
	// announces a changed tool list. A session it refuses is closed and the
	// call is answered with its error.
	Judge SessionJudge
	// Logger receives what the manager logs (never a token). Nil discards.
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// SessionJudge judges a server's sessions other than its shared one (the
// gateway's toolset: toolset.Upstream.Judge and Changed, by server name).
type SessionJudge interface {
	// JudgeSession lists sess and judges it: nil, or why it is refused
	// (it is closed then).
	JudgeSession(ctx context.Context, server string, sess *mcp.ClientSession) error
	// SessionChanged has sess judged again, in the background.
	SessionChanged(server string, sess *mcp.ClientSession)
}

// Manager authorizes the gateway toward its upstreams per [Options]. Its
// methods are safe for concurrent use. Close it.
type Manager struct {
	o       Options
	servers map[string]*Server
	guard   *egress.Guard
	log     *slog.Logger
	now     func() time.Time

	mu       sync.Mutex
	sessions map[sessionKey]*subjectSession
	closed   bool
	exch     map[exchangeKey]exchanged // exchanged tokens until their expiry
	open     map[key]*openFlow         // the connect flow handed out last (openflows.go)
	meter    *meter                    // /connect/* requests per client address
}

type key struct{ server, subject string }

// sessionKey names one of a subject's sessions to a server: input, for
// the requests of callers that answer a server's input requests
// themselves (relay.PassesInput), whose session passes them on; the
// other's client asks the caller of the request (relay.SubjectClient).
type sessionKey struct {
	key
	input bool
}

// subjectSession is a subject's own upstream session to a server.
type subjectSession struct {
	once sync.Once
	sess *mcp.ClientSession
	err  error
	// bearer is the exchanged token of the subject's last call (exchange
	// mode): the one requests of no call carry (exchangedHeader).
	bearer atomic.Pointer[string]
	used   atomic.Int64 // Unix ns of its last use, for the bound
}

// MaxSubjectSessions bounds the per-subject upstream sessions a Manager
// keeps open: past it, the least recently used is closed (made again on
// its subject's next call).
const MaxSubjectSessions = 1024

// DefaultFlowTTL is Options.FlowTTL's default.
const DefaultFlowTTL = 10 * time.Minute

// New returns a Manager. It checks the options; it connects nothing.
func New(opts *Options) (*Manager, error) {
	if opts == nil {
		return nil, errors.New("upauth: options are required")
	}
	m := &Manager{o: *opts, servers: map[string]*Server{}, sessions: map[sessionKey]*subjectSession{}, exch: map[exchangeKey]exchanged{},
		open: map[key]*openFlow{}, log: opts.Logger, now: opts.Now}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.o.FlowTTL <= 0 {
		m.o.FlowTTL = DefaultFlowTTL
	}
	switch {
	case m.o.ConnectLimit == 0:
		m.meter = newMeter(DefaultConnectLimit)
	case m.o.ConnectLimit > 0:
		m.meter = newMeter(m.o.ConnectLimit)
	}
	if opts.Tokens == nil {
		return nil, errors.New("upauth: a token store is required")
	}
	m.guard = egress.New(&egress.Options{AllowedHosts: opts.AllowedHosts, LookupIP: opts.LookupIP})
	for i := range opts.Servers {
		s := opts.Servers[i]
		switch s.Mode {
		case Service, Exchange:
		case User:
			if opts.Flows == nil || opts.PublicURL == "" {
				return nil, fmt.Errorf("upauth: server %q has auth: user, which needs Flows and PublicURL", s.Name)
			}
		default:
			return nil, fmt.Errorf("upauth: server %q: unknown mode %q", s.Name, s.Mode)
		}
		if s.Mode == Exchange {
			if s.Audience == "" {
				s.Audience = s.URL
			}
			if s.Resource == "" {
				s.Resource = s.URL
			}
		}
		m.servers[s.Name] = &s
	}
	return m, nil
}

// Mode returns the auth mode of server ("" when it has none).
func (m *Manager) Mode(server string) string {
	if m == nil {
		return ""
	}
	if s := m.servers[server]; s != nil {
		return s.Mode
	}
	return ""
}

// PerSubject (false on a nil Manager) reports whether calls to server go on sessions of each
// caller's own (user, exchange) rather than the shared one.
func (m *Manager) PerSubject(server string) bool {
	if m == nil {
		return false
	}
	mode := m.Mode(server)
	return mode == User || mode == Exchange
}

// ErrNotConnected is returned when the gateway has no token for an
// upstream that needs one it cannot get by itself (service mode without
// `gatehouse connect`, user mode at run time).
var ErrNotConnected = errors.New("upauth: not connected")

// noFetch is the Fetcher of the gateway's own handlers: nobody is there
// to open a browser at run time.
func noFetch(server, how string) upstream.Fetcher {
	return func(context.Context, *http.Client, *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		return nil, fmt.Errorf("%w: server %q has no stored token; %s", ErrNotConnected, server, how)
	}
}

// handlerOptions are the upstream.Options of the gateway's handlers for
// (s, subject): its client, the vault, no interactive fetch.
func (m *Manager) handlerOptions(s *Server, subject, how string) *upstream.Options {
	o := &upstream.Options{
		RedirectURL:         m.redirectURL(),
		ClientIDMetadataURL: s.ClientMetadataURL,
		Fetch:               noFetch(s.Name, how),
		Tokens:              m.o.Tokens, Server: s.Name, Subject: subject,
		StoreError: func(err error) { m.log.Warn("upauth: storing a token", "server", s.Name, "err", err) },
	}
	if s.ClientID != "" {
		o.Client = clientCredentials(s.ClientID, s.ClientSecret)
	}
	if len(s.Scopes) > 0 {
		sc := s.Scopes
		o.Scopes = func([]string) []string { return sc }
	}
	return o
}

func clientCredentials(id, secret string) *oauthex.ClientCredentials {
	c := &oauthex.ClientCredentials{ClientID: id}
	if secret != "" {
		c.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
	}
	return c
}

func (m *Manager) redirectURL() string {
	if m.o.PublicURL == "" {
		return "http://127.0.0.1/callback" // never used: nothing is fetched
	}
	return strings.TrimSuffix(m.o.PublicURL, "/") + CallbackPath
}

// ServiceOAuth returns toolset.Server.OAuth for server's shared session:
// an upstream.Handler over the service connection (subject ""), refreshed
// and written back to the vault, never authorizing interactively. A
// server without a service connection is skipped by the toolset with an
// error that names `gatehouse connect NAME`. For a user server, the
// shared session (its tool catalog, drift, resources) goes through the
// service connection too. For an exchange server it is the gateway's own
// token, by the client_credentials grant of the exchange's client at its
// token endpoint (nobody's token exchanged). nil for a server without a
// mode.
func (m *Manager) ServiceOAuth(server string) func(hc *http.Client) (auth.OAuthHandler, error) {
	s := m.servers[server]
	if s == nil {
		return nil
	}
	if s.Mode == Exchange {
		return m.exchangeListing(s)
	}
	how := fmt.Sprintf("run `gatehouse connect %s` to connect the gateway's account", server)
	return upstream.Factory(m.handlerOptions(s, "", how))
}

// Check (nil on a nil Manager) is the gate of a call to a user server for subject: nil when the
// subject has a token set, else an auth_required refusal whose connect URL
// starts a flow bound to subject: the one it handed out last while it is
// open (unused, more than half of FlowTTL left), else a new one. The store
// is read on every call, so a revoked connection is refused at once (and
// the subject's session closed).
func (m *Manager) Check(ctx context.Context, server, subject string) (*refusal.Error, error) {
	if m == nil {
		return nil, nil
	}
	s := m.servers[server]
	if s == nil || s.Mode != User {
		return nil, nil
	}
	set, err := m.o.Tokens.Token(ctx, server, subject)
	if err != nil {
		return nil, fmt.Errorf("upauth: reading the connection of %q: %w", server, err)
	}
	if set != nil {
		return nil, nil
	}
	m.drop(key{server, subject})
	id, left, err := m.openFlow(ctx, server, subject)
	if err != nil {
		return nil, err
	}
	u := strings.TrimSuffix(m.o.PublicURL, "/") + ConnectPath + url.PathEscape(server) + "?flow=" + id
	return &refusal.Error{Code: refusal.AuthRequired, ConnectURL: u,
		Message: fmt.Sprintf("server %s needs your own account connected: open the connectURL (within %v, once), then retry the call", server, left.Round(time.Second))}, nil
}

// CallTool sends a tools/call to server on subject's own upstream session
// ([Manager.WithSession]: created on first use; user mode: with subject's
// token from the vault, refreshed there; exchange mode: with callerToken
// exchanged). A lost session is re-established once. Errors of the
// connection are wrapped in [SessionError].
func (m *Manager) CallTool(ctx context.Context, server, subject, callerToken string, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	var res *mcp.CallToolResult
	err := m.WithSession(ctx, server, subject, callerToken, func(ctx context.Context, sess *mcp.ClientSession) error {
		var err error
		res, err = sess.CallTool(ctx, p)
		return err
	})
	return res, err
}

// SessionError is a per-subject upstream session that could not be made.
type SessionError struct {
	Server string
	Err    error
}

func (e *SessionError) Error() string {
	return fmt.Sprintf("upauth: connecting %s: %v", e.Server, e.Err)
}

func (e *SessionError) Unwrap() error { return e.Err }

func lost(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, mcp.ErrSessionMissing)
}

// session returns k's session, connecting it once.
func (m *Manager) session(ctx context.Context, s *Server, k sessionKey, bearer string) (*mcp.ClientSession, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errors.New("upauth: closed")
	}
	ss := m.sessions[k]
	var evict *subjectSession
	if ss == nil {
		if len(m.sessions) >= MaxSubjectSessions {
			var oldest sessionKey
			for ok, o := range m.sessions {
				if evict == nil || o.used.Load() < evict.used.Load() {
					oldest, evict = ok, o
				}
			}
			delete(m.sessions, oldest)
		}
		ss = &subjectSession{}
		m.sessions[k] = ss
	}
	ss.used.Store(m.now().UnixNano())
	m.mu.Unlock()
	if evict != nil {
		evict.once.Do(func() {})
		if evict.sess != nil {
			_ = evict.sess.Close()
		}
	}
	if bearer != "" {
		ss.bearer.Store(&bearer)
	}
	ss.once.Do(func() { ss.sess, ss.err = m.connect(ctx, s, k, ss) })
	if ss.err != nil {
		m.mu.Lock()
		if m.sessions[k] == ss {
			delete(m.sessions, k)
		}
		m.mu.Unlock()
	}
	return ss.sess, ss.err
}

func (m *Manager) connect(ctx context.Context, s *Server, k sessionKey, ss *subjectSession) (*mcp.ClientSession, error) {
	var dynamic func(*http.Request) http.Header
	if s.Mode == Exchange {
		// The exchanged token of the call a request belongs to, on every
		// request to the server's origin (the egress guard binds dynamic
		// headers to it).
		dynamic = ss.exchangedHeader
	}
	hc, err := m.guard.Client(s.URL, s.Headers, dynamic)
	if err != nil {
		return nil, err
	}
	t := &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc, DisableStandaloneSSE: true}
	if s.Mode == User {
		how := "the caller connects through the connect URL auth_required gives"
		h, err := upstream.New(hc, m.handlerOptions(s, k.subject, how))
		if err != nil {
			return nil, err
		}
		t.OAuthHandler = h
	}
	// It announces what the shared sessions announce, so the server lists
	// on it what it lists there (a server may list tools by the client's
	// capabilities: a narrower listing would be judged as drift). A
	// server's own requests are not routed on it (the go-sdk refuses
	// them); its input requests (SEP-2322) are passed on to, or asked of,
	// the caller of the request that got them (relay.SubjectClient).
	o := &mcp.ClientOptions{Logger: m.log, Capabilities: relay.RoutableCapabilities()}
	relay.SubjectClient(o, k.input)
	if j := m.o.Judge; j != nil {
		o.ToolListChangedHandler = func(_ context.Context, r *mcp.ToolListChangedRequest) { j.SessionChanged(s.Name, r.Session) }
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "gatehouse", Version: "0.1.0"}, o)
	// The session outlives the call that made it.
	sess, err := c.Connect(context.WithoutCancel(ctx), t, nil)
	if err != nil || m.o.Judge == nil {
		return sess, err
	}
	// Judged before its first call: a server's new session may serve
	// other contracts than the shared one it was trusted through.
	if err := m.o.Judge.JudgeSession(ctx, s.Name, sess); err != nil {
		return nil, err
	}
	return sess, nil
}

// drop closes and forgets k's sessions.
func (m *Manager) drop(k key) {
	m.dropSession(sessionKey{k, false})
	m.dropSession(sessionKey{k, true})
}

// dropSession closes and forgets one session.
func (m *Manager) dropSession(k sessionKey) {
	m.mu.Lock()
	ss := m.sessions[k]
	delete(m.sessions, k)
	m.mu.Unlock()
	if ss != nil {
		ss.once.Do(func() {})
		if ss.sess != nil {
			_ = ss.sess.Close()
		}
	}
}

// Close closes every per-subject session. A nil Manager closes nothing.
func (m *Manager) Close() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	m.closed = true
	all := m.sessions
	m.sessions = map[sessionKey]*subjectSession{}
	m.mu.Unlock()
	for _, ss := range all {
		ss.once.Do(func() {})
		if ss.sess != nil {
			_ = ss.sess.Close()
		}
	}
	return nil
}

func randomID() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("upauth: random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
