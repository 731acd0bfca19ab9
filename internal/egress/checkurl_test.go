package egress_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/internal/egress"
)

func TestCheckURLHostList(t *testing.T) {
	g := egress.New(&egress.Options{AllowedHosts: []string{"allowed.test", "Mixed.Case.TEST", "127.0.0.1", "0:0::1", "dotted.test.", "api.test:443", "*.wild.test"}})
	cases := []struct {
		url  string
		rule diag.Rule // "" = accepted
	}{
		{"http://allowed.test/mcp", ""},
		{"https://ALLOWED.Test:8443/x", ""},
		{"http://mixed.case.test/", ""},
		{"http://allowed.test./", ""}, // one trailing dot is the same name
		{"http://dotted.test/", ""},   // and on the list side too
		{"http://127.0.0.1:9/", ""},
		{"http://[::1]:9/", ""}, // canonical IP form
		{"http://allowed.test../", diag.InvalidURL},
		{"http://other.test/", diag.HostNotAllowed},
		{"http://allowed.test.evil/", diag.HostNotAllowed},
		{"http://evil.allowed.test/", diag.HostNotAllowed}, // no suffix match
		{"http://allowedxtest/", diag.HostNotAllowed},
		{"http://127.0.0.2/", diag.HostNotAllowed}, // a list is a list: loopback literals too
		{"http://localhost/", diag.HostNotAllowed},
		{"http://api.test/", diag.HostNotAllowed},    // "api.test:443" is not a hostname entry
		{"http://x.wild.test/", diag.HostNotAllowed}, // no wildcards
		{"ftp://allowed.test/", diag.InvalidURL},
		{"javascript:alert(1)", diag.InvalidURL},
		{"http:allowed.test", diag.InvalidURL},
		{"http://user:pw@allowed.test/", diag.InvalidURL},
		{"http://user@allowed.test/", diag.InvalidURL},
		{"http:///path", diag.InvalidURL},
		{"allowed.test/mcp", diag.InvalidURL},
		{"//allowed.test/mcp", diag.InvalidURL},
		{"http://allowed.test:99999/", diag.InvalidURL},
		{"http://allowed.test:0/", diag.InvalidURL},
		{"http://allowed.test:/", diag.InvalidURL},
		{"http://ällowed.test/", diag.InvalidURL},
		{"http://allowed test/", diag.InvalidURL},
		{"http://[::1/", diag.InvalidURL},
		{"", diag.InvalidURL},
	}
	for _, tc := range cases {
		err := g.CheckURL(tc.url)
		if tc.rule == "" {
			if err != nil {
				t.Errorf("CheckURL(%q) = %v, want nil", tc.url, err)
			}
			continue
		}
		var e *egress.Error
		if !errors.As(err, &e) || e.Rule != tc.rule {
			t.Errorf("CheckURL(%q) = %v, want rule %s", tc.url, err, tc.rule)
		}
	}
}

func TestCheckURLWithoutList(t *testing.T) {
	g := egress.New(nil)
	for _, u := range []string{"http://anything.test/", "https://10.0.0.1/", "http://169.254.169.254/"} {
		// No list: CheckURL passes; addresses are the dialer's business.
		if err := g.CheckURL(u); err != nil {
			t.Errorf("CheckURL(%q) = %v", u, err)
		}
	}
	if err := g.CheckURL("gopher://x.test/"); err == nil {
		t.Error("gopher accepted")
	}
	// An empty, non-nil list allows nothing.
	empty := egress.New(&egress.Options{AllowedHosts: []string{}})
	err := empty.CheckURL("http://127.0.0.1/")
	var e *egress.Error
	if !errors.As(err, &e) || e.Rule != diag.HostNotAllowed {
		t.Errorf("empty list: %v", err)
	}
}

func TestErrorString(t *testing.T) {
	err := egress.New(&egress.Options{AllowedHosts: []string{"a.test"}}).CheckURL("http://b.test/")
	if got, want := err.Error(), `egress: "b.test": host is not in allowedHosts [host-not-allowed]`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// FuzzCheckURL: never panics; an accepted URL is an http(s) URL with a host,
// no user information, and (with a list) a listed host.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"http://allowed.test/mcp", "https://ALLOWED.test.:8443/", "http://127.0.0.1:8080/", "http://[::1]/",
		"http://[::ffff:127.0.0.1]/", "ftp://allowed.test/", "http://user@allowed.test/", "http:///x",
		"http://allowed.test:99999/", "http://%41llowed.test/", "http://allowed.test%00/", "http://[fe80::1%25eth0]/",
		"", "http://", "://", "http://allowed.test\\@evil.test/", "HTTP://ALLOWED.TEST",
	} {
		f.Add(s)
	}
	listed := egress.New(&egress.Options{AllowedHosts: []string{"allowed.test", "127.0.0.1"}})
	open := egress.New(nil)
	f.Fuzz(func(t *testing.T, raw string) {
		for i, g := range []*egress.Guard{listed, open} {
			err := g.CheckURL(raw)
			if err != nil {
				var e *egress.Error
				if !errors.As(err, &e) || (e.Rule != diag.InvalidURL && e.Rule != diag.HostNotAllowed) || e.Error() == "" {
					t.Fatalf("CheckURL(%q) = %v: not an *egress.Error with a CheckURL rule", raw, err)
				}
				continue
			}
			u, perr := url.Parse(raw)
			if perr != nil {
				t.Fatalf("CheckURL(%q) accepted an unparsable URL", raw)
			}
			if u.Scheme != "http" && u.Scheme != "https" {
				t.Fatalf("CheckURL(%q) accepted scheme %q", raw, u.Scheme)
			}
			if u.Hostname() == "" || u.User != nil {
				t.Fatalf("CheckURL(%q) accepted host %q user %v", raw, u.Hostname(), u.User)
			}
			if i == 0 {
				h := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
				if h != "allowed.test" && h != "127.0.0.1" {
					t.Fatalf("CheckURL(%q) accepted unlisted host %q", raw, u.Hostname())
				}
			}
		}
	})
}
