package upauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/config"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/relay"
	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/internal/vault"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// Wiring is what [FromConfig] needs of the gateway beside its config.
type Wiring struct {
	// Tokens, when set, keeps the token sets (and Flows the connect
	// flows, in memory when nil) instead of the vault in Store.
	Tokens upstream.TokenStore
	Flows  Flows
	// Store is the gateway's store: the vault's connections and the
	// connect flows, sealed with the key of connect.keyFile or
	// GATEHOUSE_SECRET_KEY (required then).
	Store store.ConnectionStore
	// Holder names this replica as a holder of refresh leases.
	Holder string
	// Verify verifies a bearer token as the MCP endpoint does (the
	// subject of a /connect request that carries one).
	Verify auth.TokenVerifier
	// Judge judges the subjects' sessions (Options.Judge).
	Judge SessionJudge
	// Record is told each connect flow's end (Options.Record: the audit
	// trail).
	Record func(ConnectEvent)
	Logger *slog.Logger
	Now    func() time.Time
}

// FromConfig builds the Manager of cfg's servers with auth: (nil when
// none has one), and sets the OAuth of their shared sessions in servers
// (the service connection). A client secret's environment variable that
// is empty is a *config.Error.
func FromConfig(cfg *config.Config, servers []toolset.Server, w Wiring) (*Manager, error) {
	auths := cfg.ServerAuths()
	if len(auths) == 0 {
		return nil, nil
	}
	stored := false // a server keeps tokens in the vault (service, user)
	for _, a := range auths {
		stored = stored || a.Mode != Exchange
	}
	if w.Tokens == nil && !stored {
		w.Tokens = &upstream.MemoryTokens{} // never used: exchanged tokens stay in memory
	}
	if w.Tokens == nil {
		v, err := OpenVault(cfg, w.Store, w.Holder)
		if err != nil {
			return nil, err
		}
		w.Tokens, w.Flows = v, StoreFlows{St: w.Store, Vault: v}
	}
	if w.Flows == nil {
		w.Flows = NewMemoryFlows()
	}
	var list []Server
	for _, s := range servers {
		a, ok := auths[s.Config.Name]
		if !ok || s.Config.PluginName != "" {
			continue
		}
		us := Server{Name: s.Config.Name, URL: s.Config.URL, Mode: a.Mode, Headers: s.Config.Headers, SharedContent: a.SharedContent}
		secretEnv := ""
		if o := a.OAuth; o != nil {
			us.ClientID, us.ClientMetadataURL, us.Scopes, secretEnv = o.ClientID, o.ClientMetadataURL, o.Scopes, o.ClientSecretEnv
		}
		if x := a.Exchange; x != nil {
			us.ClientID, us.Scopes, secretEnv = x.ClientID, x.Scopes, x.ClientSecretEnv
			us.TokenURL, us.Audience, us.Resource = x.TokenURL, x.Audience, x.Resource
		}
		if secretEnv != "" {
			if us.ClientSecret = os.Getenv(secretEnv); us.ClientSecret == "" {
				return nil, config.Errorf(cfg, "servers."+us.Name, "set the environment variable "+secretEnv+" to the client's secret", "%s is empty", secretEnv)
			}
		}
		list = append(list, us)
	}
	var subject func(*http.Request) (string, bool, error)
	if cfg.Auth != nil && w.Verify != nil {
		subject = func(r *http.Request) (string, bool, error) { return bearerSubject(r, w.Verify) }
	}
	prove, err := proveFromConfig(cfg)
	if err != nil {
		return nil, err
	}
	if prove != nil && prove.OAuthIssuer != "" && prove.Login == nil && w.Logger != nil {
		for _, s := range list {
			if s.Mode == User {
				w.Logger.Warn("upauth: auth.oauth.login is not configured: OAuth callers cannot connect their accounts to servers with auth: user (their connect URLs say so)",
					"server", s.Name)
			}
		}
	}
	m, err := New(&Options{Servers: list, Tokens: w.Tokens, Flows: w.Flows,
		PublicURL: cfg.Connect.PublicURL, FlowTTL: cfg.Connect.FlowTTL, AllowedHosts: cfg.AllowedHosts,
		Subject: subject, Prove: prove, Record: w.Record, Judge: w.Judge, Logger: w.Logger, Now: w.Now})
	if err != nil {
		return nil, err
	}
	for i := range servers {
		if f := m.ServiceOAuth(servers[i].Config.Name); f != nil && servers[i].Config.PluginName == "" {
			servers[i].OAuth = f
		}
	}
	return m, nil
}

// proveFromConfig is how a connect URL's browser proves its subject under
// cfg.Auth (nil without auth): a static subject by its token (its SHA-256
// compared with auth.tokens' in constant time, as the MCP endpoint does),
// an OAuth subject by logging in with auth.oauth.login. A login secret's
// environment variable that is empty is a *config.Error.
func proveFromConfig(cfg *config.Config) (*Prove, error) {
	a := cfg.Auth
	if a == nil {
		return nil, nil
	}
	type entry struct {
		sum     [sha256.Size]byte
		subject string
	}
	var tokens []entry
	static := map[string]bool{}
	for _, t := range a.Tokens {
		var e entry
		b, _ := hex.DecodeString(t.SHA256) // validated by the config
		copy(e.sum[:], b)
		e.subject = t.Subject
		tokens = append(tokens, e)
		static[t.Subject] = true
	}
	p := &Prove{StaticSubject: func(s string) bool { return static[s] }}
	if len(tokens) > 0 {
		p.StaticToken = func(token string) (string, bool) {
			sum := sha256.Sum256([]byte(token))
			match := -1
			for i := range tokens { // no early exit
				if subtle.ConstantTimeCompare(sum[:], tokens[i].sum[:]) == 1 {
					match = i
				}
			}
			if match < 0 {
				return "", false
			}
			return tokens[match].subject, true
		}
	}
	if o := a.OAuth; o != nil {
		p.OAuthIssuer = o.Issuer
		if l := o.Login; l != nil {
			p.Login = &Login{Issuer: o.Issuer, ClientID: l.ClientID, SubjectClaim: o.SubjectClaim, JWKSURL: o.JWKSURL}
			if env := l.ClientSecretEnv; env != "" {
				if p.Login.ClientSecret = os.Getenv(env); p.Login.ClientSecret == "" {
					return nil, config.Errorf(cfg, "auth.oauth.login.clientSecretEnv", "set the environment variable "+env+" to the login client's secret", "%s is empty", env)
				}
			}
		}
	}
	return p, nil
}

// bearerSubject is the subject of a request's bearer token (ok=false
// without an Authorization header).
func bearerSubject(r *http.Request, verify auth.TokenVerifier) (string, bool, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", false, nil
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", false, errors.New("upauth: not a bearer token")
	}
	ti, err := verify(r.Context(), tok, r)
	if err != nil || ti == nil || ti.UserID == "" {
		return "", false, errors.New("upauth: the token does not verify")
	}
	return ti.UserID, true, nil
}

// Send is the gateway's sender for a call to a user or exchange server:
// CallTool on the subject's own session, its failures as the gateway's
// senders report them (*toolset.Error; a caller without a token to
// exchange is refused denied). ctx carries c's caller
// (relay.Relay.WithCaller): a server's input requests are passed on to
// it, with the result, or asked of it (WithSession).
func (m *Manager) Send(ctx context.Context, tg toolset.Target, c relay.Call, subject, callerToken string) (*mcp.CallToolResult, error) {
	name := tg.Upstream.Name()
	p, err := c.Params(tg.Remote)
	if err != nil {
		return nil, &toolset.Error{Code: toolset.CodeInvalidArguments, Server: name, Tool: tg.Tool, Err: err}
	}
	res, err := m.CallTool(ctx, name, subject, callerToken, p)
	var se *SessionError
	var te *toolset.Error
	switch {
	case err == nil && res.InputRequests != nil:
		// The server asks for input, passed on (relay.SubjectClient): the
		// caller's to answer if it takes input, as on a shared session.
		if err := c.InputPassed(res.InputRequests); err != nil {
			return nil, &toolset.Error{Code: toolset.CodeCallFailed, Server: name, Tool: tg.Tool, Err: err}
		}
		return res, nil
	case err == nil:
		return res, nil
	case errors.As(err, &te) && te.Code == toolset.CodeQuarantined: // the session's listing drifted (Options.Judge): nothing was sent
		return nil, &toolset.Error{Code: te.Code, Server: name, Tool: tg.Tool, Err: te.Err}
	case errors.Is(err, ErrNoCallerToken):
		return nil, &refusal.Error{Code: refusal.Denied, Err: err,
			Message: fmt.Sprintf("server %s needs the caller's OAuth token to exchange; this caller has none", name)}
	case errors.As(err, &se):
		return nil, &toolset.Error{Code: toolset.CodeConnectionFailed, Server: name, Tool: tg.Tool, Err: se.Err}
	case ctx.Err() == nil:
		return nil, &toolset.Error{Code: toolset.CodeCallFailed, Server: name, Tool: tg.Tool, Err: err}
	}
	return nil, err
}

// OpenVault returns the vault of cfg's connections over st: the key from
// connect.keyFile (relative to the config's directory), else from
// GATEHOUSE_SECRET_KEY. A missing or malformed key is an error that says
// which.
func OpenVault(cfg *config.Config, st store.ConnectionStore, holder string) (*vault.Vault, error) {
	ko := &vault.KeyOptions{}
	if f := cfg.Connect.KeyFile; f != "" {
		if !filepath.IsAbs(f) {
			f = filepath.Join(cfg.Dir, f)
		}
		ko.File = f
	}
	keys, err := vault.LoadKeys(ko)
	if err != nil {
		return nil, fmt.Errorf("upauth: servers with auth: keep their tokens in the vault, whose key is needed: %w", err)
	}
	return vault.New(st, keys, &vault.Options{Holder: holder}), nil
}
