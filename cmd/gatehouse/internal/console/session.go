package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// session is one operator's login, held server-side; the browser holds
// only its random ID.
type session struct {
	name    string
	csrf    string
	expires time.Time

	mu    sync.Mutex
	flash []flash // messages for the next page shown
}

// flash is one message shown once.
type flash struct {
	Kind string // "ok" or "error"
	Text string
}

// checkCSRF compares a form's token with the session's in constant time.
func (s *session) checkCSRF(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) == 1
}

func (s *session) say(kind, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.flash) < 8 {
		s.flash = append(s.flash, flash{kind, text})
	}
}

func (s *session) takeFlash() []flash {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.flash
	s.flash = nil
	return f
}

// randomToken returns 32 random bytes, base64url.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// cookieName is the session cookie's name: with the __Host- prefix when
// the cookie is Secure (the browser then refuses it from any other origin
// or path).
func (c *console) cookieName(r *http.Request) string {
	if c.isSecure(r) {
		return "__Host-gatehouse-console"
	}
	return "gatehouse-console"
}

func (c *console) isSecure(r *http.Request) bool { return c.secure || r.TLS != nil }

// session returns the request's live session, or nil.
func (c *console) session(r *http.Request) *session {
	ck, err := r.Cookie(c.cookieName(r))
	if err != nil || ck.Value == "" || len(ck.Value) > 128 {
		return nil
	}
	key := sha256.Sum256([]byte(ck.Value))
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[key]
	if s == nil {
		return nil
	}
	if !c.now().Before(s.expires) {
		delete(c.sessions, key)
		return nil
	}
	return s
}

// maxTokenLen bounds a login token handed to VerifyAdmin (the form itself
// is bounded at 8 KiB).
const maxTokenLen = 8 << 10

// authenticate returns the admin whose token's SHA-256 is that of token,
// comparing with every admin in constant time.
func (c *console) authenticate(token string) (string, bool) {
	h := sha256.Sum256([]byte(token))
	name, ok := "", false
	for _, a := range c.admins {
		if subtle.ConstantTimeCompare(h[:], a.hash[:]) == 1 {
			name, ok = a.name, true
		}
	}
	return name, ok && token != ""
}

// loginPage shows the login form (and says nothing else).
func (c *console) loginPage(w http.ResponseWriter, r *http.Request) {
	if c.session(r) != nil {
		http.Redirect(w, r, "/approvals", http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, "login", nil, nil)
}

// login checks the token and starts a session. A cross-origin POST is
// refused (login CSRF); a wrong token is 401 with the form again and the
// same words whatever was wrong.
func (c *console) login(w http.ResponseWriter, r *http.Request) {
	if err := c.origin.Check(r); err != nil {
		http.Error(w, "forbidden: cross-origin request", http.StatusForbidden)
		return
	}
	key, keyed := clientKey(r)
	if wait := c.throttle.wait(key, c.now()); keyed && wait > 0 {
		c.refuseThrottled(w, r, wait)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad request: the form cannot be read", http.StatusBadRequest)
		return
	}
	token := r.PostForm.Get("token")
	name, ok := c.authenticate(token)
	now := c.now()
	expires := now.Add(c.ttl)
	if !ok && c.verify != nil && token != "" && len(token) <= maxTokenLen {
		n, exp, err := c.verify(r.Context(), token)
		switch {
		case err != nil:
			c.log.Debug("console: access token refused", "err", err)
		case n == "":
			c.log.Debug("console: access token refused: no subject")
		case !exp.IsZero() && !now.Before(exp):
			c.log.Debug("console: access token refused: expired", "operator", n)
		default:
			name, ok = n, true
			if !exp.IsZero() && exp.Before(expires) {
				expires = exp
			}
		}
	}
	if !ok {
		c.log.Warn("console: failed login", "remote", r.RemoteAddr)
		if keyed && !c.throttle.fail(key, now) {
			c.refuseThrottled(w, r, FailedLoginWindow)
			return
		}
		c.render(w, r, http.StatusUnauthorized, "login", nil, map[string]any{"Failed": true})
		return
	}
	id := randomToken()
	s := &session{name: name, csrf: randomToken(), expires: expires}
	c.mu.Lock()
	if len(c.sessions) >= maxSessions {
		for k, old := range c.sessions {
			if !now.Before(old.expires) {
				delete(c.sessions, k)
			}
		}
	}
	full := len(c.sessions) >= maxSessions
	if !full {
		c.sessions[sha256.Sum256([]byte(id))] = s
	}
	c.mu.Unlock()
	if full {
		http.Error(w, "too many sessions: log out elsewhere or wait for sessions to expire", http.StatusServiceUnavailable)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: c.cookieName(r), Value: id, Path: "/", HttpOnly: true, Secure: c.isSecure(r),
		SameSite: http.SameSiteStrictMode, Expires: s.expires, MaxAge: max(1, int(s.expires.Sub(now)/time.Second))})
	c.log.Info("console: login", "operator", name, "remote", r.RemoteAddr)
	http.Redirect(w, r, "/approvals", http.StatusSeeOther)
}

// refuseThrottled answers a login from an address with too many failed
// logins: 429, with when to try again.
func (c *console) refuseThrottled(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	secs := int((wait + time.Second - 1) / time.Second)
	c.log.Warn("console: login refused: too many failed logins", "remote", r.RemoteAddr, "retry_after_s", secs)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	http.Error(w, fmt.Sprintf("too many failed logins from your address: try again in %d s", secs), http.StatusTooManyRequests)
}

// logout ends the session and clears the cookie.
func (c *console) logout(w http.ResponseWriter, r *http.Request, s *session) {
	c.mu.Lock()
	for k, v := range c.sessions {
		if v == s {
			delete(c.sessions, k)
		}
	}
	c.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: c.cookieName(r), Value: "", Path: "/", HttpOnly: true, Secure: c.isSecure(r),
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// stateToken is an opaque digest of what the live updates watch, so a page
// and the event stream can tell whether anything changed.
func stateToken(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}
