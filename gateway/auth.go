package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// authenticator checks static bearer tokens against their configured
// SHA-256 and knows each subject's tool scopes.
type authenticator struct {
	tokens []tokenEntry
	// scopes maps a subject to its tool scopes; a nil set means every tool.
	scopes map[string]map[string]bool
}

type tokenEntry struct {
	sum     [sha256.Size]byte
	subject string
	scopes  []string
}

func newAuthenticator(a *Auth) *authenticator {
	au := &authenticator{scopes: map[string]map[string]bool{}}
	if a == nil {
		return au
	}
	for _, t := range a.Tokens {
		var e tokenEntry
		b, _ := hex.DecodeString(t.SHA256) // validated by the config
		copy(e.sum[:], b)
		e.subject, e.scopes = t.Subject, t.Scopes
		au.tokens = append(au.tokens, e)
		if t.Scopes == nil || containsAll(t.Scopes) {
			au.scopes[t.Subject] = nil
			continue
		}
		set := map[string]bool{}
		for _, s := range t.Scopes {
			set[strings.TrimPrefix(s, "tool:")] = true
		}
		au.scopes[t.Subject] = set
	}
	return au
}

func containsAll(scopes []string) bool {
	for _, s := range scopes {
		if s == "tool:*" {
			return true
		}
	}
	return false
}

// farFuture is the expiry of a static token (they do not expire; the
// go-sdk's middleware requires one).
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// verify is the auth.TokenVerifier of the MCP endpoint: the token's SHA-256
// is compared with every configured hash in constant time (no early exit,
// so timing tells nothing about which, or whether, one matched).
func (au *authenticator) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	sum := sha256.Sum256([]byte(token))
	match := -1
	for i := range au.tokens {
		if subtle.ConstantTimeCompare(sum[:], au.tokens[i].sum[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return nil, auth.ErrInvalidToken
	}
	t := au.tokens[match]
	return &auth.TokenInfo{UserID: t.subject, Scopes: append([]string(nil), t.scopes...), Expiration: farFuture}, nil
}

// allows reports whether subject's scopes cover tool. Without auth (no
// tokens) every tool is in scope.
func (au *authenticator) allows(subject, tool string) bool {
	if len(au.tokens) == 0 {
		return true
	}
	set, ok := au.scopes[subject]
	if !ok {
		return false
	}
	return set == nil || set[tool]
}
