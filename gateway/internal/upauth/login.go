package upauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"

	"github.com/gatehouse-dev/gatehouse/internal/identity/oauth"
)

// The OpenID login by which an OAuth subject's browser proves its subject
// (auth.oauth.login): the authorization-code grant at auth.oauth.issuer
// with PKCE S256, a nonce and prompt=login, its redirect back to
// PublicURL+LoginPath. The ID token of the code's exchange is verified by
// identity/oauth, as access tokens are (its signature by the issuer's
// JWKS, iss exactly auth.oauth.issuer, aud containing the gateway's
// client ID, exp/nbf/iat), then its nonce must be the one sent, its azp
// (when present) the client ID, and issuer#<subjectClaim> the flow's
// subject. Every URL of it is fetched through the egress guard.

// loginCookie binds a login in progress to the browser that began it.
const loginCookie = "gatehouse_connect_login"

// loginStatePrefix keeps login states apart from upstream ones ("s.") and
// from connect flow IDs: neither callback takes the other's.
const loginStatePrefix = "l."

// loginPending is the sealed state of a login in progress (a Flow's State).
type loginPending struct {
	Kind     string `json:"k"` // "login"
	Verifier string `json:"v"`
	Nonce    string `json:"n"`
	TokenURL string `json:"tok"`
	JWKS     string `json:"jwks"`
	IssParam bool   `json:"issp"`
	Cookie   []byte `json:"ck"` // SHA-256 of the browser's cookie
}

func loginStateOf(nonce string) string {
	sum := sha256.Sum256([]byte(nonce))
	return loginStatePrefix + base64.RawURLEncoding.EncodeToString(sum[:])
}

func validLoginState(state string) bool {
	rest, ok := strings.CutPrefix(state, loginStatePrefix)
	return ok && validID(rest)
}

func (m *Manager) loginRedirectURL() string {
	return strings.TrimSuffix(m.o.PublicURL, "/") + LoginPath
}

func (m *Manager) loginConfig(l *Login, authURL, tokenURL string) *oauth2.Config {
	return &oauth2.Config{ClientID: l.ClientID, ClientSecret: l.ClientSecret, RedirectURL: m.loginRedirectURL(),
		Scopes: []string{"openid"}, Endpoint: oauth2.Endpoint{AuthURL: authURL, TokenURL: tokenURL}}
}

// login sends the browser of flow f (taken) to log in at the issuer: a
// login in progress stored under a state bound to a cookie set now, which
// carries f's server and subject to the login's callback.
func (m *Manager) login(w http.ResponseWriter, r *http.Request, s *Server, f Flow) {
	ctx := r.Context()
	l := m.o.Prove.Login
	hc, err := m.fetchClient("authorization server", l.Issuer)
	if err != nil {
		page(w, http.StatusBadGateway, "The gateway's identity provider could not be used: "+err.Error())
		return
	}
	defer hc.CloseIdleConnections()
	asm, err := auth.GetAuthServerMetadata(ctx, l.Issuer, hc)
	if err == nil && asm == nil {
		err = fmt.Errorf("%s publishes no metadata", l.Issuer)
	}
	if err == nil {
		for _, e := range []struct{ what, u string }{{"authorization endpoint", asm.AuthorizationEndpoint}, {"token endpoint", asm.TokenEndpoint}} {
			if err = checkEndpoint(m.guard, e.u); err != nil {
				err = fmt.Errorf("%s: %w", e.what, err)
				break
			}
		}
	}
	if err != nil {
		m.log.Warn("upauth: the login's issuer metadata", "err", err)
		page(w, http.StatusBadGateway, "The gateway's identity provider could not be used: "+err.Error())
		return
	}
	jwks := l.JWKSURL
	if jwks == "" {
		jwks = asm.JWKSURI
	}
	cookie, err := randomID()
	if err != nil {
		page(w, http.StatusInternalServerError, "no randomness")
		return
	}
	nonce, err := randomID()
	if err != nil {
		page(w, http.StatusInternalServerError, "no randomness")
		return
	}
	sum := sha256.Sum256([]byte(cookie))
	lp := loginPending{Kind: "login", Verifier: oauth2.GenerateVerifier(), Nonce: nonce, TokenURL: asm.TokenEndpoint, JWKS: jwks,
		IssParam: asm.AuthorizationResponseIssParameterSupported, Cookie: sum[:]}
	raw, _ := json.Marshal(lp)
	state := loginStateOf(cookie)
	if err := m.o.Flows.PutFlow(ctx, Flow{ID: state, Server: s.Name, Subject: f.Subject, State: raw, ExpiresAt: m.now().Add(m.o.FlowTTL)}); err != nil {
		m.log.Warn("upauth: storing a login in progress", "server", s.Name, "err", err)
		page(w, http.StatusServiceUnavailable, "The gateway could not store this flow; try again later.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: cookie, Path: LoginPath, HttpOnly: true,
		Secure: strings.HasPrefix(m.o.PublicURL, "https:"), SameSite: http.SameSiteLaxMode, MaxAge: int(m.o.FlowTTL.Seconds())})
	u := m.loginConfig(l, asm.AuthorizationEndpoint, asm.TokenEndpoint).AuthCodeURL(state, oauth2.S256ChallengeOption(lp.Verifier),
		oauth2.SetAuthURLParam("nonce", nonce), oauth2.SetAuthURLParam("prompt", "login"))
	http.Redirect(w, r, u, http.StatusSeeOther)
}

// loginCallback serves GET LoginPath, the issuer's redirect back: the
// browser's cookie checked before the login is taken (a wrong one spends
// nothing), then iss, the code exchanged, the ID token verified and its
// subject compared with the flow's: the same, the browser goes on to the
// upstream; another, the flow is spent (it was taken) and nothing stored.
func (m *Manager) loginCallback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	state := q.Get("state")
	if !validLoginState(state) {
		page(w, http.StatusBadRequest, "Unknown, used or expired login: nothing was connected. Call the tool again for a new connect URL.")
		return
	}
	c, err := r.Cookie(loginCookie)
	if err != nil || subtle.ConstantTimeCompare([]byte(loginStateOf(c.Value)), []byte(state)) != 1 {
		page(w, http.StatusForbidden, "This browser did not start this login; nothing was connected.")
		return
	}
	f, ok, err := m.o.Flows.TakeFlow(ctx, state, m.now())
	switch {
	case err != nil:
		m.log.Warn("upauth: taking a login in progress", "err", err)
		page(w, http.StatusServiceUnavailable, "The gateway could not read this flow; try again later.")
		return
	case !ok || f.State == nil:
		page(w, http.StatusBadRequest, "Unknown, used or expired login: nothing was connected. Call the tool again for a new connect URL.")
		return
	}
	var lp loginPending
	if err := json.Unmarshal(f.State, &lp); err != nil || lp.Kind != "login" {
		page(w, http.StatusBadRequest, "The flow's state does not read.")
		return
	}
	sum := sha256.Sum256([]byte(c.Value))
	if subtle.ConstantTimeCompare(sum[:], lp.Cookie) != 1 {
		page(w, http.StatusForbidden, "This browser did not start this login; nothing was connected.")
		return
	}
	p := m.o.Prove
	s := m.servers[f.Server]
	if p == nil || p.Login == nil || s == nil {
		page(w, http.StatusNotFound, "This gateway no longer proves identities by login, or has no such server; nothing was connected.")
		return
	}
	l := p.Login
	if e := q.Get("error"); e != "" {
		page(w, http.StatusBadRequest, fmt.Sprintf("The login at %s was refused (%s); nothing was connected.", l.Issuer, short(e)))
		return
	}
	if iss := q.Get("iss"); iss != "" || lp.IssParam {
		if iss != l.Issuer {
			page(w, http.StatusBadRequest, "The login response comes from another issuer; nothing was connected.")
			return
		}
	}
	code := q.Get("code")
	if code == "" {
		page(w, http.StatusBadRequest, "The login response has no code.")
		return
	}
	sub, err := m.loginSubject(ctx, l, lp, code)
	if err != nil {
		m.log.Warn("upauth: a login at the issuer did not prove a subject", "server", s.Name, "err", err)
		page(w, http.StatusBadGateway, "The login could not be checked ("+err.Error()+"); nothing was connected.")
		return
	}
	if sub != f.Subject {
		m.anotherIdentity(w, f, proofOpenID)
		return
	}
	m.toUpstream(w, r, s, f.Subject, proofOpenID)
}

// loginSubject exchanges the login's code and returns the gateway subject
// its ID token proves: issuer#<subjectClaim>.
func (m *Manager) loginSubject(ctx context.Context, l *Login, lp loginPending, code string) (string, error) {
	if err := checkEndpoint(m.guard, lp.TokenURL); err != nil {
		return "", fmt.Errorf("token endpoint: %w", err)
	}
	hc, err := m.fetchClient("token endpoint", lp.TokenURL)
	if err != nil {
		return "", err
	}
	defer hc.CloseIdleConnections()
	tok, err := m.loginConfig(l, "", lp.TokenURL).Exchange(context.WithValue(ctx, oauth2.HTTPClient, hc), code, oauth2.VerifierOption(lp.Verifier))
	if err != nil {
		return "", fmt.Errorf("the issuer gave no token: %w", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return "", errors.New("the issuer's token response has no ID token")
	}

	id, err := m.verifyIDToken(ctx, nil, l.Issuer, l.ClientID, l.SubjectClaim, lp.JWKS, raw)
	if err != nil {
		return "", err
	}
	cl, err := parseIDClaims(raw)
	if err != nil {
		return "", err
	}
	switch {
	case subtle.ConstantTimeCompare([]byte(cl.Nonce), []byte(lp.Nonce)) != 1:
		return "", errors.New("the ID token's nonce is not the one sent")
	case cl.AZP != "" && cl.AZP != l.ClientID:
		return "", errors.New("the ID token's azp is another client")
	}
	return id.Subject, nil
}

// verifyIDToken verifies an ID token with identity/oauth: its signature by
// the keys at jwks (fetched through the egress guard), iss exactly issuer,
// aud containing clientID, exp, nbf and iat, and subjectClaim a non-empty
// string. It returns issuer#<subjectClaim>. s is the upstream whose
// authorization server's metadata named jwks (fetched as the connect flow
// fetches what it learns: [Manager.learntClient]); nil for the gateway's
// own issuer.
func (m *Manager) verifyIDToken(ctx context.Context, s *Server, issuer, clientID, subjectClaim, jwks, raw string) (oauth.Identity, error) {
	if jwks == "" {
		return oauth.Identity{}, errors.New("the issuer publishes no jwks_uri")
	}
	check, client := func(u string) error { return checkEndpoint(m.guard, u) }, m.fetchClient
	if s != nil {
		check = func(u string) error { return m.checkLearnt(s, u) }
		client = func(what, u string) (*http.Client, error) { return m.learntClient(what, s, u) }
	}
	if err := check(jwks); err != nil {
		return oauth.Identity{}, fmt.Errorf("jwks_uri: %w", err)
	}
	hc, err := client("jwks_uri", jwks)
	if err != nil {
		return oauth.Identity{}, err
	}
	defer hc.CloseIdleConnections()
	v, err := oauth.New(&oauth.Options{Issuer: issuer, Audience: clientID, JWKSURL: jwks, SubjectClaim: subjectClaim,
		HTTPClient: hc, VerifiedCache: -1, Logger: m.log, Now: m.now})
	if err != nil {
		return oauth.Identity{}, err
	}
	id, err := v.Verify(ctx, raw)
	if err != nil {
		return oauth.Identity{}, fmt.Errorf("the ID token does not verify: %w", err)
	}
	return id, nil
}

// idClaims are the claims of an ID token read beside identity/oauth's
// checks (which verified the token first).
type idClaims struct {
	Sub, Nonce, AZP string
}

// parseIDClaims reads sub, nonce and azp from a compact JWS's payload.
// It verifies nothing: call it on a token verified already. A token that
// is not three base64url parts, a payload that is not a JSON object, or
// one of those claims present but not a string is an error.
func parseIDClaims(raw string) (idClaims, error) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return idClaims{}, errors.New("the ID token is not a compact JWS")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return idClaims{}, errors.New("the ID token's payload is not base64url")
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(payload, &all); err != nil || all == nil {
		return idClaims{}, errors.New("the ID token's payload is not a JSON object")
	}
	var c idClaims
	for name, dst := range map[string]*string{"sub": &c.Sub, "nonce": &c.Nonce, "azp": &c.AZP} {
		v, ok := all[name]
		if !ok {
			continue
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return idClaims{}, fmt.Errorf("the ID token's %s is not a string", name)
		}
	}
	return c, nil
}

// upstreamAccount is the upstream account of a token response: the ID
// token's issuer#sub when it has one that verifies (identity/oauth, with
// the authorization server's jwks_uri and the client ID as audience), else
// empty. What is not verified: that the account is a person's, or the nonce
// (none is sent upstream: the ID token comes straight from the token
// endpoint, bound to this exchange by PKCE).
func (m *Manager) upstreamAccount(ctx context.Context, s *Server, p *pending, tok *oauth2.Token) string {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" || !p.OpenID {
		return ""
	}
	aud := s.ClientID
	if aud == "" {
		aud = s.ClientMetadataURL
	}
	id, err := m.verifyIDToken(ctx, s, p.Issuer, aud, "sub", p.JWKS, raw)
	if err != nil {
		m.log.Warn("upauth: the upstream's ID token; the account is not recorded", "server", s.Name, "err", err)
		return ""
	}
	return id.Subject
}
