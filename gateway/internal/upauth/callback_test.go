package upauth

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/testclock"
)

// TestConnectURLTakesNoState: a connect URL naming an authorization in
// progress (its state) or a spent marker is refused without touching it:
// the state still goes on to the code exchange at the callback.
func TestConnectURLTakesNoState(t *testing.T) {
	h := startHostile(t)
	m := userManager(t, h, NewMemoryFlows(), testclock.New(time.Now()), -1)
	u := flowURL(t, m, "alice")
	rec := open(m, u)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("begin: %d", rec.Code)
	}
	loc, _ := url.Parse(rec.Header().Get("Location"))
	state := loc.Query().Get("state")
	id := strings.SplitN(u, "flow=", 2)[1]
	for _, bad := range []string{state, spentID(id)} {
		if rec := open(m, ConnectPath+"up?flow="+url.QueryEscape(bad)); rec.Code != http.StatusGone {
			t.Fatalf("%s as a flow: %d", bad, rec.Code)
		}
	}
	cb := CallbackPath + "?" + url.Values{"state": {state}, "code": {"c0de"}, "iss": {h.issuer}}.Encode()
	if rec := get(m, cb, rec.Result().Cookies()[0]); rec.Code != http.StatusBadGateway || h.tokenRequests.Load() == 0 {
		t.Fatalf("the callback: %d %s (%d token requests)", rec.Code, rec.Body.String(), h.tokenRequests.Load())
	}
}

// TestWrongCookieSpendsNothing: a callback whose browser is not the one
// that began the flow (no cookie, or the cookie of another flow's browser)
// is refused 403 before the flow is taken: the rightful browser's callback
// then goes on to the code exchange (the hostile token endpoint refuses
// it: 502, after asking).
func TestWrongCookieSpendsNothing(t *testing.T) {
	h := startHostile(t)
	m := userManager(t, h, NewMemoryFlows(), testclock.New(time.Now()), -1)
	begin := func(subject string) (string, *http.Cookie) {
		rec := open(m, flowURL(t, m, subject))
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("begin: %d", rec.Code)
		}
		loc, _ := url.Parse(rec.Header().Get("Location"))
		return loc.Query().Get("state"), rec.Result().Cookies()[0]
	}
	state, mine := begin("alice")
	_, other := begin("bob")
	cb := CallbackPath + "?" + url.Values{"state": {state}, "code": {"c0de"}, "iss": {h.issuer}}.Encode()
	for _, c := range [][]*http.Cookie{nil, {other}} {
		if rec := get(m, cb, c...); rec.Code != http.StatusForbidden {
			t.Fatalf("cookies %v: %d", c, rec.Code)
		}
	}
	if rec := get(m, cb, mine); rec.Code != http.StatusBadGateway || h.tokenRequests.Load() == 0 {
		t.Fatalf("the rightful browser: %d %s (%d token requests)", rec.Code, rec.Body.String(), h.tokenRequests.Load())
	}
}
