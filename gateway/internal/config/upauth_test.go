package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// gh is a servers: entry head for the auth tests.
const gh = "servers:\n  gh:\n    type: streamable-http\n    url: 'https://api.example.com/mcp'\n"

func TestServerAuthConfig(t *testing.T) {
	src := "connect: {publicURL: 'https://gw.example.com', flowTTL: 5m}\n" + gh +
		"    auth: user\n    oauth: {clientID: gw, clientSecretEnv: GH_SECRET, scopes: [repo, 'read:org']}\n" +
		"  svc:\n    type: streamable-http\n    url: 'https://svc.example.com/mcp'\n    auth: service\n    oauth: {clientMetadataURL: 'https://gw.example.com/client.json'}\n" +
		"  ex:\n    type: streamable-http\n    url: 'https://ex.example.com/mcp'\n    auth: exchange\n    exchange: {tokenURL: 'https://idp.example.com/token', clientID: gw, clientSecretEnv: EX_SECRET, audience: 'https://ex.example.com/mcp'}\n    sharedContent: true\n" +
		"  plain:\n    type: streamable-http\n    url: 'https://plain.example.com/mcp'\n"
	c, err := Parse([]byte(src), "gh.yaml", "/srv")
	if err != nil {
		t.Fatal(err)
	}
	a := c.ServerAuths()
	if len(a) != 3 || a["gh"].Mode != AuthUser || a["svc"].Mode != AuthService || a["ex"].Mode != AuthExchange {
		t.Fatalf("auths %+v", a)
	}
	if o := a["gh"].OAuth; o == nil || o.ClientID != "gw" || o.ClientSecretEnv != "GH_SECRET" || strings.Join(o.Scopes, " ") != "repo read:org" {
		t.Fatalf("gh oauth %+v", o)
	}
	if x := a["ex"].Exchange; x == nil || x.TokenURL != "https://idp.example.com/token" || x.Audience != "https://ex.example.com/mcp" {
		t.Fatalf("exchange %+v", x)
	}
	if !a["ex"].SharedContent || a["gh"].SharedContent {
		t.Fatalf("sharedContent: ex %v, gh %v", a["ex"].SharedContent, a["gh"].SharedContent)
	}
	if c.Connect.FlowTTL != 5*time.Minute || c.Connect.RedirectURL() != "https://gw.example.com/connect/callback" {
		t.Fatalf("connect %+v", c.Connect)
	}
	// The auth keys are not the mcp.json entry's: it parsed without them.
	for _, s := range c.InlineServers() {
		if s.Config.Name == "gh" && s.Config.URL != "https://api.example.com/mcp" {
			t.Fatalf("gh %+v", s.Config)
		}
	}
	d, err := Parse(nil, "", "/srv")
	if err != nil || d.Connect.FlowTTL != DefaultConnectFlowTTL {
		t.Fatalf("default flowTTL %v %v", d.Connect.FlowTTL, err)
	}
}

// TestServerAuthErrors: every wrong value of auth, oauth, exchange and
// connect is a *Error naming its field.
func TestServerAuthErrors(t *testing.T) {
	const pub = "connect: {publicURL: 'https://gw.example.com'}\n"
	cases := []struct{ name, src, field, msg string }{
		{"unknown mode", gh + "    auth: users\n", "servers.gh.auth", "not an auth mode"},
		{"mode not a string", gh + "    auth: [user]\n", "", "auth must be a string"},
		{"stdio", "servers:\n  gh: {type: stdio, command: true-cmd, auth: service, oauth: {clientID: a}}\n", "servers.gh.auth", "on a stdio server"},
		{"sse", "servers:\n  gh: {type: sse, url: 'https://a.example.com/sse', auth: service, oauth: {clientID: a}}\n", "servers.gh.auth", "on a sse server"},
		{"oauth without auth", gh + "    oauth: {clientID: a}\n", "servers.gh.auth", "without auth"},
		{"no client", gh + "    auth: service\n", "servers.gh.oauth.clientID", "client is required"},
		{"empty client", gh + "    auth: service\n    oauth: {scopes: [a]}\n", "servers.gh.oauth.clientID", "client is required"},
		{"unknown oauth key", gh + "    auth: service\n    oauth: {clientId: a}\n", "", "unknown field"},
		{"secret in config", gh + "    auth: service\n    oauth: {clientID: a, clientSecret: s}\n", "", "unknown field"},
		{"control in client", gh + "    auth: service\n    oauth: {clientID: \"a\\u0001\"}\n", "servers.gh.oauth.clientID", "control character"},
		{"bad secret env", gh + "    auth: service\n    oauth: {clientID: a, clientSecretEnv: '1X'}\n", "servers.gh.oauth.clientSecretEnv", "not an environment variable"},
		{"http metadata url", gh + "    auth: service\n    oauth: {clientMetadataURL: 'http://gw.example.com/c.json'}\n", "servers.gh.oauth.clientMetadataURL", "not an https URL"},
		{"root metadata url", gh + "    auth: service\n    oauth: {clientMetadataURL: 'https://gw.example.com/'}\n", "servers.gh.oauth.clientMetadataURL", "not an https URL"},
		{"bad scope", gh + "    auth: service\n    oauth: {clientID: a, scopes: ['a b']}\n", "servers.gh.oauth.scopes[0]", "not a scope"},
		{"user without publicURL", gh + "    auth: user\n    oauth: {clientID: a}\n", "connect.publicURL", "auth: user"},
		{"user with exchange", pub + gh + "    auth: user\n    oauth: {clientID: a}\n    exchange: {tokenURL: 'https://i/t', clientID: a}\n", "servers.gh.exchange", "with auth: user"},
		{"user server named login", pub + "servers:\n  login:\n    type: streamable-http\n    url: https://a.example.com/mcp\n    auth: user\n    oauth: {clientID: a}\n", "servers.login", "cannot be named"},
		{"user server named callback", pub + "servers:\n  callback:\n    type: streamable-http\n    url: https://a.example.com/mcp\n    auth: user\n    oauth: {clientID: a}\n", "servers.callback", "cannot be named"},
		{"exchange with oauth", gh + "    auth: exchange\n    oauth: {clientID: a}\n", "servers.gh.oauth", "with auth: exchange"},
		{"exchange without block", gh + "    auth: exchange\n", "servers.gh.exchange.tokenURL", "required"},
		{"exchange http token url", gh + "    auth: exchange\n    exchange: {tokenURL: 'http://idp.example.com/t', clientID: a}\n", "servers.gh.exchange.tokenURL", "not loopback"},
		{"exchange relative url", gh + "    auth: exchange\n    exchange: {tokenURL: '/t', clientID: a}\n", "servers.gh.exchange.tokenURL", "not an absolute URL"},
		{"exchange no client", gh + "    auth: exchange\n    exchange: {tokenURL: 'https://i/t'}\n", "servers.gh.exchange.clientID", "required"},
		{"exchange bad audience", gh + "    auth: exchange\n    exchange: {tokenURL: 'https://i/t', clientID: a, audience: 'x#y'}\n", "servers.gh.exchange.audience", "absolute URI"},
		{"exchange bad resource", gh + "    auth: exchange\n    exchange: {tokenURL: 'https://i/t', clientID: a, resource: 'rel'}\n", "servers.gh.exchange.resource", "absolute URI"},
		{"exchange bad scope", gh + "    auth: exchange\n    exchange: {tokenURL: 'https://i/t', clientID: a, scopes: ['']}\n", "servers.gh.exchange.scopes[0]", "not a scope"},
		{"exchange unknown key", gh + "    auth: exchange\n    exchange: {tokenUrl: 'https://i/t'}\n", "", "unknown field"},
		{"publicURL http", "connect: {publicURL: 'http://gw.example.com'}\n", "connect.publicURL", "not loopback"},
		{"publicURL query", "connect: {publicURL: 'https://gw.example.com/?a=b'}\n", "connect.publicURL", "has a query"},
		{"publicURL relative", "connect: {publicURL: 'gw.example.com'}\n", "connect.publicURL", "not an absolute URL"},
		{"flowTTL short", "connect: {flowTTL: 5s}\n", "connect.flowTTL", "too short"},
		{"flowTTL long", "connect: {flowTTL: 2h}\n", "connect.flowTTL", "out of range"},
		{"flowTTL negative", "connect: {flowTTL: -1m}\n", "connect.flowTTL", "out of range"},
		{"sharedContent without auth", gh + "    sharedContent: true\n", "servers.gh.sharedContent", "without auth: user or exchange"},
		{"sharedContent with service", gh + "    auth: service\n    oauth: {clientID: a}\n    sharedContent: true\n", "servers.gh.sharedContent", "without auth: user or exchange"},
		{"sharedContent not a bool", gh + "    sharedContent: 'yes'\n", "", "sharedContent must be true or false"},
		{"connect unknown key", "connect: {publicUrl: 'https://gw.example.com'}\n", "connect.publicUrl", "unknown field \"publicUrl\" in connect"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src), "gh.yaml", "/srv")
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if ce.Field != tc.field || !strings.Contains(ce.Msg, tc.msg) {
				t.Errorf("got field=%q msg=%q; want field %q msg containing %q", ce.Field, ce.Msg, tc.field, tc.msg)
			}
			if ce.Fix == "" {
				t.Errorf("no fix in %v", ce)
			}
		})
	}
}
