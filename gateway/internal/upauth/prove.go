package upauth

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"html"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// A connect URL is handed out to a caller (auth_required), but a browser
// that opens it may be anybody's: the caller's own, or a victim's the
// caller sent it to, who would then connect their upstream account under
// the caller's subject. So the browser proves it is the flow's subject
// before it is sent to any provider:
//
//   - GET ConnectPath+NAME?flow=ID answers a page (no redirect) naming the
//     gateway and the server, with a form that continues by a same-origin
//     POST;
//   - the POST (its Origin the gateway's, its form token the one the page's
//     cookie holds) takes the flow, then: a static-token subject's browser
//     must post the subject's token (checked as the MCP endpoint checks
//     it, and its subject must be the flow's); an OAuth subject's browser
//     is sent to log in at auth.oauth.issuer (OpenID Connect, login.go),
//     whose ID token must name the flow's subject;
//   - only then is it sent to the upstream's authorization endpoint, with
//     prompt=consent.
//
// A proof that names another subject spends the flow (it was taken by the
// POST) and stores nothing.

// Prove is how a browser proves it is a flow's subject. Nil in Options:
// the gateway has no auth (every caller is the one local subject), and the
// POST goes on to the upstream without a proof.
type Prove struct {
	// StaticSubject reports whether subject is a static-token subject
	// (auth.tokens): its browser posts the subject's token.
	StaticSubject func(subject string) bool
	// StaticToken returns the subject of a static token, ok=false when the
	// token is none of auth.tokens.
	StaticToken func(token string) (subject string, ok bool)
	// Login is the gateway's OpenID client at auth.oauth.issuer, by which
	// an OAuth subject's browser proves its subject. Nil: OAuth subjects
	// cannot connect (their connect URL says what the operator must
	// configure; the browser is never sent to the upstream unproven).
	Login *Login
	// OAuthIssuer is auth.oauth.issuer ("" without it): a subject
	// "ISSUER#..." is an OAuth subject.
	OAuthIssuer string
}

// Login is the gateway's OpenID Connect client at auth.oauth.issuer
// (auth.oauth.login).
type Login struct {
	// Issuer is auth.oauth.issuer.
	Issuer string
	// ClientID and ClientSecret are the gateway's client there; its
	// redirect URI is PublicURL + LoginPath. ClientSecret empty: a public
	// client (PKCE alone).
	ClientID, ClientSecret string
	// SubjectClaim is auth.oauth.subjectClaim: the ID token's claim of that
	// name (a non-empty string) is the subject within the issuer, as in
	// access tokens. Default "sub".
	SubjectClaim string
	// JWKSURL is auth.oauth.jwksURL; empty: the issuer's metadata's.
	JWKSURL string
}

// The kinds of proof, as the audit trail and the log name them.
const (
	proofNone   = "none"   // no auth configured: one local subject
	proofToken  = "token"  // a static token posted
	proofOpenID = "openid" // an OpenID login at auth.oauth.issuer
)

// formCookie holds the form token of the connect page: the POST's form
// must carry the same (a double-submit token beside the Origin check).
const formCookie = "gatehouse_connect_form"

// Bounds of the connect form.
const (
	maxFormBody  = 16 << 10
	maxFormToken = 4096
)

// proofForm is a connect page's form as posted.
type proofForm struct {
	Flow, CSRF, Token string
}

// errForm is a form that does not parse; its text says why.
var errForm = errors.New("upauth: connect form")

// parseProofForm reads a POSTed connect form: application/x-www-form-
// urlencoded, at most maxFormBody bytes, the fields flow and csrf once
// each and token at most once; any other field, a field given twice, a
// value with a control character or space (the token: or longer than
// maxFormToken) is refused. It reads nothing else of the request.
func parseProofForm(contentType string, body io.Reader) (proofForm, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "application/x-www-form-urlencoded" {
		return proofForm{}, fmt.Errorf("%w: content type %q is not application/x-www-form-urlencoded", errForm, short(contentType))
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return proofForm{}, fmt.Errorf("%w: charset %q", errForm, short(cs))
	}
	raw, err := io.ReadAll(io.LimitReader(body, maxFormBody+1))
	if err != nil {
		return proofForm{}, fmt.Errorf("%w: reading it: %v", errForm, err)
	}
	if len(raw) > maxFormBody {
		return proofForm{}, fmt.Errorf("%w: more than %d bytes", errForm, maxFormBody)
	}
	vs, err := url.ParseQuery(string(raw))
	if err != nil {
		return proofForm{}, fmt.Errorf("%w: %v", errForm, err)
	}
	var f proofForm
	for k, v := range vs {
		if len(v) != 1 {
			return proofForm{}, fmt.Errorf("%w: field %q given %d times", errForm, short(k), len(v))
		}
		switch k {
		case "flow":
			f.Flow = v[0]
		case "csrf":
			f.CSRF = v[0]
		case "token":
			f.Token = v[0]
		default:
			return proofForm{}, fmt.Errorf("%w: unknown field %q", errForm, short(k))
		}
	}
	switch {
	case f.Flow == "":
		return proofForm{}, fmt.Errorf("%w: no flow", errForm)
	case f.CSRF == "":
		return proofForm{}, fmt.Errorf("%w: no form token", errForm)
	case len(f.Token) > maxFormToken:
		return proofForm{}, fmt.Errorf("%w: the token is longer than %d bytes", errForm, maxFormToken)
	}
	for name, v := range map[string]string{"flow": f.Flow, "csrf": f.CSRF, "token": f.Token} {
		for _, r := range v {
			if r <= ' ' || r == 0x7f {
				return proofForm{}, fmt.Errorf("%w: field %s has a space or control character", errForm, name)
			}
		}
	}
	return f, nil
}

// short quotes nothing, only cuts a value for an error message.
func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// origin is the scheme://host of a URL ("" when it has none).
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
}

// sameOrigin checks that a POST comes from the gateway's own page: its
// Origin is PublicURL's origin or names the host the request was sent to
// (a replica reached by another name), or, without an Origin header, its
// Sec-Fetch-Site is same-origin. A request with neither is refused (every
// browser that runs the page sends Origin on a POST).
func (m *Manager) sameOrigin(r *http.Request) error {
	want := origin(m.o.PublicURL)
	if o := r.Header.Get("Origin"); o != "" {
		got := origin(o)
		if o == "null" || got == "" || got != want && !strings.EqualFold(strings.SplitN(got, "://", 2)[1], r.Host) {
			return fmt.Errorf("the form was posted from %s, not from this gateway (%s)", short(o), want)
		}
		return nil
	}
	if r.Header.Get("Sec-Fetch-Site") == "same-origin" {
		return nil
	}
	return errors.New("the form was posted without an Origin header")
}

// checkFormToken checks the form's token against the page's cookie.
func checkFormToken(r *http.Request, token string) error {
	c, err := r.Cookie(formCookie)
	if err != nil || c.Value == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(token)) != 1 {
		return errors.New("this form was not served to this browser")
	}
	return nil
}

// connectPage answers GET ConnectPath+NAME?flow=ID: the page naming the
// gateway and the server, with the form that continues by POST. The flow
// is not taken (a page opened is not a flow used).
func (m *Manager) connectPage(w http.ResponseWriter, r *http.Request, name string) {
	id := r.URL.Query().Get("flow")
	if id == "" {
		page(w, http.StatusBadRequest, "This connect URL has no flow. Call the tool again for a new one.")
		return
	}
	if !validID(id) {
		page(w, http.StatusGone, "This connect URL was used or has expired. Call the tool again for a new one.")
		return
	}
	s := m.servers[name]
	if s == nil || s.Mode != User {
		page(w, http.StatusNotFound, "No server by that name connects accounts.")
		return
	}
	tok, err := randomID()
	if err != nil {
		page(w, http.StatusInternalServerError, "no randomness")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: formCookie, Value: tok, Path: ConnectPath, HttpOnly: true,
		Secure: strings.HasPrefix(m.o.PublicURL, "https:"), SameSite: http.SameSiteStrictMode, MaxAge: int(m.o.FlowTTL.Seconds())})
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// No form-action: browsers that enforce it on the redirects after a
	// submission would stop the POST's redirect to the issuer or the
	// upstream.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	w.Header().Set("X-Frame-Options", "DENY")
	gw := strings.TrimSuffix(m.o.PublicURL, "/")
	how := "Continue to the authorization server of " + name + ", where you consent to the gateway's access."
	field := ""
	if p := m.o.Prove; p != nil {
		var parts []string
		if p.OAuthIssuer != "" {
			parts = append(parts, "If you call the gateway with an OAuth token, leave the field empty: you will first log in at "+p.OAuthIssuer+
				" as the identity this connect URL was made for.")
		}
		if p.StaticToken != nil {
			parts = append(parts, "If you call the gateway with a static token, paste that token: it proves this connect URL is yours.")
			field = `<p><label>Your gateway token: <input type="password" name="token" autocomplete="off"></label></p>`
		}
		how = strings.Join(parts, " ") + " Then you consent at the authorization server of " + name + "."
	}
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, `<!doctype html><title>Gatehouse: connect %[2]s</title>
<h1>Connect your %[2]s account to the gateway %[1]s</h1>
<p>The MCP gateway at <b>%[1]s</b> asks to act on server <b>%[2]s</b> with your own account there.
Continue only if you asked for this yourself: a connect URL someone else sent you would connect your account to them, and is refused.</p>
<p>%[3]s</p>
<form method="post" action="%[4]s">
<input type="hidden" name="flow" value="%[5]s"><input type="hidden" name="csrf" value="%[6]s">
%[7]s<p><button type="submit">Continue</button></p>
</form>
`, html.EscapeString(gw), html.EscapeString(name), html.EscapeString(how), html.EscapeString(ConnectPath+url.PathEscape(name)),
		html.EscapeString(id), html.EscapeString(tok), field)
}

// anotherIdentity answers a proof that names another subject than the
// flow's: the flow is spent, nothing stored.
func (m *Manager) anotherIdentity(w http.ResponseWriter, f Flow, proof string) {
	m.log.Warn("upauth: a connect URL opened by another identity", "server", f.Server, "proof", proof)
	m.record(ConnectEvent{Subject: f.Subject, Server: f.Server, Outcome: OutcomeAnotherIdentity, Proof: proof})
	page(w, http.StatusForbidden, "This connect URL belongs to another identity than the one you proved; nothing was connected and the URL is spent. "+
		"If someone sent you this link, do not use it.")
}

// ConnectEvent is a connect flow's end that the audit trail records:
// a connection made (OutcomeConnected, with the upstream account when
// known) or a proof of another identity (OutcomeAnotherIdentity).
type ConnectEvent struct {
	Subject, Server, Outcome string
	// Account is the upstream account connected ('' when unknown).
	Account string
	// Proof is how the browser proved the subject: "token", "openid" or
	// "none" (no auth).
	Proof string
}

// The outcomes of a ConnectEvent.
const (
	OutcomeConnected       = "connected"
	OutcomeAnotherIdentity = "another_identity"
)

func (m *Manager) record(ev ConnectEvent) {
	if m.o.Record != nil {
		m.o.Record(ev)
	}
}
