package oauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/gatehouse-dev/gatehouse/internal/identity/oauth"
)

// An in-process authorization server publishes its metadata and keys; the
// Verifier discovers them and turns the server's access token into an
// Identity.
func Example() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL, "jwks_uri": srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "k1", Use: "sig"}}})
	})

	// The authorization server issues a token for the resource.
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	token, _ := jwt.Signed(signer).Claims(map[string]any{
		"iss": srv.URL, "sub": "alice", "aud": "https://gw.example.com/mcp",
		"exp": time.Now().Add(time.Hour).Unix(), "scope": "mcp tool:bank__balance",
	}).Serialize()

	// The resource server verifies it.
	v, err := oauth.New(&oauth.Options{Issuer: srv.URL, Audience: "https://gw.example.com/mcp"})
	if err != nil {
		fmt.Println(err)
		return
	}
	id, err := v.Verify(context.Background(), token)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.TrimPrefix(id.Subject, srv.URL), id.Scopes)

	// A token for another resource is refused, with a reason to branch on.
	other, _ := jwt.Signed(signer).Claims(map[string]any{
		"iss": srv.URL, "sub": "alice", "aud": "https://other.example.com/mcp", "exp": time.Now().Add(time.Hour).Unix(),
	}).Serialize()
	_, err = v.Verify(context.Background(), other)
	if e, ok := err.(*oauth.Error); ok {
		fmt.Println(e.Reason)
	}
	// Output:
	// #alice [mcp tool:bank__balance]
	// audience
}
