package config

import (
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Defaults and bounds of console.
const (
	// DefaultConsoleListen is console.listen's default (docs/gateway.md, Config fields).
	DefaultConsoleListen = "127.0.0.1:8081"
	// DefaultConsoleSessionTTL is console.sessionTTL's default.
	DefaultConsoleSessionTTL = 8 * time.Hour
	// MinConsoleSessionTTL and MaxConsoleSessionTTL bound
	// console.sessionTTL.
	MinConsoleSessionTTL = time.Minute
	MaxConsoleSessionTTL = 7 * 24 * time.Hour
)

// Console configures the operator web console (docs/console.md), served on
// a listener of its own. Absent means no console. Its YAML form is
// console: {listen: 127.0.0.1:8081, admins: [{name: alice, sha256: HEX}]}.
type Console struct {
	// Listen is the console's listen address (host:port). Default
	// 127.0.0.1:8081. Like listen, a non-loopback address is allowed: the
	// console always authenticates (admins is required); put TLS in front
	// and set secureCookies.
	Listen string `yaml:"listen" json:"listen"`
	// Admins are the operators who may log in, each with a token stored as
	// its SHA-256 hex. The name is the identity recorded with every
	// decision, trust and purge the operator makes.
	Admins []Admin `yaml:"admins" json:"admins"`
	// AdminScope, when set, lets an OAuth access token log in too: one
	// that the gateway verifies as it verifies the MCP endpoint's (issuer,
	// audience auth.resource, signature, expiry) and that holds this scope,
	// e.g. gatehouse:admin, matched exactly. The operator is the token's
	// subject (issuer#sub). It requires auth.oauth; with it, admins may be
	// empty. Nil when absent (an empty string present is an error).
	//
	// The scope, not the audience, is what tells a console token from an
	// MCP token (both are for auth.resource): the authorization server
	// must grant it to operators only, never to an agent's client (a
	// token holding it and the MCP scopes works at both), and
	// auth.oauth.requiredScopes keeps a console-only token off the MCP
	// endpoint (docs/console.md).
	AdminScope *string `yaml:"adminScope" json:"adminScope"`
	// SessionTTL is how long a login lasts (between 1m and 7d, default 8h).
	SessionTTL time.Duration `yaml:"sessionTTL" json:"sessionTTL"`
	// SecureCookies marks the session cookie Secure even when the console
	// itself is served over plain HTTP: set it when a TLS proxy is in
	// front. (Over TLS the cookie is Secure anyway.)
	SecureCookies bool `yaml:"secureCookies" json:"secureCookies"`
}

// Admin is one operator of the console.
type Admin struct {
	// Name identifies the operator in the audit trail and in decisions.
	Name string `yaml:"name" json:"name"`
	// SHA256 is the SHA-256 hex of the operator's token, never the token.
	SHA256 string `yaml:"sha256" json:"sha256"`
}

// consoleFix is the fix of a mistake in console's shape.
const consoleFix = "write console: {listen: 127.0.0.1:8081, admins: [{name: alice, sha256: HEX}]}, the hash being `printf %s \"$TOKEN\" | sha256sum`"

// checkConsole checks console and applies its defaults: a host:port of its
// own, at least one admin or an adminScope (with auth.oauth), each with a printable name and a token hash,
// none repeated, and a session TTL within bounds.
func (c *Config) checkConsole() error {
	k := c.Console
	if k == nil {
		return nil
	}
	if k.Listen == "" {
		k.Listen = DefaultConsoleListen
	}
	if k.SessionTTL == 0 {
		k.SessionTTL = DefaultConsoleSessionTTL
	}
	_, port, err := net.SplitHostPort(k.Listen)
	if err != nil {
		return c.errf("console.listen", "use host:port, for example 127.0.0.1:8081", "%q is not a host:port address", k.Listen)
	}
	if port != "0" && k.Listen == c.Listen {
		return c.errf("console.listen", "give the console its own port", "%q is also the MCP listen address", k.Listen)
	}
	if port != "0" && c.Metrics != nil && k.Listen == c.Metrics.Listen {
		return c.errf("console.listen", "give the console its own port", "%q is also the metrics listen address", k.Listen)
	}
	if k.AdminScope != nil {
		if err := c.checkAdminScope(*k.AdminScope); err != nil {
			return err
		}
	}
	if len(k.Admins) == 0 && k.AdminScope == nil {
		return c.errf("console.admins", consoleFix, "the console has no admins: nobody could log in")
	}
	names := map[string]bool{}
	hashes := map[string]bool{}
	for i, a := range k.Admins {
		f := fmt.Sprintf("console.admins[%d]", i)
		switch {
		case strings.TrimSpace(a.Name) == "":
			return c.errf(f+".name", "name the operator, e.g. name: alice (it is recorded with every action)", "name is required")
		case !printableName(a.Name):
			return c.errf(f+".name", "use a name of printable characters, at most 64", "%q is not a printable name", a.Name)
		case names[a.Name]:
			return c.errf(f+".name", "give each operator a name of their own", "%q is listed twice", a.Name)
		}
		names[a.Name] = true
		h := strings.ToLower(a.SHA256)
		if b, err := hex.DecodeString(h); err != nil || len(b) != 32 {
			return c.errf(f+".sha256", "put the SHA-256 hex of the token, e.g. `printf %s \"$TOKEN\" | sha256sum`, never the token",
				"must be 64 hexadecimal characters")
		}
		if hashes[h] {
			return c.errf(f+".sha256", "give each operator a token of their own", "the same token hash appears twice")
		}
		hashes[h] = true
		k.Admins[i].SHA256 = h
	}
	if k.SessionTTL < MinConsoleSessionTTL || k.SessionTTL > MaxConsoleSessionTTL {
		return c.errf("console.sessionTTL", "use a duration between 1m and 168h, such as 8h (the default)", "%v is out of bounds", k.SessionTTL)
	}
	return nil
}

// checkAdminScope checks console.adminScope: a scope token of RFC 6749
// §3.3 (printable ASCII but space, '"' and '\\'), and auth.oauth to verify
// the tokens holding it.
func (c *Config) checkAdminScope(scope string) error {
	const f = "console.adminScope"
	if scope == "" {
		return c.errf(f, "name the scope an admin's access token holds, e.g. adminScope: gatehouse:admin, or remove the key", "the scope is empty")
	}
	for _, r := range scope {
		if r <= ' ' || r > '~' || r == '"' || r == '\\' {
			return c.errf(f, "use one scope of printable ASCII without spaces, quotes or backslashes, e.g. gatehouse:admin", "%q is not a single OAuth scope", scope)
		}
	}
	if c.Auth == nil || c.Auth.OAuth == nil {
		return c.errf(f, "configure auth.oauth (the issuer whose tokens carry the scope), or log in with console.admins alone", "console.adminScope needs auth.oauth, which is not configured")
	}
	return nil
}

// printableName reports whether s is valid UTF-8 of at most 64 printable
// characters, without leading or trailing space.
func printableName(s string) bool {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > 64 || strings.TrimSpace(s) != s {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
