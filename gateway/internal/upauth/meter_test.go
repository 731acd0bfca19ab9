package upauth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/testclock"
)

// userManager is a Manager of the hostile server h (user mode) on flows,
// on the clock clk.
func userManager(t *testing.T, h *hostile, flows Flows, clk *testclock.Clock, limit int) *Manager {
	t.Helper()
	m, err := New(&Options{Servers: []Server{{Name: "up", URL: h.mcpURL, Mode: User, ClientID: "gw"}},
		Tokens: &upstream.MemoryTokens{}, Flows: flows, PublicURL: "http://127.0.0.1:9", Now: clk.Now, ConnectLimit: limit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// TestConnectMeter: /connect/* is metered per client address: 30 requests
// a minute by default, in bursts of 30; the 31st is 429 with Retry-After
// (2 s: one request every 2 s refills); another address is served; an
// IPv6 client counts by its /64; the bucket refills with time; a negative
// ConnectLimit turns it off.
func TestConnectMeter(t *testing.T) {
	h := startHostile(t)
	clk := testclock.New(time.Now())
	m := userManager(t, h, NewMemoryFlows(), clk, 0)
	from := func(m *Manager, addr string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, ConnectPath+"up?flow=nope", nil)
		req.RemoteAddr = addr
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, req)
		return rec
	}
	for i := range DefaultConnectLimit {
		if rec := from(m, "192.0.2.1:1234"); rec.Code != http.StatusGone {
			t.Fatalf("request %d: %d", i+1, rec.Code)
		}
	}
	rec := from(m, "192.0.2.1:5678")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "2" || !strings.Contains(rec.Body.String(), "Too many connect requests") {
		t.Fatalf("request %d: %d %q %s", DefaultConnectLimit+1, rec.Code, rec.Header().Get("Retry-After"), rec.Body.String())
	}
	if rec := from(m, "198.51.100.7:1"); rec.Code != http.StatusGone {
		t.Fatalf("another address: %d", rec.Code)
	}
	for i := range DefaultConnectLimit {
		if rec := from(m, "[2001:db8::1]:1"); rec.Code != http.StatusGone {
			t.Fatalf("IPv6 request %d: %d", i+1, rec.Code)
		}
	}
	if rec := from(m, "[2001:db8::2]:1"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("the same /64: %d", rec.Code)
	}
	clk.Advance(2 * time.Second)
	if rec := from(m, "192.0.2.1:1234"); rec.Code != http.StatusGone {
		t.Fatalf("2 s later: %d", rec.Code)
	}
	if rec := from(m, "192.0.2.1:1234"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("and again: %d", rec.Code)
	}
	off := userManager(t, h, NewMemoryFlows(), clk, -1)
	for i := range 2 * DefaultConnectLimit {
		if rec := from(off, "192.0.2.1:1234"); rec.Code != http.StatusGone {
			t.Fatalf("no limit, request %d: %d", i+1, rec.Code)
		}
	}
}
