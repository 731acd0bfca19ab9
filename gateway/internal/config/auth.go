package config

import (
	"fmt"
	"net/url"
	"strings"
)

// Defaults of auth.oauth.
const (
	DefaultSubjectClaim = "sub"
	DefaultScopesClaim  = "scope"
)

// notSubjects are claims that never identify a caller: taken as the
// subject they would merge every caller of the issuer (iss, aud), or make
// each token its own caller (exp, iat, jti, ...).
var notSubjects = map[string]bool{"iss": true, "aud": true, "exp": true, "nbf": true, "iat": true,
	"jti": true, "scope": true, "scp": true, "typ": true}

// checkOAuth checks auth.resource and auth.oauth and applies their
// defaults.
func (c *Config) checkOAuth() error {
	a := c.Auth
	if a.Resource != "" {
		if err := checkAuthURL(a.Resource, true); err != nil {
			return c.errf("auth.resource", "give the canonical https URL of the MCP endpoint, such as https://gw.example.com/mcp (http only on a loopback host)",
				"%q %v", a.Resource, err)
		}
	}
	o := a.OAuth
	if o == nil {
		return nil
	}
	if a.Resource == "" {
		return c.errf("auth.resource", "set auth.resource to the canonical URL of the MCP endpoint, such as https://gw.example.com/mcp: tokens must be issued for it",
			"auth.oauth requires auth.resource (the audience tokens are checked against)")
	}
	if o.Issuer == "" {
		return c.errf("auth.oauth.issuer", "set the authorization server's issuer identifier, such as https://idp.example.com",
			"issuer is required")
	}
	if err := checkAuthURL(o.Issuer, true); err != nil {
		return c.errf("auth.oauth.issuer", "use the issuer identifier exactly as the authorization server's metadata states it (https, no query or fragment)",
			"%q %v", o.Issuer, err)
	}
	if o.JWKSURL != "" {
		if err := checkAuthURL(o.JWKSURL, false); err != nil {
			return c.errf("auth.oauth.jwksURL", "give the https URL of the issuer's JWKS, or leave it empty to discover it from the issuer's metadata",
				"%q %v", o.JWKSURL, err)
		}
	}
	seen := map[string]bool{}
	for i, s := range o.RequiredScopes {
		f := fmt.Sprintf("auth.oauth.requiredScopes[%d]", i)
		switch {
		case !scopeToken(s):
			return c.errf(f, "use a scope name as the authorization server issues it, such as mcp (printable ASCII, no space, quote or backslash)",
				"%q is not a scope (RFC 6749 §3.3)", s)
		case strings.HasPrefix(s, "tool:"), strings.HasPrefix(s, "skill:"):
			return c.errf(f, "leave tool and skill scopes to the tokens: they choose which tools and skills a token sees; requiredScopes are what every token must have",
				"%q is a %s scope", s, s[:strings.IndexByte(s, ':')])
		case seen[s]:
			return c.errf(f, "list each scope once", "%q is listed twice", s)
		}
		seen[s] = true
	}
	if o.SubjectClaim == "" {
		o.SubjectClaim = DefaultSubjectClaim
	}
	if !claimName(o.SubjectClaim) || notSubjects[o.SubjectClaim] {
		return c.errf("auth.oauth.subjectClaim", "name the claim that identifies the caller, such as sub (the default) or oid",
			"%q cannot identify a caller", o.SubjectClaim)
	}
	if o.ScopesClaim == "" {
		o.ScopesClaim = DefaultScopesClaim
	}
	if o.ScopesClaim != "scope" && o.ScopesClaim != "scp" {
		return c.errf("auth.oauth.scopesClaim", `use "scope" (a space-separated string, RFC 9068) or "scp" (an array, e.g. Entra ID, Okta)`,
			"%q is not a scopes claim", o.ScopesClaim)
	}
	if l := o.Login; l != nil {
		if err := c.checkLogin(l); err != nil {
			return err
		}
	}
	if in := o.Introspection; in != nil {
		return c.checkIntrospection(in)
	}
	return nil
}

// checkLogin checks auth.oauth.login.
func (c *Config) checkLogin(l *Login) error {
	const f = "auth.oauth.login"
	switch {
	case l.ClientSecret != "":
		return c.errf(f+".clientSecret", "put the secret in an environment variable and name it in clientSecretEnv, such as GATEHOUSE_LOGIN_SECRET",
			"a client secret is never written in the config file")
	case l.ClientID == "":
		return c.errf(f+".clientID", "give the gateway's OpenID client id at auth.oauth.issuer (redirect URI: connect.publicURL + /connect/login)",
			"clientID is required")
	}
	for _, r := range l.ClientID {
		if r < 0x20 || r == 0x7f {
			return c.errf(f+".clientID", "use the client id exactly as the authorization server shows it",
				"%q has a control character", l.ClientID)
		}
	}
	if l.ClientSecretEnv != "" && !envName(l.ClientSecretEnv) {
		return c.errf(f+".clientSecretEnv", "name an environment variable (letters, digits and _, not starting with a digit); the secret itself goes in that variable",
			"%q is not an environment variable name", l.ClientSecretEnv)
	}
	return nil
}

// checkIntrospection checks auth.oauth.introspection.
func (c *Config) checkIntrospection(in *Introspection) error {
	const f = "auth.oauth.introspection"
	switch {
	case in.ClientSecret != "":
		return c.errf(f+".clientSecret", "put the secret in an environment variable and name it in clientSecretEnv, such as GATEHOUSE_INTROSPECTION_SECRET",
			"a client secret is never written in the config file")
	case in.URL == "":
		return c.errf(f+".url", "give the authorization server's RFC 7662 introspection endpoint, such as https://idp.example.com/oauth2/introspect",
			"url is required")
	}
	if err := checkAuthURL(in.URL, false); err != nil {
		return c.errf(f+".url", "give the https URL of the introspection endpoint (http only on a loopback host)",
			"%q %v", in.URL, err)
	}
	if in.ClientID == "" {
		return c.errf(f+".clientID", "give the gateway's client id at the authorization server (a client allowed to introspect)",
			"clientID is required")
	}
	for _, r := range in.ClientID {
		if r < 0x20 || r == 0x7f {
			return c.errf(f+".clientID", "use the client id exactly as the authorization server shows it",
				"%q has a control character", in.ClientID)
		}
	}
	if in.ClientSecretEnv == "" {
		return c.errf(f+".clientSecretEnv", "name the environment variable that holds the gateway's client secret, such as GATEHOUSE_INTROSPECTION_SECRET",
			"clientSecretEnv is required")
	}
	if !envName(in.ClientSecretEnv) {
		return c.errf(f+".clientSecretEnv", "name an environment variable (letters, digits and _, not starting with a digit); the secret itself goes in that variable",
			"%q is not an environment variable name", in.ClientSecretEnv)
	}
	return nil
}

// checkAuthURL checks an absolute http(s) URL without fragment or user
// info, https unless its host is loopback; noQuery refuses a query too.
func checkAuthURL(s string, noQuery bool) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("is not a URL: %w", err)
	case u.Scheme == "" || u.Host == "" || u.Opaque != "":
		return fmt.Errorf("is not an absolute URL")
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("has scheme %q; want https", u.Scheme)
	case u.Scheme == "http" && !isLoopback(u.Hostname()):
		return fmt.Errorf("is http on a host that is not loopback; want https")
	case u.User != nil:
		return fmt.Errorf("carries user info")
	case u.Fragment != "" || strings.Contains(s, "#"):
		return fmt.Errorf("has a fragment")
	case noQuery && (u.RawQuery != "" || u.ForceQuery):
		return fmt.Errorf("has a query")
	}
	return nil
}

// visibilityScope reports whether s is a scope of a static token: "tool:"
// or "skill:" followed by a projected name or "*".
func visibilityScope(s string) bool {
	for _, kind := range []string{"tool:", "skill:"} {
		if name, ok := strings.CutPrefix(s, kind); ok {
			return name != ""
		}
	}
	return false
}

// scopeToken reports whether s is an RFC 6749 scope-token: one or more of
// %x21 / %x23-5B / %x5D-7E (so it can be quoted in WWW-Authenticate).
func scopeToken(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b < 0x21 || b > 0x7e || b == '"' || b == '\\' {
			return false
		}
	}
	return s != ""
}

// claimName reports whether s can name a JWT claim here: printable ASCII
// without space or quote.
func claimName(s string) bool { return scopeToken(s) }
