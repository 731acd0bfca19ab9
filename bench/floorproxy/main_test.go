package main

import (
	"strings"
	"testing"
)

// Every bad flag is refused with a message that names it, before anything
// listens.
func TestRunRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct{ addr, upstream, want string }{
		{"127.0.0.1:0", "", "-upstream must be an http:// origin"},
		{"127.0.0.1:0", "https://127.0.0.1:1", "-upstream must be an http:// origin"},
		{"127.0.0.1:0", "http://127.0.0.1:1/mcp", "-upstream must be an http:// origin"},
		{"127.0.0.1:0", "http://example.com:80", "-upstream must be a loopback address"},
		{"127.0.0.1:0", "http://10.0.0.1:80", "-upstream must be a loopback address"},
		{"0.0.0.0:0", "http://127.0.0.1:1", "-addr must be a loopback address"},
		{"localhost:0", "http://127.0.0.1:1", "-addr must be a loopback address"},
		{"127.0.0.1", "http://127.0.0.1:1", "-addr must be a loopback address"},
	} {
		err := run(tc.addr, tc.upstream)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q, %q) = %v, want an error containing %q", tc.addr, tc.upstream, err, tc.want)
		}
	}
}
