package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/scopes"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/server"
)

// authenticator checks bearer tokens: static ones against their
// configured SHA-256 (each subject's tool scopes known from the config),
// and, with auth.oauth, access tokens through identity/oauth: JWTs by their
// signature, opaque tokens by introspection when it is configured (their
// tool scopes carried by the request's TokenInfo).
type authenticator struct {
	// on is false without auth: every tool is in scope.
	on     bool
	tokens []tokenEntry
	// scopes maps a static subject to what its scopes let it see.
	scopes map[string]*scopes.Set
	all    *scopes.Set // sees everything
	// oauth verifies access tokens (nil without auth.oauth).
	oauth *oauthAuth
}

type tokenEntry struct {
	sum     [sha256.Size]byte
	subject string
	scopes  []string
}

func newAuthenticator(a *Auth, log *slog.Logger, now func() time.Time) (*authenticator, error) {
	au := &authenticator{scopes: map[string]*scopes.Set{}, all: scopes.All()}
	if a == nil {
		return au, nil
	}
	au.on = true
	for _, t := range a.Tokens {
		var e tokenEntry
		b, _ := hex.DecodeString(t.SHA256) // validated by the config
		copy(e.sum[:], b)
		e.subject, e.scopes = t.Subject, t.Scopes
		au.tokens = append(au.tokens, e)
		if t.Scopes == nil {
			au.scopes[t.Subject] = au.all
			continue
		}
		au.scopes[t.Subject] = scopes.Parse(t.Scopes, false)
	}
	if a.OAuth != nil {
		o, err := newOAuthAuth(a, log, now)
		if err != nil {
			return nil, err
		}
		au.oauth = o
		// Static tokens are exempt from requiredScopes (they are the
		// operator's own): their TokenInfo carries them.
		for i := range au.tokens {
			au.tokens[i].scopes = append(slices.Clip(au.tokens[i].scopes), o.required...)
		}
	}
	return au, nil
}

// farFuture is the expiry of a static token (they do not expire; the
// go-sdk's middleware requires one).
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// verify is the auth.TokenVerifier of the MCP endpoint: the token's SHA-256
// is compared with every configured hash in constant time (no early exit,
// so timing tells nothing about which, or whether, one matched); a token
// that is none of them goes to auth.oauth when it is configured.
func (au *authenticator) verify(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
	sum := sha256.Sum256([]byte(token))
	match := -1
	for i := range au.tokens {
		if subtle.ConstantTimeCompare(sum[:], au.tokens[i].sum[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		if au.oauth != nil {
			return au.oauth.verify(ctx, token, r)
		}
		return nil, auth.ErrInvalidToken
	}
	t := au.tokens[match]
	return &auth.TokenInfo{UserID: t.subject, Scopes: append([]string(nil), t.scopes...), Expiration: farFuture}, nil
}

// allows reports whether the caller of a request may see tool by its
// scopes: an OAuth token's own (carried by info, so two tokens of one
// subject see what each allows), else the static subject's. Without auth
// every tool is in scope.
func (au *authenticator) allows(subject string, info server.RequestInfo, tool string) bool {
	return au.scopesOf(subject, info).Tool(tool)
}

// allowsSkill reports whether the caller of a request may see the served
// skill whose prompt is projected as name, by the same scopes as allows
// ("skill:NAME", "skill:*").
func (au *authenticator) allowsSkill(subject string, info server.RequestInfo, name string) bool {
	return au.scopesOf(subject, info).Skill(name)
}

// scopesOf returns what the caller of a request may see (nil: nothing).
func (au *authenticator) scopesOf(subject string, info server.RequestInfo) *scopes.Set {
	if !au.on {
		return au.all
	}
	if ti := info.TokenInfo; ti != nil && ti.Extra != nil {
		if ss, ok := ti.Extra[scopesKey].(*scopes.Set); ok {
			return ss
		}
	}
	return au.scopes[subject]
}

// identify maps the verified bearer token to its subject. Without auth every
// caller is LocalSubject (the gateway then listens on loopback only).
func (g *Gateway) identify(_ context.Context, info server.RequestInfo) (server.Subject, error) {
	if g.cfg.Auth == nil {
		return LocalSubject, nil
	}
	if info.TokenInfo == nil || info.TokenInfo.UserID == "" {
		return "", errors.New("gateway: no verified token")
	}
	return server.Subject(info.TokenInfo.UserID), nil
}

// relaySubject identifies the caller of a request the relay forwards the
// way tools/call does: from what the transport authenticated, never from
// ctx.
func (g *Gateway) relaySubject(ctx context.Context, req mcp.Request, local bool) (string, bool) {
	info := server.InfoOf(req, local)
	if info.Local {
		return LocalSubject, true
	}
	s, err := g.identify(ctx, info)
	return string(s), err == nil
}

// relayLimit spends one call of the subject's rateLimit quota on a request
// the relay forwards to an upstream (tool calls and these share it). A
// refusal is a JSON-RPC error carrying the refusal's fields as data: these
// methods have no tool result to carry it.
func (g *Gateway) relayLimit(ctx context.Context, subject, method string) error {
	if g.srv == nil {
		return nil
	}
	ok, wait, err := g.srv.RateLimit(ctx, server.Subject(subject), method)
	if err != nil {
		g.log.Error("gateway: rate limit unavailable; request refused", "method", method, "err", err)
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the rate limit could not be checked; the request was not forwarded"}
	}
	if ok {
		return nil
	}
	wait = max(wait, time.Millisecond)
	data, _ := json.Marshal(map[string]any{"code": refusal.RateLimited, "retryable": true, "retryAfterMs": wait.Milliseconds()})
	return &jsonrpc.Error{Code: CodeRateLimitedRPC, Data: data,
		Message: fmt.Sprintf("[%s] too many requests; retry in %v", refusal.RateLimited, wait.Round(time.Millisecond))}
}

// CodeRateLimitedRPC is the JSON-RPC error code of a forwarded request
// (not a tools/call) refused by the rate limit, in the range JSON-RPC
// leaves to servers: the hardened server's code for an initialize it
// refuses so, declared once there.
const CodeRateLimitedRPC = server.CodeRateLimited
