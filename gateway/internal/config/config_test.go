package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const fullConfig = `
listen: 127.0.0.1:9090
store: sqlite:./state/gh.db
plugins: [./plugins/acme]
allowedHosts: [api.example.com]
servers:
  local:
    type: stdio
    command: fixture
    prefix: ""
  remote:
    type: streamable-http
    url: https://api.example.com/mcp
auth:
  tokens:
    - sha256: 5E884898DA28047151D0E56F8DC6292773603D0D6AABBDD62A11EF721D1542D8
      subject: acme-ltd
      scopes: ["tool:bank__balance", "skill:acme__greet", "skill:*"]
tools:
  requireApproval: [bank__transfer]
  repeatable: [bank__balance]
rateLimit: {maxCalls: 100, window: 60s}
disclosure: {budget: 5000, alwaysLoad: [bank]}
firewall: {maxCallsPerRun: 20}
`

func TestParseFullConfig(t *testing.T) {
	c, err := Parse([]byte(fullConfig), "gh.yaml", "/etc/gh")
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9090" || c.StoreDSN() != "sqlite:/etc/gh/state/gh.db" {
		t.Errorf("listen %q store %q", c.Listen, c.StoreDSN())
	}
	if got := c.PluginDirs(); len(got) != 1 || got[0] != "/etc/gh/plugins/acme" {
		t.Errorf("plugins %v", got)
	}
	if p := c.Servers["local"].Prefix; p == nil || *p != "" {
		t.Errorf("local prefix = %v, want explicit empty", p)
	}
	if c.Servers["remote"].Prefix != nil {
		t.Error("remote prefix should be nil")
	}
	if strings.Contains(string(c.Servers["local"].Raw), "prefix") {
		t.Errorf("prefix leaked into the mcp.json entry: %s", c.Servers["local"].Raw)
	}
	tok := c.Auth.Tokens[0]
	if tok.SHA256 != "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8" || tok.Subject != "acme-ltd" {
		t.Errorf("token %+v (hash should be lower-cased)", tok)
	}
	if !slices.Equal(tok.Scopes, []string{"tool:bank__balance", "skill:acme__greet", "skill:*"}) {
		t.Errorf("token scopes %q", tok.Scopes)
	}
	if c.RateLimit.MaxCalls != 100 || c.RateLimit.Window != time.Minute {
		t.Errorf("rate limit %+v", c.RateLimit)
	}
	if c.Disclosure.Budget != 5000 || c.Firewall.MaxCallsPerRun != 20 {
		t.Errorf("disclosure %+v firewall %+v", c.Disclosure, c.Firewall)
	}
}

func TestDefaults(t *testing.T) {
	for _, src := range []string{"", "{}\n", "# only a comment\n"} {
		c, err := Parse([]byte(src), "empty.yaml", "/srv")
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if c.Listen != DefaultListen || c.Disclosure.Budget != DefaultBudgetTokens || c.Auth != nil {
			t.Errorf("%q: defaults not applied: %+v", src, c)
		}
		if c.StoreDSN() != "sqlite:/srv/.gatehouse/gatehouse.db" {
			t.Errorf("store %q", c.StoreDSN())
		}
	}
	c, _ := Parse([]byte("store: postgres://u@127.0.0.1/db\nrateLimit: {maxCalls: 3}\n"), "x", "/srv")
	if c.StoreDSN() != "postgres://u@127.0.0.1/db" || c.RateLimit.Window != DefaultRateLimitWindow {
		t.Errorf("store %q window %v", c.StoreDSN(), c.RateLimit.Window)
	}
}

// Each way a config can be wrong names the file, the field and a fix.
func TestConfigErrors(t *testing.T) {
	const hash = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"
	cases := []struct {
		name, src, field, msg string
	}{
		{"unknown field", "listne: 1.2.3.4:80\n", "listne", `unknown field "listne"`},
		{"unknown nested field", "tools: {alow: [x]}\n", "tools.alow", `unknown field "alow" in tools`},
		{"wrong type", "plugins: 3\n", "plugins", `must be a list, not "3"`},
		{"not yaml", "listen: [unclosed\n", "", "did not find"},
		{"two documents", "listen: 127.0.0.1:1\n---\nlisten: 127.0.0.1:2\n", "", "more than one YAML document"},
		{"bad listen", "listen: localhost\n", "listen", "not a host:port"},
		{"empty plugin", "plugins: ['']\n", "plugins[0]", "empty plugin path"},
		{"host with scheme", "allowedHosts: ['https://a.example']\n", "allowedHosts[0]", "not a hostname"},
		{"wildcard host", "allowedHosts: ['*.example.com']\n", "allowedHosts[0]", "not a hostname"},
		{"auth without tokens", "auth: {tokens: []}\n", "auth.tokens", "no tokens and no oauth"},
		{"auth with resource alone", "auth: {resource: 'https://gw.example.com/mcp'}\n", "auth.tokens", "no tokens and no oauth"},
		{"token in clear", "auth: {tokens: [{sha256: hunter2, subject: a}]}\n", "auth.tokens[0].sha256", "64 hexadecimal"},
		{"duplicate token", "auth: {tokens: [{sha256: " + hash + ", subject: a}, {sha256: " + strings.ToUpper(hash) + ", subject: b}]}\n", "auth.tokens[1].sha256", "twice"},
		{"no subject", "auth: {tokens: [{sha256: " + hash + "}]}\n", "auth.tokens[0].subject", "required"},
		{"bad scope", "auth: {tokens: [{sha256: " + hash + ", subject: a, scopes: [bank__x]}]}\n", "auth.tokens[0].scopes[0]", "not a tool or skill scope"},
		{"empty skill scope", "auth: {tokens: [{sha256: " + hash + ", subject: a, scopes: ['tool:x', 'skill:']}]}\n", "auth.tokens[0].scopes[1]", "not a tool or skill scope"},
		{"skills scope", "auth: {tokens: [{sha256: " + hash + ", subject: a, scopes: ['skills:x']}]}\n", "auth.tokens[0].scopes[0]", "not a tool or skill scope"},
		{"allow and block", "tools: {allow: [a], block: [b]}\n", "tools", "mutually exclusive"},
		{"zero rate", "rateLimit: {maxCalls: 0, window: 1m}\n", "rateLimit.maxCalls", "positive"},
		{"tiny window", "rateLimit: {maxCalls: 1, window: 1ms}\n", "rateLimit.window", "too short"},
		{"bad window", "rateLimit: {maxCalls: 1, window: soon}\n", "rateLimit.window", "\"soon\" is not a duration"},
		{"bad upstream protocol", "upstreamProtocol: latest\n", "upstreamProtocol", "not an MCP revision"},
		{"negative budget", "disclosure: {budget: -1}\n", "disclosure.budget", "negative"},
		{"negative cap", "firewall: {maxCallsPerRun: -2}\n", "firewall.maxCallsPerRun", "negative"},
		{"inheritEnv empty name", "inheritEnv: ['']\n", "inheritEnv[0]", "empty name"},
		{"inheritEnv gatehouse variable", "inheritEnv: [PATH, GATEHOUSE_STORE]\n", "inheritEnv[1]", "never passed"},
		{"inheritEnv gatehouse prefix", "inheritEnv: ['GATEHOUSE_*']\n", "inheritEnv[0]", "never passed"},
		{"inheritEnv not a name", "inheritEnv: ['A B']\n", "inheritEnv[0]", "not a variable name"},
		{"inheritEnv assignment", "inheritEnv: ['A=b']\n", "inheritEnv[0]", "not a variable name"},
		{"inheritEnv leading digit", "inheritEnv: ['1A']\n", "inheritEnv[0]", "not a variable name"},
		{"inheritEnv star inside", "inheritEnv: ['A*B']\n", "inheritEnv[0]", "not a variable name"},
		{"inheritEnv not a list", "inheritEnv: PATH\n", "inheritEnv", "must be a list"},
		{"empty server", "servers: {x: }\n", "servers.x", "empty server entry"},
		{"bad prefix", "servers: {x: {type: stdio, command: a, prefix: [1]}}\n", "", "prefix must be a string"},
		{"open listen without auth", "listen: 0.0.0.0:8080\n", "listen", "not a loopback address"},
		{"all interfaces without auth", "listen: ':8080'\n", "listen", "not a loopback address"},
		{"negative shutdown", "shutdownTimeout: -1s\n", "shutdownTimeout", "negative"},
		{"tiny lease", "journal: {lease: 10ms}\n", "journal.lease", "too short"},
		{"ttl under lease", "journal: {lease: 1m, ttl: 30s}\n", "journal.ttl", "shorter than the lease"},
		{"negative approval ttl", "approvals: {ttl: -1h}\n", "approvals.ttl", "too short"},
		{"tiny approval ttl", "approvals: {ttl: 10ms}\n", "approvals.ttl", "too short"},
		{"approvals unknown field", "approvals: {ttl: 1h, maxPending: 3}\n", "approvals.maxPending", "unknown field \"maxPending\" in approvals"},
		{"server command with spaces", "servers: {x: {type: stdio, command: 'rm -rf'}}\n", "servers.x", "single executable token"},
		{"server unknown type", "servers: {x: {type: http, url: 'https://a.example/mcp'}}\n", "servers.x", "unknown type"},
		{"server unknown field", "servers: {x: {type: stdio, command: a, comand: b}}\n", "servers.x", "comand"},
		{"server absolute command", "servers: {x: {type: stdio, command: /bin/sh}}\n", "servers.x", "bare executable"},
		{"server bad url", "servers: {x: {type: sse, url: 'ftp://a'}}\n", "servers.x", "invalid-url"},
		{"metrics without listen", "metrics: {}\n", "metrics.listen", "without listen"},
		{"metrics bad listen", "metrics: {listen: '9090'}\n", "metrics.listen", "not a host:port"},
		{"metrics on all interfaces", "metrics: {listen: ':9090'}\n", "metrics.listen", "no authentication"},
		{"metrics remote not allowed", "metrics: {listen: '10.0.0.5:9090'}\n", "metrics.listen", "not a loopback address"},
		{"metrics on the MCP address", "listen: 127.0.0.1:9000\nmetrics: {listen: '127.0.0.1:9000'}\n", "metrics.listen", "also the MCP listen address"},
		{"metrics unknown field", "metrics: {listen: '127.0.0.1:1', auth: x}\n", "metrics.auth", "unknown field \"auth\" in metrics"},
		{"negative upstream sessions per server", "sessions: {upstreamPerServer: -1}\n", "sessions.upstreamPerServer", "negative"},
		{"negative upstream sessions per subject", "sessions: {upstreamPerSubject: -4}\n", "sessions.upstreamPerSubject", "negative"},
		{"upstream sessions not a number", "sessions: {upstreamPerSubject: many}\n", "sessions.upstreamPerSubject", "must be a whole number, not \"many\""},
		{"sessions unknown field", "sessions: {upstreamPerSubjet: 2}\n", "sessions.upstreamPerSubjet", "unknown field \"upstreamPerSubjet\" in sessions"},
		{"oauth without resource", "auth: {oauth: {issuer: 'https://idp.example.com'}}\n", "auth.resource", "requires auth.resource"},
		{"resource not absolute", "auth: {resource: '/mcp', tokens: [{sha256: " + hash + ", subject: a}]}\n", "auth.resource", "not an absolute URL"},
		{"resource not a URL", "auth: {resource: 'https://gw example/%zz', tokens: [{sha256: " + hash + ", subject: a}]}\n", "auth.resource", "not a URL"},
		{"resource http", "auth: {resource: 'http://gw.example.com/mcp', tokens: [{sha256: " + hash + ", subject: a}]}\n", "auth.resource", "not loopback"},
		{"resource other scheme", "auth: {resource: 'wss://gw.example.com/mcp', tokens: [{sha256: " + hash + ", subject: a}]}\n", "auth.resource", "scheme"},
		{"resource fragment", "auth: {resource: 'https://gw.example.com/mcp#x', tokens: [{sha256: " + hash + ", subject: a}]}\n", "auth.resource", "fragment"},
		{"resource empty fragment", "auth: {resource: 'https://gw.example.com/mcp#', tokens: [{sha256: " + hash + ", subject: a}]}\n", "auth.resource", "fragment"},
		{"resource query", "auth: {resource: 'https://gw.example.com/mcp?t=1', tokens: [{sha256: " + hash + ", subject: a}]}\n", "auth.resource", "query"},
		{"resource user info", "auth: {resource: 'https://u:p@gw.example.com/mcp', tokens: [{sha256: " + hash + ", subject: a}]}\n", "auth.resource", "user info"},
		{"oauth without issuer", "auth: {resource: 'https://gw.example.com/mcp', oauth: {}}\n", "auth.oauth.issuer", "required"},
		{"issuer http", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'http://idp.example.com'}}\n", "auth.oauth.issuer", "not loopback"},
		{"issuer query", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com?tenant=a'}}\n", "auth.oauth.issuer", "query"},
		{"issuer fragment", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com#a'}}\n", "auth.oauth.issuer", "fragment"},
		{"issuer relative", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'idp.example.com'}}\n", "auth.oauth.issuer", "not an absolute URL"},
		{"jwks http", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', jwksURL: 'http://idp.example.com/jwks'}}\n", "auth.oauth.jwksURL", "not loopback"},
		{"jwks relative", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', jwksURL: '/jwks'}}\n", "auth.oauth.jwksURL", "not an absolute URL"},
		{"required scope with space", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', requiredScopes: ['a b']}}\n", "auth.oauth.requiredScopes[0]", "not a scope"},
		{"required scope with quote", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', requiredScopes: [mcp, 'a\"b']}}\n", "auth.oauth.requiredScopes[1]", "not a scope"},
		{"required scope empty", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', requiredScopes: ['']}}\n", "auth.oauth.requiredScopes[0]", "not a scope"},
		{"required tool scope", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', requiredScopes: ['tool:*']}}\n", "auth.oauth.requiredScopes[0]", "tool scope"},
		{"required skill scope", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', requiredScopes: [mcp, 'skill:hello__greet']}}\n", "auth.oauth.requiredScopes[1]", "is a skill scope"},
		{"required scope twice", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', requiredScopes: [mcp, mcp]}}\n", "auth.oauth.requiredScopes[1]", "twice"},
		{"subject claim iss", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', subjectClaim: iss}}\n", "auth.oauth.subjectClaim", "cannot identify"},
		{"subject claim with space", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', subjectClaim: 'a b'}}\n", "auth.oauth.subjectClaim", "cannot identify"},
		{"scopes claim other", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', scopesClaim: roles}}\n", "auth.oauth.scopesClaim", "not a scopes claim"},
		{"oauth unknown field", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', audience: x}}\n", "auth.oauth.audience", "unknown field \"audience\""},
		{"static subject like an oauth one", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com'}, tokens: [{sha256: " + hash + ", subject: 'https://idp.example.com#alice'}]}\n", "auth.tokens[0].subject", "form of a subject"},
		{"subject with two scope sets", "auth: {tokens: [{sha256: " + hash + ", subject: a}, {sha256: " + strings.Repeat("1", 64) + ", subject: a, scopes: ['tool:x']}]}\n", "auth.tokens[1].scopes", "other scopes"},
		{"introspection secret in the file", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', introspection: {url: 'https://idp.example.com/introspect', clientID: gw, clientSecret: hunter2}}}\n", "auth.oauth.introspection.clientSecret", "never written in the config file"},
		{"introspection secret beside its env", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', introspection: {url: 'https://idp.example.com/introspect', clientID: gw, clientSecretEnv: GW_SECRET, clientSecret: hunter2}}}\n", "auth.oauth.introspection.clientSecret", "never written"},
		{"introspection without url", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', introspection: {clientID: gw, clientSecretEnv: GW_SECRET}}}\n", "auth.oauth.introspection.url", "required"},
		{"introspection url http", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', introspection: {url: 'http://idp.example.com/introspect', clientID: gw, clientSecretEnv: GW_SECRET}}}\n", "auth.oauth.introspection.url", "not loopback"},
		{"introspection url relative", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', introspection: {url: '/introspect', clientID: gw, clientSecretEnv: GW_SECRET}}}\n", "auth.oauth.introspection.url", "not an absolute URL"},
		{"introspection url fragment", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', introspection: {url: 'https://idp.example.com/i#x', clientID: gw, clientSecretEnv: GW_SECRET}}}\n", "auth.oauth.introspection.url", "fragment"},
		{"introspection url user info", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', introspection: {url: 'https://gw:pw@idp.example.com/i', clientID: gw, clientSecretEnv: GW_SECRET}}}\n", "auth.oauth.introspection.url", "user info"},
		{"introspection without client", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', introspection: {url: 'https://idp.example.com/i', clientSecretEnv: GW_SECRET}}}\n", "auth.oauth.introspection.clientID", "required"},
		{"introspection client with control", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', introspection: {url: 'https://idp.example.com/i', clientID: \"g\\tw\", clientSecretEnv: GW_SECRET}}}\n", "auth.oauth.introspection.clientID", "control character"},
		{"introspection without secret env", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', introspection: {url: 'https://idp.example.com/i', clientID: gw}}}\n", "auth.oauth.introspection.clientSecretEnv", "required"},
		{"introspection secret env not a name", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', introspection: {url: 'https://idp.example.com/i', clientID: gw, clientSecretEnv: 'GW-SECRET'}}}\n", "auth.oauth.introspection.clientSecretEnv", "not an environment variable name"},
		{"introspection secret env with digit first", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', introspection: {url: 'https://idp.example.com/i', clientID: gw, clientSecretEnv: 1GW}}}\n", "auth.oauth.introspection.clientSecretEnv", "not an environment variable name"},
		{"introspection unknown field", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', introspection: {url: 'https://idp.example.com/i', clientID: gw, clientSecretEnv: GW, secret: x}}}\n", "auth.oauth.introspection.secret", "unknown field \"secret\""},
		{"introspection not a map", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', introspection: 'https://idp.example.com/i'}}\n", "auth.oauth.introspection", "must be a mapping of fields"},
		{"login secret in the file", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', login: {clientID: gw, clientSecret: hunter2}}}\n", "auth.oauth.login.clientSecret", "never written in the config file"},
		{"login secret beside its env", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', login: {clientID: gw, clientSecretEnv: GW_LOGIN, clientSecret: hunter2}}}\n", "auth.oauth.login.clientSecret", "never written"},
		{"login without client", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', login: {clientSecretEnv: GW_LOGIN}}}\n", "auth.oauth.login.clientID", "required"},
		{"login empty", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', login: {}}}\n", "auth.oauth.login.clientID", "required"},
		{"login client with control", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', login: {clientID: \"g\\u0001w\"}}}\n", "auth.oauth.login.clientID", "control character"},
		{"login secret env not a name", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', login: {clientID: gw, clientSecretEnv: 'GW-LOGIN'}}}\n", "auth.oauth.login.clientSecretEnv", "not an environment variable name"},
		{"login secret env with digit first", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', login: {clientID: gw, clientSecretEnv: 1GW}}}\n", "auth.oauth.login.clientSecretEnv", "not an environment variable name"},
		{"login unknown field", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', login: {clientID: gw, redirectURI: x}}}\n", "auth.oauth.login.redirectURI", "unknown field \"redirectURI\""},
		{"login not a map", "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', login: gw}}\n", "auth.oauth.login", "must be a mapping of fields"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src), "gh.yaml", "/srv")
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if ce.File != "gh.yaml" || ce.Field != tc.field || !strings.Contains(ce.Msg, tc.msg) {
				t.Errorf("got file=%q field=%q msg=%q; want field %q msg containing %q", ce.File, ce.Field, ce.Msg, tc.field, tc.msg)
			}
			if ce.Fix == "" {
				t.Errorf("no fix in %v", ce)
			}
			if !strings.HasPrefix(err.Error(), "gh.yaml") {
				t.Errorf("message does not start with the file: %v", err)
			}
		})
	}
}

func TestLoadConfigFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "gatehouse.yaml")
	if err := os.WriteFile(p, []byte("plugins: [p1]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.PluginDirs()[0] != filepath.Join(dir, "p1") {
		t.Errorf("plugins resolve against the file's directory: %v", c.PluginDirs())
	}
	_, err = Load(filepath.Join(dir, "missing.yaml"))
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "missing.yaml") || ce.Fix == "" {
		t.Fatalf("missing file: %v", err)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(fullConfig))
	f.Add([]byte(""))
	f.Add([]byte("servers: {a: {type: sse, url: 'http://127.0.0.1:1/sse', prefix: p}}"))
	f.Add([]byte("rateLimit: {maxCalls: 1, window: 1h}"))
	f.Add([]byte("metrics: {listen: '0.0.0.0:9090', allowRemote: true}"))
	f.Add([]byte("inheritEnv: [AWS_PROFILE, 'SSL_*', '*']"))
	f.Add([]byte("inheritEnv: ['GATEHOUSE_*', '', 'A=B']"))
	f.Add([]byte("console: {listen: '127.0.0.1:8081', sessionTTL: 8h, admins: [{name: alice, sha256: 5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8}]}"))
	f.Add([]byte("console: {listen: ':0', sessionTTL: 1s, secureCookies: true, admins: [{name: \"a\\u200b\", sha256: 00}, {name: a}]}"))
	f.Add([]byte("drift: {recheck: 2m}"))
	f.Add([]byte("drift: {recheck: 0}"))
	f.Add([]byte("drift: {recheck: 500ms, x: 1}"))
	f.Add([]byte("search: {enabled: true, limit: 50}"))
	f.Add([]byte("search: {enabled: false}"))
	f.Add([]byte("search: {enabled: yes, limit: 2.5, limit: 51}"))
	f.Add([]byte("search: {model: ./models/potion-base-8M, limit: 3}"))
	f.Add([]byte("audit: {enabled: true, retain: 90d, checkpoint: 5m, signingKeyFile: audit.key}"))
	f.Add([]byte("audit: {retain: 0, signingKeyEnv: KEY, signingKeyFile: k}"))
	f.Add([]byte("auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com', requiredScopes: [mcp], scopesClaim: scp}}"))
	f.Add([]byte("auth: {resource: 'http://127.0.0.1:8080/mcp#f', oauth: {issuer: 'http://[::1]:9/x?q', jwksURL: 'ftp://a'}}"))
	f.Add([]byte("auth: {resource: 'https://gw/mcp', oauth: {issuer: 'https://i', subjectClaim: exp, requiredScopes: ['tool:a', 'a\\\"b']}, tokens: [{sha256: '00', subject: 'https://i#a'}]}"))
	f.Add([]byte("auth: {resource: 'https://gw/mcp', oauth: {issuer: 'https://i', introspection: {url: 'https://i/introspect', clientID: gw, clientSecretEnv: GW_SECRET}}}"))
	f.Add([]byte("auth: {resource: 'https://gw/mcp', oauth: {issuer: 'https://i', login: {clientID: gw, clientSecretEnv: GW_LOGIN}}}"))
	f.Add([]byte("auth: {resource: 'https://gw/mcp', oauth: {issuer: 'https://i', login: {clientID: \"a\\u0001\", clientSecretEnv: '9X', clientSecret: s}}}"))
	f.Add([]byte("auth: {resource: 'https://gw/mcp', oauth: {issuer: 'https://i', introspection: {url: 'http://i/x#y', clientID: \"a\\u0001\", clientSecretEnv: '9X', clientSecret: s}}}"))
	f.Add([]byte("instance: gatehouse-0\nshutdownDrain: 15s\n"))
	f.Add([]byte("instance: 'a#1'\nshutdownDrain: -1s\n"))
	f.Add([]byte("instance: [a]\nshutdownDrain: ~\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "f.yaml", "/srv")
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || ce.File != "f.yaml" {
				t.Fatalf("error is not a *Error naming the file: %v", err)
			}
			return
		}
		if c.Listen == "" || c.Store == "" || c.Disclosure.Budget <= 0 {
			t.Fatalf("accepted config without defaults: %+v", c)
		}
		if len(c.Tools.Allow) > 0 && len(c.Tools.Block) > 0 {
			t.Fatal("accepted allow and block together")
		}
		if a := c.Audit; a.Retain < 0 || a.Checkpoint < MinAuditCheckpoint || (a.SigningKeyFile != "" && a.SigningKeyEnv != "") {
			t.Fatalf("accepted audit %+v", a)
		}
		if l := c.Search.Limit; l < 1 || l > MaxSearchLimit {
			t.Fatalf("accepted search.limit %d", l)
		}
		if c.ShutdownDrain < 0 || (c.Instance != "" && CheckInstance(c.Instance) != nil) || strings.ContainsAny(c.Instance, "#/ \t\n") {
			t.Fatalf("accepted shutdownDrain %v, instance %q", c.ShutdownDrain, c.Instance)
		}
		if r := c.Drift.Recheck; r < 0 || (r > 0 && r < MinDriftRecheck) || (r == 0) != c.Drift.RecheckOff() {
			t.Fatalf("accepted drift.recheck %v (off %v)", r, c.Drift.RecheckOff())
		}
		if a := c.Auth; a != nil {
			if len(a.Tokens) == 0 && a.OAuth == nil {
				t.Fatal("accepted auth without tokens or oauth")
			}
			if o := a.OAuth; o != nil {
				if a.Resource == "" || o.Issuer == "" || (o.ScopesClaim != "scope" && o.ScopesClaim != "scp") || o.SubjectClaim == "" {
					t.Fatalf("accepted auth.oauth %+v with resource %q", o, a.Resource)
				}
				if in := o.Introspection; in != nil && (in.URL == "" || in.ClientID == "" || !envName(in.ClientSecretEnv) || in.ClientSecret != "") {
					t.Fatalf("accepted auth.oauth.introspection %+v", in)
				}
				for _, s := range o.RequiredScopes {
					if strings.ContainsAny(s, " \"\\") || s == "" || strings.HasPrefix(s, "tool:") {
						t.Fatalf("accepted required scope %q", s)
					}
				}
			}
			if strings.Contains(a.Resource, "#") {
				t.Fatalf("accepted resource %q", a.Resource)
			}
		}
		for _, e := range c.InheritEnv {
			if strings.HasPrefix(e, "GATEHOUSE_") || strings.ContainsAny(e, "= \x00") {
				t.Fatalf("accepted inheritEnv entry %q", e)
			}
		}
	})
}

func TestListenAndInlineServers(t *testing.T) {
	if _, err := Parse([]byte("listen: 0.0.0.0:9000\nauth: {tokens: [{sha256: "+strings.Repeat("a", 64)+", subject: s}]}\n"), "x", "/srv"); err != nil {
		t.Fatalf("non-loopback with auth: %v", err)
	}
	for _, ok := range []string{"127.0.0.1:0", "localhost:1", "[::1]:2"} {
		c, _ := Parse(nil, "x", "/srv")
		if err := c.SetListen(ok); err != nil {
			t.Errorf("SetListen(%s): %v", ok, err)
		}
	}
	c, _ := Parse(nil, "x", "/srv")
	var ce *Error
	if err := c.SetListen("10.0.0.1:80"); !errors.As(err, &ce) || ce.Field != "listen" || c.Listen != DefaultListen {
		t.Errorf("SetListen to a private address without auth: %v (listen now %q)", err, c.Listen)
	}
	c, err := Parse([]byte(fullConfig), "gh.yaml", "/etc/gh")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.inline) != 2 || c.inline[0].cfg.Name != "local" || c.inline[0].cfg.PluginRoot != "/etc/gh" ||
		c.inline[0].cfg.PluginData != "/etc/gh/.gatehouse/data/local" || c.inline[0].prefix == nil || *c.inline[0].prefix != "" {
		t.Errorf("inline servers %+v", c.inline)
	}
	if c.ShutdownTimeout != DefaultShutdownTimeout || c.Journal.Lease != DefaultJournalLease || c.Journal.TTL != DefaultJournalTTL {
		t.Errorf("defaults: %v %+v", c.ShutdownTimeout, c.Journal)
	}
	if c.Approvals.TTL != DefaultApprovalTTL {
		t.Errorf("approvals.ttl default = %v", c.Approvals.TTL)
	}
	c, err = Parse([]byte("approvals: {ttl: 90m}\n"), "gh.yaml", "/etc/gh")
	if err != nil || c.Approvals.TTL != 90*time.Minute {
		t.Errorf("approvals.ttl 90m = %+v, %v", c.Approvals, err)
	}
}

func TestMetricsConfig(t *testing.T) {
	c, err := Parse(nil, "x", "/srv")
	if err != nil || c.Metrics != nil {
		t.Fatalf("metrics are off by default: %+v %v", c.Metrics, err)
	}
	for _, src := range []string{
		"metrics: {listen: '127.0.0.1:9090'}\n",
		"metrics: {listen: 'localhost:0'}\n",
		"metrics: {listen: '0.0.0.0:9090', allowRemote: true}\n",
	} {
		c, err := Parse([]byte(src), "x", "/srv")
		if err != nil || c.Metrics == nil || c.Metrics.Listen == "" {
			t.Errorf("%q: %v %+v", src, err, c)
		}
	}
}

func TestUpstreamProtocol(t *testing.T) {
	for src, want := range map[string]string{
		"":                               DefaultUpstreamProtocol,
		"upstreamProtocol: auto\n":       "",
		"upstreamProtocol: 2026-07-28\n": "2026-07-28",
	} {
		c, err := Parse([]byte(src), "gh.yaml", "/srv")
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if got := c.UpstreamProtocolVersion(); got != want {
			t.Errorf("%q: UpstreamProtocolVersion() = %q, want %q", src, got, want)
		}
	}
}

// auth.oauth takes its defaults, works alone (a non-loopback listen is
// then fine) and beside static tokens, and keeps what was given.
func TestOAuthConfig(t *testing.T) {
	c, err := Parse([]byte("listen: 0.0.0.0:8080\nauth:\n  resource: https://gw.example.com/mcp\n  oauth: {issuer: 'https://idp.example.com/realms/a'}\n"), "x", "/srv")
	if err != nil {
		t.Fatalf("oauth alone: %v", err)
	}
	o := c.Auth.OAuth
	if o.SubjectClaim != "sub" || o.ScopesClaim != "scope" || o.JWKSURL != "" || o.RequiredScopes != nil || c.Auth.Resource != "https://gw.example.com/mcp" {
		t.Errorf("defaults: %+v resource %q", o, c.Auth.Resource)
	}
	if c.Sessions.MaxPerSubject != DefaultMaxSessionsPerSubject {
		t.Errorf("sessions.maxPerSubject = %d with oauth, want the auth default", c.Sessions.MaxPerSubject)
	}
	c, err = Parse([]byte("auth:\n  resource: http://127.0.0.1:8080/mcp\n  oauth: {issuer: 'http://localhost:9000', jwksURL: 'http://[::1]:9000/keys', requiredScopes: [mcp, 'mcp:read'], subjectClaim: oid, scopesClaim: scp}\n  tokens: [{sha256: "+strings.Repeat("a", 64)+", subject: ci}]\n"), "x", "/srv")
	if err != nil {
		t.Fatalf("oauth beside tokens on loopback: %v", err)
	}
	o = c.Auth.OAuth
	if o.SubjectClaim != "oid" || o.ScopesClaim != "scp" || len(o.RequiredScopes) != 2 || len(c.Auth.Tokens) != 1 {
		t.Errorf("kept: %+v tokens %d", o, len(c.Auth.Tokens))
	}
	if o.Introspection != nil {
		t.Errorf("introspection without being configured: %+v", o.Introspection)
	}
	c, err = Parse([]byte("auth:\n  resource: https://gw.example.com/mcp\n  oauth:\n    issuer: https://idp.example.com\n    introspection: {url: 'https://idp.example.com/oauth2/introspect?tenant=a', clientID: 'gatehouse gw', clientSecretEnv: GATEHOUSE_INTROSPECTION_SECRET}\n"), "x", "/srv")
	if err != nil {
		t.Fatalf("introspection: %v", err)
	}
	in := c.Auth.OAuth.Introspection
	if in == nil || in.URL != "https://idp.example.com/oauth2/introspect?tenant=a" || in.ClientID != "gatehouse gw" || in.ClientSecretEnv != "GATEHOUSE_INTROSPECTION_SECRET" || in.ClientSecret != "" {
		t.Errorf("introspection kept: %+v", in)
	}
	if c.Auth.OAuth.Login != nil {
		t.Errorf("login without being configured: %+v", c.Auth.OAuth.Login)
	}
	c, err = Parse([]byte("auth:\n  resource: https://gw.example.com/mcp\n  oauth:\n    issuer: https://idp.example.com\n    login: {clientID: 'gatehouse gw', clientSecretEnv: GATEHOUSE_LOGIN_SECRET}\n"), "x", "/srv")
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	if l := c.Auth.OAuth.Login; l == nil || l.ClientID != "gatehouse gw" || l.ClientSecretEnv != "GATEHOUSE_LOGIN_SECRET" || l.ClientSecret != "" {
		t.Errorf("login kept: %+v", l)
	}
	if _, err := Parse([]byte("auth:\n  resource: https://gw.example.com/mcp\n  oauth:\n    issuer: https://idp.example.com\n    login: {clientID: gw}\n"), "x", "/srv"); err != nil {
		t.Errorf("login of a public client: %v", err)
	}
}
