package console

import (
	"net/http"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/testclock"
)

// TestLoginThrottled guesses admin tokens over HTTP the way an attacker
// would: after MaxFailedLogins wrong ones within the window, every login
// from the address is refused with 429 and a Retry-After, the right token
// included, and no session is handed out; once the window ends the right
// token logs in again.
func TestLoginThrottled(t *testing.T) {
	st := openStore(t, "sqlite:"+t.TempDir()+"/c.db")
	clk := testclock.New(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	srv := startConsole(t, st, &Options{Now: clk.Now})
	c := newClient(t, srv.URL)
	for i := range MaxFailedLogins {
		if code := c.login(aliceToken + strconv.Itoa(i)); code != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d, want 401", i, code)
		}
		clk.Advance(time.Second)
	}
	code, hdr, body := c.do("POST", "/login", map[string][]string{"token": {aliceToken}}, sameOrigin)
	if code != http.StatusTooManyRequests {
		t.Fatalf("the right token after %d guesses: %d %q, want 429", MaxFailedLogins, code, body)
	}
	ra, err := strconv.Atoi(hdr.Get("Retry-After"))
	if want := int((FailedLoginWindow - MaxFailedLogins*time.Second) / time.Second); err != nil || ra != want {
		t.Fatalf("Retry-After %q, want %d", hdr.Get("Retry-After"), want)
	}
	if len(hdr.Values("Set-Cookie")) != 0 {
		t.Fatalf("a throttled login set cookies: %v", hdr.Values("Set-Cookie"))
	}
	if code, _, _ := c.do("GET", "/approvals", nil, nil); code != http.StatusSeeOther {
		t.Fatalf("/approvals after a throttled login: %d, want the redirect to /login", code)
	}
	clk.Advance(time.Duration(ra) * time.Second)
	if code := c.login(aliceToken); code != http.StatusSeeOther {
		t.Fatalf("the right token once the window ended: %d, want 303", code)
	}
	if code, _, _ := c.do("GET", "/approvals", nil, nil); code != http.StatusOK {
		t.Fatalf("/approvals after logging in: %d", code)
	}
}

// TestThrottleKeys: an IPv4 client is its address, an IPv6 client its
// /64 (so rotating through one's own /64 does not reset the count), an
// IPv4-mapped IPv6 address the IPv4 one; the count is per key and
// resets when the window ends; past maxThrottled tracked addresses a new
// one is refused rather than tracked.
func TestThrottleKeys(t *testing.T) {
	key := func(remote string) netip.Prefix {
		k, ok := clientKey(&http.Request{RemoteAddr: remote})
		if !ok {
			t.Fatalf("no key for %q", remote)
		}
		return k
	}
	if a, b := key("[2001:db8:1:2:aaaa::1]:5000"), key("[2001:db8:1:2:bbbb::9]:6000"); a != b {
		t.Errorf("one /64, two keys: %v %v", a, b)
	}
	if a, b := key("[2001:db8:1:2::1]:1"), key("[2001:db8:1:3::1]:1"); a == b {
		t.Errorf("two /64s, one key %v", a)
	}
	if a, b := key("[::ffff:192.0.2.7]:1"), key("192.0.2.7:2"); a != b {
		t.Errorf("mapped %v, plain %v", a, b)
	}
	if _, ok := clientKey(&http.Request{RemoteAddr: "not an address"}); ok {
		t.Error("a key for a remote address that is none")
	}

	var th throttle
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	a, b := key("192.0.2.1:1"), key("192.0.2.2:1")
	for range MaxFailedLogins {
		if !th.fail(a, now) {
			t.Fatal("fail refused to track")
		}
	}
	if th.wait(a, now) != FailedLoginWindow || th.wait(b, now) != 0 {
		t.Fatalf("wait a %v, b %v", th.wait(a, now), th.wait(b, now))
	}
	if th.wait(a, now.Add(FailedLoginWindow)) != 0 {
		t.Fatal("still throttled once the window ended")
	}

	var full throttle
	for i := range maxThrottled {
		ip := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		full.fail(netip.PrefixFrom(ip, 32), now)
	}
	if full.fail(b, now) {
		t.Fatal("a new address was tracked past maxThrottled")
	}
	if !full.fail(b, now.Add(FailedLoginWindow)) {
		t.Fatal("a new address refused once every window had ended")
	}
}
