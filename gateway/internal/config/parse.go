package config

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/plugin"
)

// Load reads and validates the config file at path. Relative paths in it
// resolve against the file's directory.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read the config file: %v", errors.Unwrap(err)),
			Fix: "pass an existing YAML file with --config"}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	return Parse(data, path, filepath.Dir(abs))
}

// Parse parses and validates config bytes. file names the source in
// errors; dir is where relative paths resolve.
func Parse(data []byte, file, dir string) (*Config, error) {
	c := &Config{}
	// Mistakes of shape first, in the config's own words (the field's
	// path, what was wrong, the fix); the decoder's message, which names
	// Go types, only for what that does not check.
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err == nil {
		if e := checkShape(&doc, reflect.TypeFor[Config](), ""); e != nil {
			e.File = file
			return nil, e
		}
	}
	data = bareZero(data, &doc)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) { // io.EOF: an empty file, all defaults
		return nil, &Error{File: file, Msg: yamlMessage(err),
			Fix: "check the field names and types against docs/gateway.md"}
	}
	// A second document is a mistake, not something to ignore.
	var extra any
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{File: file, Msg: "more than one YAML document", Fix: "keep one document per config file"}
	}
	c.File, c.Dir = file, dir
	if !hasKey(&doc, "shutdownDrain") {
		c.ShutdownDrain = DefaultShutdownDrain
	}
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

// Errorf returns a *Error about c's field, for mistakes found after
// parsing (a plugin that strictPlugins refuses): file is c.File, or
// "(default config)" without one.
func Errorf(c *Config, field, fix, format string, args ...any) error {
	return c.errf(field, fix, format, args...)
}

func (c *Config) errf(field, fix, format string, args ...any) error {
	file := c.File
	if file == "" {
		file = "(default config)"
	}
	return &Error{File: file, Field: field, Msg: fmt.Sprintf(format, args...), Fix: fix}
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
		if len(c.Auth.Tokens) == 0 && c.Auth.OAuth == nil {
			return c.errf("auth.tokens", "add at least one token or configure auth.oauth, or remove auth to serve on loopback only",
				"auth is configured but has no tokens and no oauth")
		}
		if err := c.checkOAuth(); err != nil {
			return err
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
				if !visibilityScope(s) {
					return c.errf(fmt.Sprintf("%s.scopes[%d]", f, j), `use "tool:<projected name>", "tool:*", "skill:<projected name>" or "skill:*"`, "%q is not a tool or skill scope", s)
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
			if o := c.Auth.OAuth; o != nil && strings.HasPrefix(t.Subject, o.Issuer+"#") {
				return c.errf(f+".subject", "name static subjects so that they cannot be taken for an OAuth subject (issuer#sub)",
					"subject %q has the form of a subject of auth.oauth.issuer", t.Subject)
			}
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
	if err := c.checkLifecycle(); err != nil {
		return err
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
	if err := c.checkDrift(); err != nil {
		return err
	}
	if err := c.checkSearch(); err != nil {
		return err
	}
	if err := c.checkAudit(); err != nil {
		return err
	}
	if err := c.checkMetrics(); err != nil {
		return err
	}
	if err := c.checkConnect(); err != nil {
		return err
	}
	if err := c.checkConsole(); err != nil {
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
		if err := c.checkServerAuth(n, string(sc.Type), sc.URL, e.Auth); err != nil {
			return err
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
