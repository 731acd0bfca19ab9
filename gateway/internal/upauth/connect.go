package upauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"math"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/internal/egress"
)

// The paths the manager serves (Manager.ServeHTTP): ConnectPath+NAME
// starts a flow, CallbackPath is the redirect URI.
const (
	ConnectPath  = "/connect/"
	CallbackPath = "/connect/callback"
	// LoginPath is the redirect URI of the OpenID login at
	// auth.oauth.issuer (login.go). No server is named callback or login.
	LoginPath = "/connect/login"
)

// cookieName binds an authorization in progress to the browser that
// started it: the callback must carry the nonce set when the flow began.
const cookieName = "gatehouse_connect"

// pending is the sealed state of an authorization in progress (a Flow's
// State, keyed by the OAuth state).
type pending struct {
	Verifier string   `json:"v"`
	Issuer   string   `json:"iss"`
	IssParam bool     `json:"issp"` // the server advertises RFC 9207 iss
	TokenURL string   `json:"tok"`
	Resource string   `json:"res"`
	Scopes   []string `json:"sc"`
	Cookie   []byte   `json:"ck"` // SHA-256 of the browser's nonce
	// JWKS is the authorization server's jwks_uri (the upstream ID token's
	// keys), OpenID whether openid was asked for; Proof how the browser
	// proved its subject (for the audit trail).
	JWKS   string `json:"jwks,omitempty"`
	OpenID bool   `json:"oidc,omitempty"`
	Proof  string `json:"proof,omitempty"`
}

// ServeHTTP serves the connect flow of a user server (prove.go):
//
//   - GET ConnectPath+NAME?flow=ID, the connect URL of an auth_required:
//     a page naming the gateway and the server, with a form (nothing is
//     taken, nobody is redirected);
//   - POST ConnectPath+NAME, that form, same-origin only: takes the flow
//     and has the browser prove it is the flow's subject (a static token
//     in the form, or an OpenID login at auth.oauth.issuer whose redirect
//     comes back to GET LoginPath); a proof of another subject spends the
//     flow; a proven one is sent to the upstream's authorization server
//     (discovered through the egress guard) with prompt=consent;
//   - GET CallbackPath, the upstream's redirect back: the browser checked
//     before the flow is taken, then state, PKCE and iss, the code
//     exchanged, the upstream account read (the ID token's sub, else
//     userinfo's) and the token set stored for the flow's (server,
//     subject), recorded in the audit trail (Options.Record).
//
// Requests are metered per client address (Options.ConnectLimit): 429
// past it.
func (m *Manager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if m.meter != nil {
		if ok, wait := m.meter.allow(clientAddr(r), m.now()); !ok {
			secs := int(math.Ceil(wait.Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			page(w, http.StatusTooManyRequests, fmt.Sprintf("Too many connect requests from this address; try again in %d s.", secs))
			return
		}
	}
	switch {
	case r.URL.Path == CallbackPath && r.Method == http.MethodGet:
		m.callback(w, r)
		return
	case r.URL.Path == LoginPath && r.Method == http.MethodGet:
		m.loginCallback(w, r)
		return
	case r.URL.Path == CallbackPath || r.URL.Path == LoginPath:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, ConnectPath)
	if !ok || name == "" || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	switch r.Method {
	case http.MethodGet:
		m.connectPage(w, r, name)
	case http.MethodPost:
		m.begin(w, r, name)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// page answers a person with a short text page.
func page(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintf(w, "<!doctype html><title>Gatehouse</title><p>%s</p>\n", html.EscapeString(msg))
}

// checkCaller refuses a request whose credentials name another subject
// than the flow's (or do not verify). A request without credentials (a
// browser) passes here: it proves its subject by the form (prove.go).
func (m *Manager) checkCaller(r *http.Request, subject string) error {
	if m.o.Subject == nil {
		return nil
	}
	got, ok, err := m.o.Subject(r)
	switch {
	case err != nil:
		return fmt.Errorf("the credentials of this request do not verify")
	case ok && got != subject:
		return errors.New("this connect URL belongs to another caller")
	}
	return nil
}

// begin serves the POST of the connect page: the form checked (same
// origin, the page's form token) before the flow is taken, so a cross-site
// POST spends nothing; then the flow taken and the browser's proof of its
// subject asked for.
func (m *Manager) begin(w http.ResponseWriter, r *http.Request, name string) {
	ctx := r.Context()
	if err := m.sameOrigin(r); err != nil {
		page(w, http.StatusForbidden, err.Error()+"; nothing was done.")
		return
	}
	form, err := parseProofForm(r.Header.Get("Content-Type"), http.MaxBytesReader(w, r.Body, maxFormBody+1))
	if err != nil {
		page(w, http.StatusBadRequest, "The connect form does not read ("+strings.TrimPrefix(err.Error(), errForm.Error()+": ")+"); nothing was done.")
		return
	}
	if err := checkFormToken(r, form.CSRF); err != nil {
		page(w, http.StatusForbidden, err.Error()+"; open the connect URL again.")
		return
	}
	gone := func() {
		page(w, http.StatusGone, "This connect URL was used or has expired. Call the tool again for a new one.")
	}
	if !validID(form.Flow) { // never a state or a spent marker
		gone()
		return
	}
	f, ok, err := m.o.Flows.TakeFlow(ctx, form.Flow, m.now())
	switch {
	case err != nil:
		m.log.Warn("upauth: taking a connect flow", "err", err)
		page(w, http.StatusServiceUnavailable, "The gateway could not read this connect flow; try again later.")
		return
	case !ok || f.State != nil:
		gone()
		return
	}
	// The flow is spent from here on, whatever happens; the replica that
	// hands it out to the subject's refused calls is told so.
	m.markSpent(ctx, f)
	if f.Server != name {
		page(w, http.StatusBadRequest, "This connect URL is for another server.")
		return
	}
	if err := m.checkCaller(r, f.Subject); err != nil {
		m.log.Warn("upauth: a connect URL used by another caller", "server", name)
		page(w, http.StatusForbidden, err.Error()+"; nothing was connected.")
		return
	}
	s := m.servers[name]
	if s == nil || s.Mode != User {
		page(w, http.StatusNotFound, "No server by that name connects accounts.")
		return
	}
	p := m.o.Prove
	switch {
	case p == nil: // no auth: the one local subject
		m.toUpstream(w, r, s, f.Subject, proofNone)
	case p.StaticSubject != nil && p.StaticSubject(f.Subject):
		got, ok := "", false
		if form.Token != "" && p.StaticToken != nil {
			got, ok = p.StaticToken(form.Token)
		}
		if !ok || got != f.Subject {
			m.anotherIdentity(w, f, proofToken)
			return
		}
		m.toUpstream(w, r, s, f.Subject, proofToken)
	case p.OAuthIssuer != "" && strings.HasPrefix(f.Subject, p.OAuthIssuer+"#"):
		if p.Login == nil {
			m.log.Warn("upauth: an OAuth subject's connect flow, and auth.oauth.login is not configured", "server", name)
			page(w, http.StatusServiceUnavailable, "This gateway cannot check who you are at "+p.OAuthIssuer+
				": its operator must configure auth.oauth.login (the gateway's OpenID client there). Nothing was connected.")
			return
		}
		if form.Token != "" { // an OAuth caller proves itself by logging in, never by a token posted
			m.anotherIdentity(w, f, proofToken)
			return
		}
		m.login(w, r, s, f)
	default:
		m.log.Warn("upauth: a connect flow whose subject cannot prove itself", "server", name)
		page(w, http.StatusForbidden, "This connect URL's identity cannot be proven by a browser here; nothing was connected.")
	}
}

// toUpstream sends a browser proven to be subject's to s's authorization
// server, with prompt=consent: a new authorization in progress stored
// under a state bound to a cookie set now.
func (m *Manager) toUpstream(w http.ResponseWriter, r *http.Request, s *Server, subject, proof string) {
	ctx := r.Context()
	authURL, p, err := m.authorization(ctx, s)
	if err != nil {
		m.log.Warn("upauth: discovering the authorization server", "server", s.Name, "err", err)
		page(w, http.StatusBadGateway, fmt.Sprintf("The authorization server of %s could not be used: %v", s.Name, err))
		return
	}
	nonce, err := randomID()
	if err != nil {
		page(w, http.StatusInternalServerError, "no randomness")
		return
	}
	sum := sha256.Sum256([]byte(nonce))
	p.Cookie = sum[:]
	p.Proof = proof
	state := stateOf(nonce)
	raw, _ := json.Marshal(p)
	if err := m.o.Flows.PutFlow(ctx, Flow{ID: state, Server: s.Name, Subject: subject, State: raw, ExpiresAt: m.now().Add(m.o.FlowTTL)}); err != nil {
		m.log.Warn("upauth: storing an authorization in progress", "server", s.Name, "err", err)
		page(w, http.StatusServiceUnavailable, "The gateway could not store this flow; try again later.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: nonce, Path: CallbackPath, HttpOnly: true,
		Secure: strings.HasPrefix(m.o.PublicURL, "https:"), SameSite: http.SameSiteLaxMode, MaxAge: int(m.o.FlowTTL.Seconds())})
	q := authURL.Query()
	q.Set("state", state)
	q.Set("prompt", "consent")
	authURL.RawQuery = q.Encode()
	http.Redirect(w, r, authURL.String(), http.StatusSeeOther)
}

// authorization discovers s's authorization server (RFC 9728 from the
// server's 401, then RFC 8414 / OpenID), through the egress guard, and
// returns the authorization URL without its state, and the pending state.
// Every URL fetched is fetched with a client of the guard
// ([Manager.learntClient]): its own host is checked against allowedHosts
// before anything is sent, and every dial is checked as for s's own URL
// (a remote server's metadata does not reach the gateway's loopback).
func (m *Manager) authorization(ctx context.Context, s *Server) (*url.URL, *pending, error) {
	prm, err := m.resourceMetadata(ctx, s)
	if err != nil {
		return nil, nil, err
	}
	if len(prm.AuthorizationServers) == 0 {
		return nil, nil, errors.New("its resource metadata names no authorization server")
	}
	issuer := prm.AuthorizationServers[0]
	// The metadata's well-known URLs are all on the issuer's origin.
	hc, err := m.learntClient("authorization server", s, issuer)
	if err != nil {
		return nil, nil, err
	}
	defer hc.CloseIdleConnections()
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, hc)
	if err != nil {
		return nil, nil, fmt.Errorf("authorization server metadata: %w", err)
	}
	if asm == nil {
		return nil, nil, fmt.Errorf("authorization server %s publishes no metadata", issuer)
	}
	if !slices.Contains(asm.CodeChallengeMethodsSupported, "S256") {
		return nil, nil, fmt.Errorf("authorization server %s does not support PKCE S256", issuer)
	}
	for _, e := range []struct{ what, u string }{{"authorization endpoint", asm.AuthorizationEndpoint}, {"token endpoint", asm.TokenEndpoint}} {
		if err := m.checkLearnt(s, e.u); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", e.what, err)
		}
	}
	scopes := s.Scopes
	if len(scopes) == 0 {
		scopes = prm.ScopesSupported
	}
	if slices.Contains(asm.ScopesSupported, "offline_access") && !slices.Contains(scopes, "offline_access") {
		scopes = append(slices.Clone(scopes), "offline_access")
	}
	// openid, when the server offers it: its ID token names the account
	// connected (recorded with the connection).
	if slices.Contains(asm.ScopesSupported, "openid") && !slices.Contains(scopes, "openid") {
		scopes = append(slices.Clone(scopes), "openid")
	}
	verifier := oauth2.GenerateVerifier()
	cfg := m.oauthConfig(s, asm.AuthorizationEndpoint, asm.TokenEndpoint, scopes)
	u, err := url.Parse(cfg.AuthCodeURL("", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", s.URL)))
	if err != nil {
		return nil, nil, err
	}
	return u, &pending{Verifier: verifier, Issuer: asm.Issuer, IssParam: asm.AuthorizationResponseIssParameterSupported,
		TokenURL: asm.TokenEndpoint, Resource: s.URL, Scopes: scopes, JWKS: asm.JWKSURI, OpenID: slices.Contains(scopes, "openid")}, nil
}

// fetchClient is the egress guard's client for fetching raw, what it is
// named in errors (the authorization server, its token endpoint...): made
// for raw's own origin, so its host is checked against allowedHosts before
// anything is sent (an error that names the URL and the host), and every
// dial, redirect included, is checked. It carries no configured header.
// Close its idle connections when done. raw unlocks loopback when it is a
// loopback literal: for a URL the operator configured (the gateway's own
// issuer); one learnt from an upstream's metadata is fetched with
// [Manager.learntClient].
func (m *Manager) fetchClient(what, raw string) (*http.Client, error) {
	hc, err := m.guard.Client(raw, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, raw, err)
	}
	return hc, nil
}

func (m *Manager) oauthConfig(s *Server, authURL, tokenURL string, scopes []string) *oauth2.Config {
	return &oauth2.Config{ClientID: s.ClientID, ClientSecret: s.ClientSecret, RedirectURL: m.redirectURL(), Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: authURL, TokenURL: tokenURL}}
}

// resourceMetadata finds s's protected resource metadata: the 401's
// resource_metadata, else the well-known URLs (path-inserted, then root).
// Its resource must be s's URL. The 401 is asked of s with its headers;
// each metadata URL is fetched with a client without them
// ([Manager.learntClient]): the server's headers never go to it.
func (m *Manager) resourceMetadata(ctx context.Context, s *Server) (*oauthex.ProtectedResourceMetadata, error) {
	hc, err := m.guard.Client(s.URL, s.Headers, nil)
	if err != nil {
		return nil, fmt.Errorf("server %s: %w", s.URL, err)
	}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	var urls []string
	if resp, err := hc.Do(req); err == nil {
		resp.Body.Close()
		if cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate")); err == nil {
			for _, c := range cs {
				if c.Scheme == "bearer" && c.Params["resource_metadata"] != "" {
					urls = append(urls, c.Params["resource_metadata"])
				}
			}
		}
	} else {
		return nil, fmt.Errorf("reaching the server: %w", err)
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return nil, err
	}
	base := u.Scheme + "://" + u.Host
	if p := strings.Trim(u.Path, "/"); p != "" {
		urls = append(urls, base+"/.well-known/oauth-protected-resource/"+p)
	}
	urls = slices.Compact(append(urls, base+"/.well-known/oauth-protected-resource"))
	var errs []error
	for _, mu := range urls {
		prm, err := m.protectedResource(ctx, s, mu)
		if err == nil {
			return prm, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("no usable protected resource metadata: %w", errors.Join(errs...))
}

// protectedResource fetches the protected resource metadata at mu; its
// resource must be s's URL.
func (m *Manager) protectedResource(ctx context.Context, s *Server, mu string) (*oauthex.ProtectedResourceMetadata, error) {
	hc, err := m.learntClient("resource metadata", s, mu)
	if err != nil {
		return nil, err
	}
	defer hc.CloseIdleConnections()
	return oauthex.GetProtectedResourceMetadata(ctx, mu, s.URL, hc)
}

// checkEndpoint refuses an endpoint egress would refuse by its URL, or
// whose host is an address literal that is neither public nor loopback
// (a name is checked when dialed).
func checkEndpoint(g *egress.Guard, raw string) error {
	if err := g.CheckURL(raw); err != nil {
		return err
	}
	u, _ := url.Parse(raw)
	if a, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil {
		if c := egress.Classify(a.Unmap()); c != egress.Public && c != egress.Loopback {
			return fmt.Errorf("%s is a %s address", u.Host, c)
		}
	}
	return nil
}

// AccountTokens is a TokenStore that records the upstream account of a
// connection made through a connect flow (the vault:
// store.Connection.Account). account "" is unknown.
type AccountTokens interface {
	PutConnected(ctx context.Context, server, subject string, t *upstream.TokenSet, account string) error
}

// stateOf is the OAuth state of the authorization a browser holding the
// cookie nonce began: "s." and the SHA-256 of the nonce, base64url. The
// state goes through the authorization server and back in URLs, the nonce
// stays in the browser's cookie: the callback checks one against the
// other before it takes the flow (the flow's sealed state holds the
// nonce's hash too). The prefix keeps states and connect flow IDs apart:
// a connect URL cannot take an authorization in progress (validID), a
// callback cannot take a connect flow (validState).
func stateOf(nonce string) string {
	sum := sha256.Sum256([]byte(nonce))
	return statePrefix + base64.RawURLEncoding.EncodeToString(sum[:])
}

const statePrefix = "s."

// validState reports whether state is one stateOf makes.
func validState(state string) bool {
	rest, ok := strings.CutPrefix(state, statePrefix)
	return ok && validID(rest)
}

func (m *Manager) callback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	state := q.Get("state")
	switch {
	case state == "":
		page(w, http.StatusBadRequest, "The authorization response has no state.")
		return
	case !validState(state):
		page(w, http.StatusBadRequest, "Unknown, used or expired state: nothing was connected. Call the tool again for a new connect URL.")
		return
	}
	// The browser first: a request without the cookie of the browser that
	// began this flow is refused before the flow is taken, so it cannot
	// spend another's flow.
	c, err := r.Cookie(cookieName)
	if err != nil || subtle.ConstantTimeCompare([]byte(stateOf(c.Value)), []byte(state)) != 1 {
		page(w, http.StatusForbidden, "This browser did not start this flow; nothing was connected.")
		return
	}
	f, ok, err := m.o.Flows.TakeFlow(ctx, state, m.now())
	switch {
	case err != nil:
		m.log.Warn("upauth: taking an authorization in progress", "err", err)
		page(w, http.StatusServiceUnavailable, "The gateway could not read this flow; try again later.")
		return
	case !ok || f.State == nil:
		page(w, http.StatusBadRequest, "Unknown, used or expired state: nothing was connected. Call the tool again for a new connect URL.")
		return
	}
	var p pending
	if err := json.Unmarshal(f.State, &p); err != nil {
		page(w, http.StatusBadRequest, "The flow's state does not read.")
		return
	}
	if err := m.checkCaller(r, f.Subject); err != nil {
		page(w, http.StatusForbidden, err.Error()+"; nothing was connected.")
		return
	}
	sum := sha256.Sum256([]byte(c.Value))
	if subtle.ConstantTimeCompare(sum[:], p.Cookie) != 1 {
		page(w, http.StatusForbidden, "This browser did not start this flow; nothing was connected.")
		return
	}
	if e := q.Get("error"); e != "" {
		page(w, http.StatusBadRequest, (&upstream.AuthorizationError{Code: e, Description: q.Get("error_description")}).Error())
		return
	}
	// RFC 9207: the iss must be the issuer's (required when advertised).
	if iss := q.Get("iss"); iss != "" || p.IssParam {
		if iss != p.Issuer {
			page(w, http.StatusBadRequest, "The authorization response comes from another issuer; nothing was connected.")
			return
		}
	}
	code := q.Get("code")
	if code == "" {
		page(w, http.StatusBadRequest, "The authorization response has no code.")
		return
	}
	s := m.servers[f.Server]
	if s == nil {
		page(w, http.StatusNotFound, "No such server.")
		return
	}
	if err := m.checkLearnt(s, p.TokenURL); err != nil {
		page(w, http.StatusBadGateway, "token endpoint: "+err.Error())
		return
	}
	hc, err := m.learntClient("token endpoint", s, p.TokenURL)
	if err != nil {
		page(w, http.StatusBadGateway, err.Error()+"; nothing was connected.")
		return
	}
	defer hc.CloseIdleConnections()
	cfg := m.oauthConfig(s, "", p.TokenURL, p.Scopes)
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, hc), code,
		oauth2.VerifierOption(p.Verifier), oauth2.SetAuthURLParam("resource", p.Resource))
	if err != nil {
		m.log.Warn("upauth: exchanging the code", "server", s.Name, "err", err)
		why := ""
		if ee := (*egress.Error)(nil); errors.As(err, &ee) {
			why = " (" + ee.Error() + ")" // refused by the egress guard
		}
		page(w, http.StatusBadGateway, "The authorization server did not give a token"+why+"; nothing was connected.")
		return
	}
	set := &upstream.TokenSet{AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry,
		Scopes: p.Scopes, TokenURL: p.TokenURL, ClientID: s.ClientID, ClientSecret: s.ClientSecret}
	account := m.upstreamAccount(ctx, s, &p, tok)
	if account == "" { // no ID token that verified: userinfo, if the server has one
		if account, err = m.userinfoAccount(ctx, s, p.Issuer, tok.AccessToken); err != nil {
			m.log.Warn("upauth: the upstream's userinfo; the account is not recorded", "server", s.Name, "err", err)
		}
	}
	if ac, ok := m.o.Tokens.(AccountTokens); ok {
		err = ac.PutConnected(ctx, s.Name, f.Subject, set, account)
	} else {
		err = m.o.Tokens.PutToken(ctx, s.Name, f.Subject, set)
	}
	if err != nil {
		m.log.Warn("upauth: storing a connection", "server", s.Name, "err", err)
		page(w, http.StatusServiceUnavailable, "The gateway could not store the connection; try again.")
		return
	}
	m.drop(key{s.Name, f.Subject})
	m.log.Info("upauth: connected", "server", s.Name, "account", account)
	m.record(ConnectEvent{Subject: f.Subject, Server: s.Name, Outcome: OutcomeConnected, Account: account, Proof: p.Proof})
	msg := fmt.Sprintf("Connected to %s. You can close this window and retry the call.", s.Name)
	if account != "" {
		msg = fmt.Sprintf("Connected to %s as %s. You can close this window and retry the call.", s.Name, account)
	}
	page(w, http.StatusOK, msg)
}
