package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/internal/identity/oauth"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const resource = "http://127.0.0.1:18185/mcp"

// TestServesAVerifiableToken: the token written to -token-file verifies
// against the printed issuer's published keys (discovered from its metadata,
// as a gateway does), for -resource, with the -scope values, the -subject
// and a life of -lifetime; the file is its owner's only; the server stops
// when the context ends.
func TestServesAVerifiableToken(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "tok")
	// An existing file is replaced, not written through.
	if err := os.WriteFile(tokFile, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	var stderr strings.Builder
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"-resource", resource, "-token-file", tokFile, "-scope", "mcp", "-scope", "tool:echo",
			"-subject", "load-1", "-lifetime", "2h"}, pw, &stderr)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	if !sc.Scan() {
		t.Fatalf("no output; stderr: %s", stderr.String())
	}
	issuer, ok := strings.CutPrefix(sc.Text(), "issuer=")
	if !ok || !strings.HasPrefix(issuer, "http://127.0.0.1:") {
		t.Fatalf("first line %q, want issuer=http://127.0.0.1:PORT", sc.Text())
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()

	b, err := os.ReadFile(tokFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(tokFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, %v; want 0600", fi.Mode(), err)
	}
	tok := strings.TrimSuffix(string(b), "\n")
	if strings.Count(tok, ".") != 2 || strings.ContainsAny(tok, " \n") {
		t.Fatalf("token file holds %q, want one compact JWS line", b)
	}
	v, err := oauth.New(&oauth.Options{Issuer: issuer, Audience: resource})
	if err != nil {
		t.Fatal(err)
	}
	id, err := v.Verify(t.Context(), tok)
	if err != nil {
		t.Fatalf("the minted token does not verify: %v", err)
	}
	if id.Subject != issuer+"#load-1" || !slices.Equal(id.Scopes, []string{"mcp", "tool:echo"}) {
		t.Errorf("identity %+v", id)
	}
	if life := time.Until(id.Expiry); life < 119*time.Minute || life > 121*time.Minute {
		t.Errorf("token valid for %v, want 2h", life)
	}
	// Another resource's verifier refuses it.
	other, err := oauth.New(&oauth.Options{Issuer: issuer, Audience: "http://127.0.0.1:1/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Verify(t.Context(), tok); err == nil {
		t.Error("the token verified for another resource")
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d after the context ended: %s", c, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("did not stop within 10s of the context ending")
	}
}

// TestFlagErrors: a bad command line exits 2 with a message naming what is
// wrong, before anything listens or any file is written.
func TestFlagErrors(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "tok")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-token-file", tok}, "-resource is required"},
		{[]string{"-resource", resource}, "-token-file is required"},
		{[]string{"-resource", "127.0.0.1:8080/mcp", "-token-file", tok}, "-resource"},
		{[]string{"-resource", "/mcp", "-token-file", tok}, "scheme"},
		{[]string{"-resource", "ftp://127.0.0.1/mcp", "-token-file", tok}, "scheme"},
		{[]string{"-resource", "http:///mcp", "-token-file", tok}, "no host"},
		{[]string{"-resource", "http://u:p@127.0.0.1/mcp", "-token-file", tok}, "user info"},
		{[]string{"-resource", "http://127.0.0.1/mcp?x=1", "-token-file", tok}, "query"},
		{[]string{"-resource", "http://127.0.0.1/mcp?", "-token-file", tok}, "query"},
		{[]string{"-resource", "http://127.0.0.1/mcp#f", "-token-file", tok}, "fragment"},
		{[]string{"-resource", "http://127.0.0.1/mcp#", "-token-file", tok}, "fragment"},
		{[]string{"-resource", "http://%zz/", "-token-file", tok}, "-resource"},
		{[]string{"-resource", resource, "-token-file", tok, "-lifetime", "0s"}, "-lifetime"},
		{[]string{"-resource", resource, "-token-file", tok, "-lifetime", "-1h"}, "-lifetime"},
		{[]string{"-resource", resource, "-token-file", tok, "-lifetime", "forever"}, "-lifetime"},
		{[]string{"-resource", resource, "-token-file", tok, "-scope", ""}, "empty scope"},
		{[]string{"-resource", resource, "-token-file", tok, "-scope", "a b"}, "not allowed in a scope"},
		{[]string{"-resource", resource, "-token-file", tok, "-scope", `a"b`}, "not allowed in a scope"},
		{[]string{"-resource", resource, "-token-file", tok, "-scope", `a\b`}, "not allowed in a scope"},
		{[]string{"-resource", resource, "-token-file", tok, "-scope", "tök"}, "not allowed in a scope"},
		{[]string{"-resource", resource, "-token-file", tok, "-subject", ""}, "-subject"},
		{[]string{"-resource", resource, "-token-file", tok, "-subject", "a b"}, "-subject"},
		{[]string{"-resource", resource, "-token-file", tok, "-subject", strings.Repeat("s", 256)}, "-subject"},
		{[]string{"-resource", resource, "-token-file", tok, "extra"}, "unexpected arguments"},
		{[]string{"-resource", resource, "-token-file", tok, "-nope"}, "-nope"},
	} {
		var stderr strings.Builder
		if got := run(t.Context(), c.args, io.Discard, &stderr); got != 2 {
			t.Errorf("run(%q) = %d, want 2", c.args, got)
		}
		if !strings.Contains(stderr.String(), c.want) {
			t.Errorf("run(%q) said %q, want it to say %q", c.args, stderr.String(), c.want)
		}
	}
	if _, err := os.Stat(tok); !os.IsNotExist(err) {
		t.Errorf("a bad command line wrote the token file: %v", err)
	}
}

func FuzzCheckScope(f *testing.F) {
	for _, s := range []string{"mcp", "tool:echo", "", "a b", `a"b`, `a\b`, "tök", "!#[]~"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkScope(s) != nil {
			return
		}
		if s == "" || strings.ContainsAny(s, " \"\\") {
			t.Fatalf("checkScope accepted %q", s)
		}
		for i := 0; i < len(s); i++ {
			if s[i] < 0x21 || s[i] > 0x7e {
				t.Fatalf("checkScope accepted byte %#x in %q", s[i], s)
			}
		}
	})
}
