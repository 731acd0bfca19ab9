package egress

import (
	"net/url"
	"testing"
)

func TestOriginOf(t *testing.T) {
	same := [][2]string{
		{"http://example.test/mcp", "http://example.test:80/other"},
		{"https://example.test/", "https://EXAMPLE.test:443"},
		{"HTTPS://Example.Test./a", "https://example.test/b"},
		{"http://[::1]/", "http://[0:0::1]:80/"},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8080/x?y#z"},
	}
	for _, p := range same {
		a, b := mustParse(t, p[0]), mustParse(t, p[1])
		if originOf(a) != originOf(b) {
			t.Errorf("%s and %s: origins %q and %q differ", p[0], p[1], originOf(a), originOf(b))
		}
	}
	different := [][2]string{
		{"http://example.test/", "https://example.test/"},
		{"http://example.test/", "http://example.test:8080/"},
		{"https://example.test/", "https://example.test:80/"},
		{"http://example.test/", "http://example.test.evil/"},
		{"http://example.test/", "http://sub.example.test/"},
		{"http://127.0.0.1/", "http://[::ffff:127.0.0.1]/"},
		{"http://127.0.0.1:1/", "http://127.0.0.1:2/"},
	}
	for _, p := range different {
		a, b := mustParse(t, p[0]), mustParse(t, p[1])
		if originOf(a) == originOf(b) {
			t.Errorf("%s and %s: same origin %q", p[0], p[1], originOf(a))
		}
	}
	if got := originOf(mustParse(t, "https://Example.test")); got != "https://example.test:443" {
		t.Errorf("originOf = %q", got)
	}
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
