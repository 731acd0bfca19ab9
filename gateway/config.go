package gateway

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
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

// Config is the gateway configuration of CONTRACTS.md §4. It is read from
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
	// HTTP tunes the MCP endpoint toward callers.
	HTTP HTTP `yaml:"http" json:"http"`
	// Sessions bounds the MCP sessions of each subject and what they hold
	// upstream.
	Sessions Sessions `yaml:"sessions" json:"sessions"`
	// UpstreamProtocol is the MCP revision the gateway asks its upstream
	// servers for: a revision date, or "auto" to let the go-sdk negotiate
	// (newest first, 2026-07-28 where the server offers it). Default
	// 2025-11-25, the stateful revision over which sampling, elicitation,
	// roots and log levels are forwarded.
	UpstreamProtocol string `yaml:"upstreamProtocol" json:"upstreamProtocol"`

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
	// Raw is the entry without prefix, as JSON, validated by
	// plugin.ParseServer when the gateway starts.
	Raw json.RawMessage
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
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	e.Raw = raw
	return nil
}

// Auth configures static bearer tokens.
type Auth struct {
	Tokens []Token `yaml:"tokens" json:"tokens"`
}

// Token is one static bearer token, stored as the SHA-256 hex of the token.
type Token struct {
	SHA256  string `yaml:"sha256" json:"sha256"`
	Subject string `yaml:"subject" json:"subject"`
	// Scopes are "tool:<projected name>" or "tool:*"; absent means every tool.
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

// ConfigError is a configuration mistake: it names the file, the field and
// the fix.
type ConfigError struct {
	File  string // the config file, or "(default config)"
	Field string // a dotted path such as "auth.tokens[0].sha256"; "" for the whole file
	Msg   string // what is wrong
	Fix   string // what to do about it
}

func (e *ConfigError) Error() string {
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

// LoadConfig reads and validates the config file at path. Relative paths
// in it resolve against the file's directory.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{File: path, Msg: fmt.Sprintf("cannot read the config file: %v", errors.Unwrap(err)),
			Fix: "pass an existing YAML file with --config"}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &ConfigError{File: path, Msg: err.Error()}
	}
	return ParseConfig(data, path, filepath.Dir(abs))
}

// ParseConfig parses and validates config bytes. file names the source in
// errors; dir is where relative paths resolve.
func ParseConfig(data []byte, file, dir string) (*Config, error) {
	c := &Config{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) { // io.EOF: an empty file, all defaults
		return nil, &ConfigError{File: file, Msg: yamlMessage(err),
			Fix: "check the field names and types against docs/gateway.md"}
	}
	// A second document is a mistake, not something to ignore.
	var extra any
	if err := dec.Decode(&extra); err == nil {
		return nil, &ConfigError{File: file, Msg: "more than one YAML document", Fix: "keep one document per config file"}
	}
	c.File, c.Dir = file, dir
	if err := c.applyDefaults(); err != nil {
		return nil, err
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func yamlMessage(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.ReplaceAll(msg, "unmarshal errors:\n  ", "")
	msg = strings.ReplaceAll(msg, "\n  ", "; ")
	return msg
}

func (c *Config) applyDefaults() error {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.UpstreamProtocol == "" {
		c.UpstreamProtocol = DefaultUpstreamProtocol
	}
	if c.Store == "" {
		c.Store = DefaultStore
	}
	if c.Disclosure.Budget == 0 {
		c.Disclosure.Budget = DefaultBudgetTokens
	}
	if c.RateLimit != nil && c.RateLimit.Window == 0 {
		c.RateLimit.Window = DefaultRateLimitWindow
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.Sessions.MaxPerSubject == 0 && c.Auth != nil {
		// Without auth every caller is the one subject "local" on a
		// loopback address: a default cap would bound every local client
		// together. An explicit maxPerSubject applies there too.
		c.Sessions.MaxPerSubject = DefaultMaxSessionsPerSubject
	}
	if c.Journal.Lease == 0 {
		c.Journal.Lease = DefaultJournalLease
	}
	if c.Journal.TTL == 0 {
		c.Journal.TTL = max(DefaultJournalTTL, c.Journal.Lease)
	}
	if c.Approvals.TTL == 0 {
		c.Approvals.TTL = DefaultApprovalTTL
	}
	return nil
}

func (c *Config) errf(field, fix, format string, args ...any) error {
	file := c.File
	if file == "" {
		file = "(default config)"
	}
	return &ConfigError{File: file, Field: field, Msg: fmt.Sprintf(format, args...), Fix: fix}
}

func (c *Config) validate() error {
	if p := c.UpstreamProtocol; p != "auto" && !revisionPattern.MatchString(p) {
		return c.errf("upstreamProtocol", `use a revision date such as "2025-11-25", or "auto"`, "%q is not an MCP revision", p)
	}
	if err := c.checkListen(); err != nil {
		return err
	}
	for i, p := range c.Plugins {
		if strings.TrimSpace(p) == "" {
			return c.errf(fmt.Sprintf("plugins[%d]", i), "give the path of a plugin directory", "empty plugin path")
		}
	}
	for i, h := range c.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/:*@ ") {
			return c.errf(fmt.Sprintf("allowedHosts[%d]", i),
				"list bare hostnames such as api.example.com (no scheme, port, path or wildcard)",
				"%q is not a hostname", h)
		}
	}
	if c.Auth != nil {
		if len(c.Auth.Tokens) == 0 {
			return c.errf("auth.tokens", "add at least one token, or remove auth to serve on loopback only",
				"auth is configured but has no tokens")
		}
		seen := map[string]bool{}
		subjects := map[string]string{}
		for i, t := range c.Auth.Tokens {
			f := fmt.Sprintf("auth.tokens[%d]", i)
			h := strings.ToLower(t.SHA256)
			if b, err := hex.DecodeString(h); err != nil || len(b) != 32 {
				return c.errf(f+".sha256", "put the SHA-256 hex of the token, e.g. `printf %s \"$TOKEN\" | sha256sum`, never the token",
					"must be 64 hexadecimal characters")
			}
			if seen[h] {
				return c.errf(f+".sha256", "give each token its own entry", "the same token hash appears twice")
			}
			seen[h] = true
			c.Auth.Tokens[i].SHA256 = h
			if strings.TrimSpace(t.Subject) == "" {
				return c.errf(f+".subject", "name who holds the token, e.g. subject: acme-ltd", "subject is required")
			}
			for j, s := range t.Scopes {
				if !strings.HasPrefix(s, "tool:") || len(s) == len("tool:") {
					return c.errf(fmt.Sprintf("%s.scopes[%d]", f, j), `use "tool:<projected name>" or "tool:*"`, "%q is not a tool scope", s)
				}
			}
			// Visibility is decided per subject: two tokens of one subject
			// must not disagree on what it may see.
			key := scopeKey(t.Scopes)
			if prev, ok := subjects[t.Subject]; ok && prev != key {
				return c.errf(f+".scopes", "give every token of one subject the same scopes, or use distinct subjects",
					"subject %q already has a token with other scopes", t.Subject)
			}
			subjects[t.Subject] = key
		}
	}
	if len(c.Tools.Allow) > 0 && len(c.Tools.Block) > 0 {
		return c.errf("tools", "use either tools.allow or tools.block, not both", "allow and block are mutually exclusive")
	}
	if c.RateLimit != nil {
		if c.RateLimit.MaxCalls <= 0 {
			return c.errf("rateLimit.maxCalls", "set a positive number of calls per window, or remove rateLimit", "must be positive (got %d)", c.RateLimit.MaxCalls)
		}
		if c.RateLimit.Window < time.Second {
			return c.errf("rateLimit.window", "use a duration of at least 1s, such as 60s", "window %v is too short", c.RateLimit.Window)
		}
	}
	if u := c.Sessions; u.UpstreamPerServer < 0 || u.UpstreamPerSubject < 0 {
		f, n := "sessions.upstreamPerServer", u.UpstreamPerServer
		if n >= 0 {
			f, n = "sessions.upstreamPerSubject", u.UpstreamPerSubject
		}
		return c.errf(f, "use a positive number of sessions (default 64 per server, 4 per subject)", "must not be negative (got %d)", n)
	}
	if c.Disclosure.Budget < 0 {
		return c.errf("disclosure.budget", "use a positive number of tokens (default 20000)", "must not be negative")
	}
	if err := c.checkInheritEnv(); err != nil {
		return err
	}
	if c.Firewall.MaxCallsPerRun < 0 {
		return c.errf("firewall.maxCallsPerRun", "use 0 for no cap or a positive number", "must not be negative")
	}
	for key, d := range map[string]time.Duration{"readTimeout": c.HTTP.ReadTimeout, "writeTimeout": c.HTTP.WriteTimeout, "connIdleTimeout": c.HTTP.ConnIdleTimeout} {
		if d < 0 {
			return c.errf("http."+key, "use a positive duration, or leave it out for the default", "must not be negative")
		}
	}
	if c.HTTP.MaxConnections < 0 {
		return c.errf("http.maxConnections", "use a positive number (default 16384)", "must not be negative")
	}
	if c.Sessions.MaxPerSubject < 0 {
		return c.errf("sessions.maxPerSubject", "use a positive number of sessions (default 16)", "must not be negative (got %d)", c.Sessions.MaxPerSubject)
	}
	if c.ShutdownTimeout < 0 {
		return c.errf("shutdownTimeout", "use a positive duration such as 10s", "must not be negative")
	}
	if c.Journal.Lease < time.Second {
		return c.errf("journal.lease", "use a duration of at least 1s (default 30s)", "lease %v is too short", c.Journal.Lease)
	}
	if c.Journal.TTL < c.Journal.Lease {
		return c.errf("journal.ttl", "use a TTL at least as long as journal.lease (default 24h)", "ttl %v is shorter than the lease %v", c.Journal.TTL, c.Journal.Lease)
	}
	if c.Approvals.TTL < time.Second {
		return c.errf("approvals.ttl", "use a duration of at least 1s (default 24h)", "ttl %v is too short", c.Approvals.TTL)
	}
	if err := c.checkMetrics(); err != nil {
		return err
	}
	names := make([]string, 0, len(c.Servers))
	for n := range c.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if n == "" {
			return c.errf("servers", "give every server a name", "a server has an empty name")
		}
		e := c.Servers[n]
		if len(e.Raw) == 0 || string(e.Raw) == "null" {
			return c.errf("servers."+n, "give the server a type and a command or url, as in mcp.json", "empty server entry")
		}
		sc, ds, ok := plugin.ParseServer(n, e.Raw, plugin.Vars{Root: c.Dir, Data: filepath.Join(c.Dir, ".gatehouse", "data", n)})
		if !ok {
			msgs := make([]string, 0, len(ds))
			for _, d := range ds {
				if d.Rule != diag.SecretInConfig {
					msgs = append(msgs, fmt.Sprintf("%s (%s)", d.Message, d.Rule))
				}
			}
			return c.errf("servers."+n, "write the entry as an mcp.json server (type stdio with command/args/env/cwd, or streamable-http/sse with url/headers) plus an optional prefix; see docs/gateway.md",
				"%s", strings.Join(msgs, "; "))
		}
		c.inline = append(c.inline, inlineServer{cfg: sc, prefix: e.Prefix, warn: ds})
	}
	return nil
}

// checkInheritEnv checks inheritEnv: each entry a variable name, or a
// prefix followed by "*", and none that could name a GATEHOUSE_* variable.
func (c *Config) checkInheritEnv() error {
	const fix = `list variable names such as "AWS_PROFILE", or prefixes such as "AWS_*"; GATEHOUSE_* variables are never passed to servers`
	for i, e := range c.InheritEnv {
		field := fmt.Sprintf("inheritEnv[%d]", i)
		name, wild := strings.CutSuffix(e, "*")
		switch {
		case e == "":
			return c.errf(field, fix, "empty name")
		case name == "" && wild:
			// "*": every variable but GATEHOUSE_*.
		case strings.HasPrefix(name, "GATEHOUSE_"):
			return c.errf(field, fix, "%q names GATEHOUSE_* variables, which are never passed", e)
		case !envName(name):
			return c.errf(field, fix, "%q is not a variable name (letters, digits and _, not starting with a digit, then an optional *)", e)
		}
	}
	return nil
}

// envName reports whether s is a portable environment variable name.
func envName(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b != '_' && (b < 'A' || b > 'Z') && (b < 'a' || b > 'z') && (i == 0 || b < '0' || b > '9') {
			return false
		}
	}
	return s != ""
}

// checkListen checks listen, and that a gateway without auth serves only
// on loopback.
func (c *Config) checkListen() error {
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return c.errf("listen", "use host:port, for example 127.0.0.1:8080", "%q is not a host:port address", c.Listen)
	}
	if c.Auth == nil && !isLoopback(host) {
		return c.errf("listen", "configure auth.tokens, or listen on a loopback address such as 127.0.0.1:8080",
			"%q is not a loopback address and auth is not configured: anyone who can reach it could call every tool", c.Listen)
	}
	return nil
}

// checkMetrics checks metrics: a host:port, on loopback unless
// allowRemote, and not the MCP listen address.
func (c *Config) checkMetrics() error {
	m := c.Metrics
	if m == nil {
		return nil
	}
	if m.Listen == "" {
		return c.errf("metrics.listen", "give an address such as 127.0.0.1:9090, or remove metrics", "metrics is configured without listen")
	}
	host, port, err := net.SplitHostPort(m.Listen)
	if err != nil {
		return c.errf("metrics.listen", "use host:port, for example 127.0.0.1:9090", "%q is not a host:port address", m.Listen)
	}
	if !m.AllowRemote && !isLoopback(host) {
		return c.errf("metrics.listen", "listen on a loopback address such as 127.0.0.1:9090 (scrape through a proxy or an SSH tunnel), or set metrics.allowRemote: true",
			"%q is not a loopback address and the metrics endpoint has no authentication", m.Listen)
	}
	if port != "0" && m.Listen == c.Listen {
		return c.errf("metrics.listen", "give metrics its own port", "%q is also the MCP listen address", m.Listen)
	}
	return nil
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

// isLoopback reports whether host is localhost or a loopback IP literal.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func scopeKey(scopes []string) string {
	if scopes == nil {
		return "*"
	}
	s := append([]string(nil), scopes...)
	sort.Strings(s)
	return strings.Join(s, "\x00")
}

// revisionPattern matches MCP revision identifiers (dates).
var revisionPattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

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
// *ConfigError when the config loads, so only warnings remain).
func (c *Config) InlineDiagnostics() []diag.Diagnostic {
	var out []diag.Diagnostic
	for _, in := range c.inline {
		out = append(out, in.warn...)
	}
	return out
}
