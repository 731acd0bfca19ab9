package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The modes of servers.NAME.auth: whose token the gateway presents to a
// streamable HTTP upstream that requires the MCP authorization flow.
const (
	// AuthService: one token for the gateway, obtained once by an operator
	// with `gatehouse connect NAME` and kept in the vault.
	AuthService = "service"
	// AuthUser: each subject connects its own account at the upstream's
	// authorization server through /connect/NAME; calls carry that
	// subject's token, and a subject without one is refused auth_required.
	AuthUser = "user"
	// AuthExchange: the caller's verified token is exchanged (RFC 8693) at
	// the configured token endpoint for one whose audience is the upstream.
	AuthExchange = "exchange"
)

// DefaultConnectFlowTTL is connect.flowTTL's default: how long a connect
// URL handed out with auth_required stays usable.
const DefaultConnectFlowTTL = 10 * time.Minute

// ServerAuth is how the gateway authorizes toward one servers: entry (its
// auth, oauth and exchange keys).
type ServerAuth struct {
	// Mode is AuthService, AuthUser or AuthExchange; "" means none (static
	// headers only).
	Mode string
	// OAuth is the client the gateway is at the upstream's authorization
	// server (service and user).
	OAuth *UpstreamOAuth
	// Exchange is the token exchange (exchange).
	Exchange *TokenExchange
	// SharedContent (servers.NAME.sharedContent, user and exchange only)
	// declares that the server's resources, prompts and completions are
	// the same whoever asks: they are read through the shared session
	// (the service connection, or the gateway's own token) for every
	// caller, connected or not. Without it they are each subject's own,
	// read on the subject's own session like its tool calls.
	SharedContent bool
}

// UpstreamOAuth is servers.NAME.oauth: the client the gateway registered
// with the upstream's authorization server. The authorization server
// itself is discovered from the server (RFC 9728, RFC 8414).
type UpstreamOAuth struct {
	// ClientID is the pre-registered client's id.
	ClientID string `json:"clientID"`
	// ClientSecretEnv names the environment variable holding the client's
	// secret ("" for a public client, authenticated by PKCE alone).
	ClientSecretEnv string `json:"clientSecretEnv"`
	// ClientMetadataURL is the gateway's Client ID Metadata Document (an
	// https URL with a path), used as the client id where the
	// authorization server supports them (service mode's connect command).
	ClientMetadataURL string `json:"clientMetadataURL"`
	// Scopes, when set, are the scopes asked for (else the challenge's or
	// the resource metadata's).
	Scopes []string `json:"scopes"`
}

// TokenExchange is servers.NAME.exchange: where and as whom the gateway
// exchanges a caller's token (RFC 8693).
type TokenExchange struct {
	// TokenURL is the token endpoint of the exchange.
	TokenURL string `json:"tokenURL"`
	// ClientID and ClientSecretEnv are the gateway's client there.
	ClientID        string `json:"clientID"`
	ClientSecretEnv string `json:"clientSecretEnv"`
	// Audience is the audience asked for; default the server's URL.
	Audience string `json:"audience"`
	// Resource is the resource indicator asked for; default the server's
	// URL.
	Resource string `json:"resource"`
	// Scopes are the scopes asked for (none by default).
	Scopes []string `json:"scopes"`
}

// Connect is the top-level connect: block, what the /connect flow of
// `auth: user` servers needs.
type Connect struct {
	// PublicURL is the gateway's base URL as browsers reach it, such as
	// https://gw.example.com: connect URLs are PublicURL/connect/NAME and
	// the upstream authorization servers send the browser back to
	// PublicURL/connect/callback. Required when a server has auth: user.
	PublicURL string `yaml:"publicURL" json:"publicURL"`
	// FlowTTL is how long a connect URL stays usable (default 10m, at most
	// 1h).
	FlowTTL time.Duration `yaml:"flowTTL" json:"flowTTL"`
	// KeyFile is the vault's key file (relative to the config's
	// directory); without it the key comes from GATEHOUSE_SECRET_KEY.
	KeyFile string `yaml:"keyFile" json:"keyFile"`
}

// ConnectCallbackPath is the path of the gateway's OAuth redirect URI.
const ConnectCallbackPath = "/connect/callback"

// RedirectURL is the redirect URI the gateway registers with upstream
// authorization servers: PublicURL + /connect/callback.
func (c Connect) RedirectURL() string {
	return strings.TrimSuffix(c.PublicURL, "/") + ConnectCallbackPath
}

// splitAuth takes the auth, oauth, exchange and sharedContent keys out of
// a servers: entry (they are not mcp.json's) into e.Auth, strictly:
// unknown keys in oauth or exchange are errors.
func (e *ServerEntry) splitAuth(m map[string]any) error {
	if v, ok := m["auth"]; ok {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("auth must be a string (service, user or exchange)")
		}
		e.Auth.Mode = s
		delete(m, "auth")
	}
	if v, ok := m["sharedContent"]; ok {
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("sharedContent must be true or false")
		}
		e.Auth.SharedContent = b
		delete(m, "sharedContent")
	}
	for _, k := range []string{"oauth", "exchange"} {
		v, ok := m[k]
		if !ok {
			continue
		}
		delete(m, k)
		fields, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s must be a mapping", k)
		}
		known := []string{"clientID", "clientSecretEnv", "clientMetadataURL", "scopes"}
		if k == "exchange" {
			known = []string{"tokenURL", "clientID", "clientSecretEnv", "audience", "resource", "scopes"}
		}
		for key := range fields {
			if !slices.Contains(known, key) { // exactly: encoding/json would match "clientId"
				return fmt.Errorf("%s: unknown field %q (known: %s)", k, key, strings.Join(known, ", "))
			}
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if k == "oauth" {
			e.Auth.OAuth = &UpstreamOAuth{}
			err = dec.Decode(e.Auth.OAuth)
		} else {
			e.Auth.Exchange = &TokenExchange{}
			err = dec.Decode(e.Auth.Exchange)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}

// checkServerAuth checks servers.NAME's auth, oauth and exchange against
// its type and url.
func (c *Config) checkServerAuth(name, typ, serverURL string, a ServerAuth) error {
	f := "servers." + name
	if a.SharedContent && a.Mode != AuthUser && a.Mode != AuthExchange {
		return c.errf(f+".sharedContent", "remove sharedContent: it is for auth: user or exchange, whose content is otherwise each caller's own",
			"sharedContent without auth: user or exchange")
	}
	switch a.Mode {
	case "":
		if a.OAuth != nil || a.Exchange != nil {
			return c.errf(f+".auth", "set auth: service, user or exchange, or remove the oauth/exchange block", "oauth or exchange without auth")
		}
		return nil
	case AuthService, AuthUser, AuthExchange:
	default:
		return c.errf(f+".auth", "use service (one token for the gateway), user (each subject connects its own account) or exchange (RFC 8693)",
			"%q is not an auth mode", a.Mode)
	}
	if typ != "streamable-http" && typ != "http" {
		return c.errf(f+".auth", "auth needs type streamable-http (the MCP authorization flow is defined on it)",
			"auth: %s on a %s server", a.Mode, typ)
	}
	if a.Mode == AuthExchange {
		if a.OAuth != nil {
			return c.errf(f+".oauth", "auth: exchange uses the exchange block; remove oauth", "oauth with auth: exchange")
		}
		return c.checkExchange(f+".exchange", a.Exchange)
	}
	if a.Exchange != nil {
		return c.errf(f+".exchange", "exchange goes with auth: exchange only", "exchange with auth: %s", a.Mode)
	}
	if a.Mode == AuthUser && c.Connect.PublicURL == "" {
		return c.errf("connect.publicURL", "set connect.publicURL to the gateway's base URL as browsers reach it, such as https://gw.example.com",
			"servers.%s has auth: user, which hands out connect URLs on the gateway", name)
	}
	if a.Mode == AuthUser && (name == "callback" || name == "login") {
		return c.errf(f, "rename the server: /connect/callback and /connect/login are the gateway's redirect URIs, not connect URLs",
			"a server with auth: user cannot be named %q", name)
	}
	return c.checkUpstreamOAuth(f+".oauth", a.OAuth)
}

func (c *Config) checkUpstreamOAuth(f string, o *UpstreamOAuth) error {
	if o == nil || (o.ClientID == "" && o.ClientMetadataURL == "") {
		return c.errf(f+".clientID", "register the gateway as a client with the upstream's authorization server and give its clientID (or a clientMetadataURL)",
			"a client is required")
	}
	if err := c.checkClient(f, o.ClientID, o.ClientSecretEnv); err != nil {
		return err
	}
	if o.ClientMetadataURL != "" {
		u, err := url.Parse(o.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" || u.Fragment != "" {
			return c.errf(f+".clientMetadataURL", "give the https URL (with a path) of the gateway's Client ID Metadata Document",
				"%q is not an https URL with a path", o.ClientMetadataURL)
		}
	}
	return c.checkScopes(f+".scopes", o.Scopes)
}

func (c *Config) checkExchange(f string, x *TokenExchange) error {
	if x == nil || x.TokenURL == "" {
		return c.errf(f+".tokenURL", "give the token endpoint that exchanges the callers' tokens (RFC 8693)", "tokenURL is required")
	}
	if err := checkAuthURL(x.TokenURL, false); err != nil {
		return c.errf(f+".tokenURL", "give the https URL of the token endpoint (http only on a loopback host)", "%q %v", x.TokenURL, err)
	}
	if x.ClientID == "" {
		return c.errf(f+".clientID", "give the gateway's client id at the token endpoint", "clientID is required")
	}
	if err := c.checkClient(f, x.ClientID, x.ClientSecretEnv); err != nil {
		return err
	}
	for _, p := range []struct{ name, v string }{{"audience", x.Audience}, {"resource", x.Resource}} {
		if p.v == "" {
			continue
		}
		if u, err := url.Parse(p.v); err != nil || !u.IsAbs() || u.Fragment != "" || strings.Contains(p.v, "#") {
			return c.errf(f+"."+p.name, "give an absolute URI without a fragment (default: the server's url)", "%q is not an absolute URI without a fragment", p.v)
		}
	}
	return c.checkScopes(f+".scopes", x.Scopes)
}

func (c *Config) checkClient(f, id, secretEnv string) error {
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return c.errf(f+".clientID", "use the client id exactly as the authorization server shows it", "%q has a control character", id)
		}
	}
	if secretEnv != "" && !envName(secretEnv) {
		return c.errf(f+".clientSecretEnv", "name an environment variable (letters, digits and _, not starting with a digit); the secret itself goes in that variable",
			"%q is not an environment variable name", secretEnv)
	}
	return nil
}

func (c *Config) checkScopes(f string, scopes []string) error {
	for i, s := range scopes {
		if !scopeToken(s) {
			return c.errf(fmt.Sprintf("%s[%d]", f, i), "write one scope per entry, without spaces or quotes", "%q is not a scope", s)
		}
	}
	return nil
}

// checkConnect checks the connect: block.
func (c *Config) checkConnect() error {
	if c.Connect.PublicURL != "" {
		if err := checkAuthURL(c.Connect.PublicURL, true); err != nil {
			return c.errf("connect.publicURL", "give the gateway's base URL as browsers reach it, such as https://gw.example.com (http only on a loopback host)",
				"%q %v", c.Connect.PublicURL, err)
		}
	}
	switch {
	case c.Connect.FlowTTL < 0 || c.Connect.FlowTTL > time.Hour:
		return c.errf("connect.flowTTL", "use a duration between 1m and 1h, such as 10m", "%v is out of range", c.Connect.FlowTTL)
	case c.Connect.FlowTTL == 0:
		c.Connect.FlowTTL = DefaultConnectFlowTTL
	case c.Connect.FlowTTL < time.Minute:
		return c.errf("connect.flowTTL", "use a duration between 1m and 1h, such as 10m", "%v is too short for a person to finish a login", c.Connect.FlowTTL)
	}
	return nil
}

// ServerAuths returns the auth of every servers: entry that has one, by
// name.
func (c *Config) ServerAuths() map[string]ServerAuth {
	out := map[string]ServerAuth{}
	for n, e := range c.Servers {
		if e.Auth.Mode != "" {
			out[n] = e.Auth
		}
	}
	return out
}
