// Package config is the gateway's configuration (docs/gateway.md, Config fields): its
// types, their defaults, and the parser that reads them from YAML and
// validates every field, so that a mistake is a *Error naming the file, the
// field and the fix before anything starts. Package gateway re-exports it
// (gateway.Config, gateway.LoadConfig, gateway.ParseConfig, ...); its users
// need not import this package.
//
//	cfg, err := config.Load("gatehouse.yaml")
//	var ce *config.Error
//	if errors.As(err, &ce) {
//		fmt.Println(ce.Field, ce.Fix) // "auth.tokens[0].sha256", "put the SHA-256 hex of the token..."
//	}
package config

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// Defaults of the gateway config (docs/gateway.md lists them all).
const (
	DefaultListen           = "127.0.0.1:8080"
	DefaultStore            = "sqlite:.gatehouse/gatehouse.db"
	DefaultBudgetTokens     = 20000
	DefaultRateLimitWindow  = time.Minute
	DefaultShutdownTimeout  = 10 * time.Second
	DefaultJournalLease     = 30 * time.Second
	DefaultJournalTTL       = 24 * time.Hour
	DefaultApprovalTTL      = 24 * time.Hour
	DefaultUpstreamProtocol = "2025-11-25"
	// DefaultMaxSessionsPerSubject is sessions.maxPerSubject's default.
	DefaultMaxSessionsPerSubject = 16
)

// Config is the gateway configuration of docs/gateway.md (Config fields). It is read from
// YAML (JSON is valid YAML); unknown fields are errors, so a typo never
// silently disables a protection.
type Config struct {
	// Listen is the HTTP listen address of the MCP endpoint (/mcp).
	Listen string `yaml:"listen" json:"listen"`
	// Store is the store DSN; GATEHOUSE_STORE overrides it.
	Store string `yaml:"store" json:"store"`
	// Plugins are plugin directories, relative to the config file.
	Plugins []string `yaml:"plugins" json:"plugins"`
	// Servers are inline server entries in the mcp.json shape plus prefix.
	Servers map[string]ServerEntry `yaml:"servers" json:"servers"`
	// AllowedHosts is the exact, case-insensitive egress host list.
	AllowedHosts []string   `yaml:"allowedHosts" json:"allowedHosts"`
	Auth         *Auth      `yaml:"auth" json:"auth"`
	Tools        Tools      `yaml:"tools" json:"tools"`
	RateLimit    *RateLimit `yaml:"rateLimit" json:"rateLimit"`
	Disclosure   Disclosure `yaml:"disclosure" json:"disclosure"`
	Firewall     Firewall   `yaml:"firewall" json:"firewall"`
	// ShutdownTimeout bounds graceful shutdown: in-flight calls get this
	// long to finish before they are cancelled (and journaled in doubt).
	ShutdownTimeout time.Duration `yaml:"shutdownTimeout" json:"shutdownTimeout"`
	// ShutdownDrain is how long a stopping gateway keeps serving with its
	// /readyz answering 503 before it stops accepting, so that a load
	// balancer (or Kubernetes) takes it out of rotation first. It is
	// waited only when /readyz has been asked since the start: no one
	// watches the readiness of a gateway that nobody probes. 0 stops
	// without a drain. Default 10s (DefaultShutdownDrain) when read from
	// YAML; 0 in a Config built by hand.
	ShutdownDrain time.Duration `yaml:"shutdownDrain" json:"shutdownDrain"`
	// Instance names this gateway in the store across its restarts (the
	// executor of docs/gateway.md): a gateway started under the name of one
	// that died takes its place, so the keyed calls the dead one was
	// running answer in_doubt at once and its audit chain continues. Two
	// running gateways must never share one: on Kubernetes, the pod's name.
	// GATEHOUSE_INSTANCE overrides it in gatehouse serve. Empty means
	// derived (a free slot among lock files beside the store).
	Instance string `yaml:"instance" json:"instance"`
	// Journal tunes the effect journal behind dedup and approvals.
	Journal Journal `yaml:"journal" json:"journal"`
	// InheritEnv names the gateway's environment variables passed to every
	// stdio server beyond the minimal set (PATH, HOME, TMPDIR, TZ, LANG,
	// LC_*): exact names, or a prefix followed by "*" ("AWS_*"; "*" alone:
	// all of them). GATEHOUSE_* variables are never passed. A server's own
	// env is always set.
	InheritEnv []string `yaml:"inheritEnv" json:"inheritEnv"`
	// Approvals tunes the approvals of tools.requireApproval.
	Approvals Approvals `yaml:"approvals" json:"approvals"`
	// StrictPlugins makes a rejected plugin a startup error instead of a
	// logged, skipped plugin reported by /readyz.
	StrictPlugins bool `yaml:"strictPlugins" json:"strictPlugins"`
	// Metrics, when set, serves Prometheus metrics on a listener of its
	// own. Absent means no metrics endpoint.
	Metrics *Metrics `yaml:"metrics" json:"metrics"`
	// Console, when set, serves the operator web console on a listener of
	// its own (console.listen, console.admins). Absent means no console.
	Console *Console `yaml:"console" json:"console"`
	// HTTP tunes the MCP endpoint toward callers.
	HTTP HTTP `yaml:"http" json:"http"`
	// Sessions bounds the MCP sessions of each subject and what they hold
	// upstream.
	Sessions Sessions `yaml:"sessions" json:"sessions"`
	// Drift tunes how drift is caught while the gateway runs (drift.recheck:
	// the background re-listing of every connected server).
	Drift Drift `yaml:"drift" json:"drift"`
	// Search configures tool search: the meta-tool gatehouse__search_tools
	// and the stable tools/list (search.enabled, search.limit).
	Search Search `yaml:"search" json:"search"`
	// Audit configures the audit trail (audit.enabled, audit.retain,
	// audit.checkpoint, audit.signingKeyFile or audit.signingKeyEnv).
	Audit Audit `yaml:"audit" json:"audit"`
	// UpstreamProtocol is the MCP revision the gateway asks its upstream
	// servers for: a revision date, or "auto" to let the go-sdk negotiate
	// (newest first, 2026-07-28 where the server offers it). Default
	// 2025-11-25, the stateful revision over which sampling, elicitation,
	// roots and log levels are forwarded.
	UpstreamProtocol string `yaml:"upstreamProtocol" json:"upstreamProtocol"`
	// Connect configures the /connect flow of servers with auth: user
	// (connect.publicURL, connect.flowTTL) and the vault's key file.
	Connect Connect `yaml:"connect" json:"connect"`

	// Dir is the directory relative paths resolve against (the config
	// file's directory, or the working directory without a file). It is
	// not read from YAML.
	Dir string `yaml:"-" json:"-"`
	// File is the config file's path ("" for the built-in default).
	File string `yaml:"-" json:"-"`

	// inline holds the servers: entries parsed by plugin.ParseServer.
	inline []inlineServer
}

// inlineServer is one validated servers: entry.
type inlineServer struct {
	cfg    plugin.ServerConfig
	prefix *string
	warn   []diag.Diagnostic
}

// Journal tunes the effect journal.
type Journal struct {
	// Lease is how long a claimed call stays busy without renewal, and how
	// long a silent gateway counts as alive. After a crash, a retry is
	// in_doubt at once when the gateway came back under its instance (its
	// registered executor is dead), else run_busy until a lease passes, then
	// in_doubt. Default 30s.
	Lease time.Duration `yaml:"lease" json:"lease"`
	// TTL is how long journal records (and so replays) are kept. Default 24h.
	TTL time.Duration `yaml:"ttl" json:"ttl"`
}

// Approvals tunes approvals. An approval authorizes the one execution it
// was asked for and expires.
type Approvals struct {
	// TTL is how long an approval answers for its call, from when it was
	// asked: a pending one can be decided until then, an approved one
	// authorizes its one execution until then. Default (and 0) 24h.
	TTL time.Duration `yaml:"ttl" json:"ttl"`
}

// ServerEntry is one inline server: the mcp.json server shape plus an
// optional prefix for its projected names ("" allowed: tools keep their
// remote names).
type ServerEntry struct {
	// Prefix overrides the projection prefix; nil means the server name.
	Prefix *string
	// Raw is the entry without prefix, auth, oauth and exchange, as JSON,
	// validated by plugin.ParseServer when the gateway starts.
	Raw json.RawMessage
	// Auth is the entry's auth, oauth and exchange keys (upauth.go).
	Auth ServerAuth
}

// UnmarshalYAML splits prefix off and keeps the rest as JSON.
func (e *ServerEntry) UnmarshalYAML(n *yaml.Node) error {
	var m map[string]any
	if err := n.Decode(&m); err != nil {
		return err
	}
	if p, ok := m["prefix"]; ok {
		s, ok := p.(string)
		if !ok {
			return fmt.Errorf("line %d: prefix must be a string", n.Line)
		}
		e.Prefix = &s
		delete(m, "prefix")
	}
	if err := e.splitAuth(m); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	e.Raw = raw
	return nil
}

// Auth configures who may call the MCP endpoint: static bearer tokens,
// OAuth access tokens, or both. A request is refused (401) unless one of
// them verifies its bearer token.
type Auth struct {
	// Tokens are static bearer tokens; they keep working beside OAuth.
	Tokens []Token `yaml:"tokens" json:"tokens"`
	// Resource is the canonical URL of the MCP endpoint, such as
	// https://gw.example.com/mcp: the RFC 9728 resource of its Protected
	// Resource Metadata and the audience an OAuth access token must carry
	// (RFC 8707). Absolute, https unless the host is loopback, no query, no
	// fragment. Required with OAuth.
	Resource string `yaml:"resource" json:"resource"`
	// OAuth makes the gateway an OAuth 2.1 resource server.
	OAuth *OAuth `yaml:"oauth" json:"oauth"`
}

// OAuth configures the authorization server whose JWT access tokens the
// gateway accepts (auth.oauth).
type OAuth struct {
	// Issuer is the authorization server's issuer identifier; a token's iss
	// must equal it exactly. https unless the host is loopback.
	Issuer string `yaml:"issuer" json:"issuer"`
	// JWKSURL is where the issuer's keys are; empty means discovered from
	// its RFC 8414 or OpenID metadata.
	JWKSURL string `yaml:"jwksURL" json:"jwksURL"`
	// RequiredScopes must all be in every token (a token missing one gets
	// 403 insufficient_scope).
	RequiredScopes []string `yaml:"requiredScopes" json:"requiredScopes"`
	// SubjectClaim names the claim that identifies the caller within the
	// issuer; the subject is issuer + "#" + its value. Default "sub".
	SubjectClaim string `yaml:"subjectClaim" json:"subjectClaim"`
	// ScopesClaim is "scope" (a space-separated string, RFC 9068) or "scp"
	// (an array). Default "scope".
	ScopesClaim string `yaml:"scopesClaim" json:"scopesClaim"`
	// Introspection, when set, checks the tokens that are not JWTs (not
	// three base64url parts) at the authorization server's RFC 7662
	// endpoint; without it they are refused.
	Introspection *Introspection `yaml:"introspection" json:"introspection"`
	// Login is the gateway's OpenID Connect client at Issuer: a connect
	// URL's browser logs in with it to prove it is the OAuth subject the
	// URL was made for (docs/gateway.md, connect flows). Without it, an
	// OAuth subject's connect URL is refused with a page naming it.
	Login *Login `yaml:"login" json:"login"`
}

// Login configures the gateway's OpenID Connect client at auth.oauth.issuer
// (auth.oauth.login): the authorization-code grant with PKCE, redirect URI
// connect.publicURL + /connect/login.
type Login struct {
	// ClientID is the gateway's client id at the issuer.
	ClientID string `yaml:"clientID" json:"clientID"`
	// ClientSecretEnv names the environment variable that holds the
	// client's secret; empty for a public client (PKCE alone).
	ClientSecretEnv string `yaml:"clientSecretEnv" json:"clientSecretEnv"`
	// ClientSecret is never accepted: it is declared only so that a secret
	// written in the file is refused by name, with the way to fix it.
	ClientSecret string `yaml:"clientSecret" json:"-"`
}

// Introspection configures the RFC 7662 endpoint that checks opaque access
// tokens (auth.oauth.introspection), and the gateway's own credentials there
// (client_secret_basic).
type Introspection struct {
	// URL is the introspection endpoint; https unless the host is loopback.
	URL string `yaml:"url" json:"url"`
	// ClientID is the gateway's client id at the authorization server.
	ClientID string `yaml:"clientID" json:"clientID"`
	// ClientSecretEnv names the environment variable that holds the
	// gateway's client secret: the secret is never in the config file.
	ClientSecretEnv string `yaml:"clientSecretEnv" json:"clientSecretEnv"`
	// ClientSecret is never accepted: it is declared only so that a secret
	// written in the file is refused by name, with the way to fix it.
	ClientSecret string `yaml:"clientSecret" json:"-"`
}

// Token is one static bearer token, stored as the SHA-256 hex of the token.
type Token struct {
	SHA256  string `yaml:"sha256" json:"sha256"`
	Subject string `yaml:"subject" json:"subject"`
	// Scopes are "tool:<projected name>" or "tool:*" (the tools the token
	// sees) and "skill:<projected name>" or "skill:*" (the served skills it
	// sees, docs/skills.md); absent means every tool and every skill, and a
	// list without a scope of one kind means none of that kind.
	Scopes []string `yaml:"scopes" json:"scopes"`
}

// Tools holds the tool-level policy.
type Tools struct {
	Allow           []string `yaml:"allow" json:"allow"`
	Block           []string `yaml:"block" json:"block"`
	RequireApproval []string `yaml:"requireApproval" json:"requireApproval"`
	Repeatable      []string `yaml:"repeatable" json:"repeatable"`
}

// RateLimit is a per-subject fixed-window limit shared through the store.
type RateLimit struct {
	MaxCalls int           `yaml:"maxCalls" json:"maxCalls"`
	Window   time.Duration `yaml:"window" json:"window"`
}

// Disclosure configures the schema disclosure budget.
type Disclosure struct {
	// Budget is in tokens per server (4 characters a token); 0 means 20000.
	Budget     int      `yaml:"budget" json:"budget"`
	AlwaysLoad []string `yaml:"alwaysLoad" json:"alwaysLoad"`
}

// Firewall configures the MCP firewall.
type Firewall struct {
	// MaxCallsPerRun caps calls per tool per run (0: no cap).
	MaxCallsPerRun int `yaml:"maxCallsPerRun" json:"maxCallsPerRun"`
}

// HTTP tunes how the MCP endpoint answers callers.
type HTTP struct {
	// JSONResponse answers each POST with one plain JSON body instead of an
	// SSE stream. It is faster (no event framing), but progress, log
	// messages and server-to-client requests made during a call then wait
	// for the caller's standalone stream. Default false: SSE, as the MCP
	// specification's reference servers answer.
	JSONResponse bool `yaml:"jsonResponse" json:"jsonResponse"`
	// Stateless serves without sessions (the stateless 2026-07-28
	// revision; 2025-11-25 callers still work request by request). Server-
	// to-client requests (sampling, elicitation, roots) need sessions and
	// are not forwarded to stateless callers. Default false.
	Stateless bool `yaml:"stateless" json:"stateless"`
	// Both serves, beside the sessions of 2025-11-25 callers, a request at
	// 2026-07-28 or later without a session on the same endpoint (the
	// revision is chosen per request by its MCP-Protocol-Version header),
	// so a client that offers both (the go-sdk's) is served without a
	// session. Default true (BothRevisions); false refuses a 2026-07-28
	// request, and such a client opens a session. Ignored with Stateless.
	Both *bool `yaml:"bothRevisions" json:"bothRevisions"`
	// Bytes, when false, turns the byte path off: every tools/call is read
	// by the go-sdk's server and sent by the go-sdk's client. The byte
	// path reads the calls it is sure of from the HTTP request's bytes and
	// sends calls to streamable HTTP upstreams as bytes; either way the
	// same pipeline decides every call, with the same answers (for
	// diagnosis; it costs throughput). Default true.
	Bytes *bool `yaml:"bytePath" json:"bytePath"`
	// ReadTimeout bounds reading a request, headers and body. Default 30s.
	ReadTimeout time.Duration `yaml:"readTimeout" json:"readTimeout"`
	// WriteTimeout bounds each write of an answer (a stream that keeps
	// writing is never cut). Default 30s.
	WriteTimeout time.Duration `yaml:"writeTimeout" json:"writeTimeout"`
	// ConnIdleTimeout closes a keep-alive connection idle this long; one
	// that never authenticated, after at most 10s. Default 2m.
	ConnIdleTimeout time.Duration `yaml:"connIdleTimeout" json:"connIdleTimeout"`
	// MaxConnections caps the connections open at once. Default 16384
	// (each stateful session holds one for its SSE stream).
	MaxConnections int `yaml:"maxConnections" json:"maxConnections"`
}

// Sessions bounds the MCP sessions callers keep open, and the upstream
// sessions of their own they hold.
type Sessions struct {
	// MaxPerSubject is how many sessions one subject (a token's subject;
	// "local" without auth) may have open at once; an initialize beyond it
	// is refused with a JSON-RPC error that says why. 0 means 16 with
	// auth, and no cap without it (every caller of a loopback gateway is
	// the one subject "local"; set it to bound them together).
	MaxPerSubject int `yaml:"maxPerSubject" json:"maxPerSubject"`
	// The upstream sessions (stdio: processes) callers get of their own
	// are capped; a caller over a cap shares the server's session.
	// UpstreamPerServer caps them per server, all callers together (0: 64).
	UpstreamPerServer int `yaml:"upstreamPerServer" json:"upstreamPerServer"`
	// UpstreamPerSubject caps them per subject and server (0: 4).
	UpstreamPerSubject int `yaml:"upstreamPerSubject" json:"upstreamPerSubject"`
}

// BytePath reports whether the byte path is on (http.bytePath, default
// true).
func (h HTTP) BytePath() bool { return h.Bytes == nil || *h.Bytes }

// BothRevisions reports whether one endpoint serves both revisions
// (http.bothRevisions, default true), sessions or not (see Both).
func (h HTTP) BothRevisions() bool { return h.Both == nil || *h.Both }

// Metrics configures the Prometheus endpoint (/metrics on its own
// listener). The endpoint has no authentication: it shows tool and server
// names, outcome counts and latencies, never arguments or subjects.
type Metrics struct {
	// Listen is the metrics listen address (host:port). Required.
	Listen string `yaml:"listen" json:"listen"`
	// AllowRemote permits a non-loopback Listen. Without it a non-loopback
	// address is a config error: the endpoint has no authentication.
	AllowRemote bool `yaml:"allowRemote" json:"allowRemote"`
}

// Error is a configuration mistake: it names the file, the field and the
// fix.
type Error struct {
	File  string // the config file, or "(default config)"
	Field string // a dotted path such as "auth.tokens[0].sha256"; "" for the whole file
	Msg   string // what is wrong
	Fix   string // what to do about it
}

// Error formats the mistake as "FILE: FIELD: MSG (fix: FIX)".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Fix != "" {
		b.WriteString(" (fix: ")
		b.WriteString(e.Fix)
		b.WriteString(")")
	}
	return b.String()
}

// SetListen replaces Listen (the --listen flag) and checks it again.
func (c *Config) SetListen(addr string) error {
	old := c.Listen
	c.Listen = addr
	if err := c.checkListen(); err != nil {
		c.Listen = old
		return err
	}
	return nil
}

// UpstreamProtocolVersion is the revision to ask upstreams for ("" lets the
// go-sdk negotiate).
func (c *Config) UpstreamProtocolVersion() string {
	if c.UpstreamProtocol == "auto" {
		return ""
	}
	return c.UpstreamProtocol
}

// PluginDirs returns the plugin directories resolved against Dir.
func (c *Config) PluginDirs() []string {
	out := make([]string, len(c.Plugins))
	for i, p := range c.Plugins {
		if filepath.IsAbs(p) {
			out[i] = p
		} else {
			out[i] = filepath.Join(c.Dir, p)
		}
	}
	return out
}

// StoreDSN resolves a relative sqlite: path against Dir; other DSNs are
// returned as they are.
func (c *Config) StoreDSN() string {
	dsn := c.Store
	if rest, ok := strings.CutPrefix(dsn, "sqlite:"); ok && !strings.HasPrefix(rest, "//") && rest != "" && !filepath.IsAbs(rest) {
		return "sqlite:" + filepath.Join(c.Dir, rest)
	}
	return dsn
}

// InlineServers returns the servers: entries as toolset servers, validated
// by plugin.ParseServer with the config file's directory as their root
// ("./" commands, ${PLUGIN_ROOT}) and DIR/.gatehouse/data/NAME as their
// PLUGIN_DATA, each with its prefix and its disclosure.alwaysLoad flag.
func (c *Config) InlineServers() []toolset.Server {
	out := make([]toolset.Server, 0, len(c.inline))
	for _, in := range c.inline {
		out = append(out, toolset.Server{Config: in.cfg, Prefix: in.prefix,
			AlwaysLoad: slices.Contains(c.Disclosure.AlwaysLoad, in.cfg.Name)})
	}
	return out
}

// InlineDiagnostics returns the warnings plugin.ParseServer gave the
// servers: entries, in name order (an entry with an error is a
// *Error when the config loads, so only warnings remain).
func (c *Config) InlineDiagnostics() []diag.Diagnostic {
	var out []diag.Diagnostic
	for _, in := range c.inline {
		out = append(out, in.warn...)
	}
	return out
}
