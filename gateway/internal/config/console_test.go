package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const adminHash = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"

func TestConsoleConfig(t *testing.T) {
	c, err := Parse(nil, "x", "/srv")
	if err != nil || c.Console != nil {
		t.Fatalf("the console is off by default: %+v %v", c.Console, err)
	}
	c, err = Parse([]byte("console: {admins: [{name: alice, sha256: "+strings.ToUpper(adminHash)+"}]}\n"), "x", "/srv")
	if err != nil {
		t.Fatal(err)
	}
	k := c.Console
	if k.Listen != DefaultConsoleListen || k.SessionTTL != DefaultConsoleSessionTTL || k.SecureCookies ||
		len(k.Admins) != 1 || k.Admins[0].Name != "alice" || k.Admins[0].SHA256 != adminHash {
		t.Fatalf("defaults: %+v", k)
	}
	// A console always authenticates, so like listen with auth it may
	// serve beyond loopback.
	c, err = Parse([]byte("console: {listen: '0.0.0.0:8443', sessionTTL: 30m, secureCookies: true, admins: [{name: 'Alice Ops', sha256: "+adminHash+"}, {name: bob, sha256: "+strings.Repeat("a", 64)+"}]}\n"), "x", "/srv")
	if err != nil || c.Console.Listen != "0.0.0.0:8443" || c.Console.SessionTTL != 30*time.Minute || !c.Console.SecureCookies || len(c.Console.Admins) != 2 {
		t.Fatalf("%+v %v", c.Console, err)
	}
}

// oauthCfg configures auth.oauth, which console.adminScope needs.
const oauthCfg = "auth: {resource: 'https://gw.example.com/mcp', oauth: {issuer: 'https://idp.example.com'}}\n"

// TestConsoleAdminScope: with auth.oauth, adminScope is kept and admins
// may be empty; both together are fine too.
func TestConsoleAdminScope(t *testing.T) {
	c, err := Parse([]byte(oauthCfg+"console: {adminScope: 'gatehouse:admin'}\n"), "x", "/srv")
	if err != nil || c.Console.AdminScope == nil || *c.Console.AdminScope != "gatehouse:admin" || len(c.Console.Admins) != 0 {
		t.Fatalf("%+v %v", c.Console, err)
	}
	c, err = Parse([]byte(oauthCfg+"console: {adminScope: 'gatehouse:admin', admins: [{name: alice, sha256: "+adminHash+"}]}\n"), "x", "/srv")
	if err != nil || c.Console.AdminScope == nil || len(c.Console.Admins) != 1 {
		t.Fatalf("%+v %v", c.Console, err)
	}
	c, err = Parse([]byte("console: {admins: [{name: alice, sha256: "+adminHash+"}]}\n"), "x", "/srv")
	if err != nil || c.Console.AdminScope != nil {
		t.Fatalf("absent adminScope: %+v %v", c.Console, err)
	}
}

// TestConsoleConfigErrors: every way console can be wrong is a *Error
// naming the field, with a fix.
func TestConsoleConfigErrors(t *testing.T) {
	admin := "admins: [{name: alice, sha256: " + adminHash + "}]"
	cases := []struct{ name, src, field, msg string }{
		{"not a mapping", "console: 8081\n", "console", "must be a mapping of fields"},
		{"unknown field", "console: {listen: '127.0.0.1:8081', " + admin + ", tokens: []}\n", "console.tokens", "unknown field \"tokens\" in console"},
		{"bad listen", "console: {listen: '8081', " + admin + "}\n", "console.listen", "not a host:port"},
		{"listen of the MCP endpoint", "listen: 127.0.0.1:9000\nconsole: {listen: '127.0.0.1:9000', " + admin + "}\n", "console.listen", "MCP listen address"},
		{"listen of metrics", "metrics: {listen: '127.0.0.1:9090'}\nconsole: {listen: '127.0.0.1:9090', " + admin + "}\n", "console.listen", "metrics listen address"},
		{"no admins", "console: {listen: '127.0.0.1:8081'}\n", "console.admins", "no admins"},
		{"empty admins", "console: {admins: []}\n", "console.admins", "no admins"},
		{"admins not a list", "console: {admins: alice}\n", "console.admins", "must be a list"},
		{"admin unknown field", "console: {admins: [{name: a, sha256: " + adminHash + ", scopes: [x]}]}\n", "console.admins[0].scopes", "unknown field \"scopes\" in console.admins[0]"},
		{"admin without name", "console: {admins: [{sha256: " + adminHash + "}]}\n", "console.admins[0].name", "required"},
		{"admin blank name", "console: {admins: [{name: '  ', sha256: " + adminHash + "}]}\n", "console.admins[0].name", "required"},
		{"admin name with control", "console: {admins: [{name: \"a\\tb\", sha256: " + adminHash + "}]}\n", "console.admins[0].name", "not a printable name"},
		{"admin name with zero width", "console: {admins: [{name: \"ali\\u200bce\", sha256: " + adminHash + "}]}\n", "console.admins[0].name", "not a printable name"},
		{"admin name padded", "console: {admins: [{name: ' alice', sha256: " + adminHash + "}]}\n", "console.admins[0].name", "not a printable name"},
		{"admin name too long", "console: {admins: [{name: " + strings.Repeat("a", 65) + ", sha256: " + adminHash + "}]}\n", "console.admins[0].name", "not a printable name"},
		{"admin twice", "console: {admins: [{name: a, sha256: " + adminHash + "}, {name: a, sha256: " + strings.Repeat("b", 64) + "}]}\n", "console.admins[1].name", "twice"},
		{"token in clear", "console: {admins: [{name: a, sha256: hunter2}]}\n", "console.admins[0].sha256", "64 hexadecimal"},
		{"no token", "console: {admins: [{name: a}]}\n", "console.admins[0].sha256", "64 hexadecimal"},
		{"short hash", "console: {admins: [{name: a, sha256: " + adminHash[:62] + "}]}\n", "console.admins[0].sha256", "64 hexadecimal"},
		{"same token twice", "console: {admins: [{name: a, sha256: " + adminHash + "}, {name: b, sha256: " + strings.ToUpper(adminHash) + "}]}\n", "console.admins[1].sha256", "twice"},
		{"session too short", "console: {sessionTTL: 10s, " + admin + "}\n", "console.sessionTTL", "out of bounds"},
		{"session negative", "console: {sessionTTL: -1h, " + admin + "}\n", "console.sessionTTL", "out of bounds"},
		{"session too long", "console: {sessionTTL: 200h, " + admin + "}\n", "console.sessionTTL", "out of bounds"},
		{"session not a duration", "console: {sessionTTL: soon, " + admin + "}\n", "console.sessionTTL", "\"soon\" is not a duration"},
		{"adminScope empty", oauthCfg + "console: {adminScope: ''}\n", "console.adminScope", "empty"},
		{"adminScope with a space", oauthCfg + "console: {adminScope: 'gatehouse:admin mcp'}\n", "console.adminScope", "not a single OAuth scope"},
		{"adminScope with a control", oauthCfg + "console: {adminScope: \"gatehouse:admin\\t\"}\n", "console.adminScope", "not a single OAuth scope"},
		{"adminScope with a quote", oauthCfg + "console: {adminScope: 'a\"b'}\n", "console.adminScope", "not a single OAuth scope"},
		{"adminScope non-ASCII", oauthCfg + "console: {adminScope: \"admin\\u00e9\"}\n", "console.adminScope", "not a single OAuth scope"},
		{"adminScope without auth.oauth", "console: {adminScope: gatehouse:admin}\n", "console.adminScope", "needs auth.oauth"},
		{"adminScope with static auth only", "auth: {tokens: [{subject: a, sha256: " + strings.Repeat("c", 64) + "}]}\nconsole: {adminScope: gatehouse:admin, " + admin + "}\n", "console.adminScope", "needs auth.oauth"},
		{"adminScope not a string", oauthCfg + "console: {adminScope: [a]}\n", "console.adminScope", "must be a string"},
		{"secureCookies not a bool", "console: {secureCookies: maybe, " + admin + "}\n", "console.secureCookies", "must be true or false"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src), "gh.yaml", "/srv")
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if ce.File != "gh.yaml" || ce.Field != tc.field || !strings.Contains(ce.Msg, tc.msg) {
				t.Errorf("got field=%q msg=%q; want field %q msg containing %q", ce.Field, ce.Msg, tc.field, tc.msg)
			}
			if ce.Fix == "" {
				t.Errorf("no fix in %v", ce)
			}
		})
	}
}
