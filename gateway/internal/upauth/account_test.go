package upauth

import (
	"context"
	"strings"
	"testing"
)

// TestUserinfoAccount: the upstream account from the real authorization
// server's userinfo endpoint (listed by its OpenID metadata), asked with an
// access token it issued: issuer#sub. A token it refuses, or an issuer
// whose metadata is not there, gives no account and an error.
func TestUserinfoAccount(t *testing.T) {
	p := startProving(t)
	ctx := context.Background()
	s := p.m.servers["up"]
	iss := p.as.Issuer()
	at, err := p.as.Token(ctx, "gw", "gw-secret", "")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.m.userinfoAccount(ctx, s, iss, at); err != nil || got != iss+"#gw" {
		t.Fatalf("userinfo: %q %v", got, err)
	}
	if got, err := p.m.userinfoAccount(ctx, s, iss, "not-a-token"); err == nil || got != "" {
		t.Fatalf("a refused token: %q %v", got, err)
	}
	if got, err := p.m.userinfoAccount(ctx, s, iss+"/elsewhere", at); err == nil || got != "" {
		t.Fatalf("another issuer: %q %v", got, err)
	}
	if got, err := p.m.userinfoAccount(ctx, s, "", at); err != nil || got != "" {
		t.Fatalf("no issuer: %q %v", got, err)
	}
}

// TestParseUserinfo: a userinfo answer's sub, and every malformed answer
// refused.
func TestParseUserinfo(t *testing.T) {
	if sub, err := parseUserinfo([]byte(`{"sub":"248289761001","name":"Jane","email":"j@example.com"}`)); err != nil || sub != "248289761001" {
		t.Fatalf("good: %q %v", sub, err)
	}
	cases := []struct{ name, body, want string }{
		{"empty", ``, "not a JSON object"},
		{"null", `null`, "not a JSON object"},
		{"array", `[{"sub":"a"}]`, "not a JSON object"},
		{"string", `"a"`, "not a JSON object"},
		{"trailing", `{"sub":"a"}{}`, "not a JSON object"},
		{"no sub", `{"name":"a"}`, "no sub"},
		{"sub number", `{"sub":1}`, "not a string"},
		{"sub null", `{"sub":null}`, "empty"},
		{"sub empty", `{"sub":""}`, "empty"},
		{"sub long", `{"sub":"` + strings.Repeat("a", 256) + `"}`, "longer than 255"},
		{"sub newline", `{"sub":"a\nb"}`, "control character"},
		{"sub NUL", `{"sub":"a\u0000"}`, "control character"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseUserinfo([]byte(tc.body)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want %q", err, tc.want)
			}
		})
	}
}

// FuzzUserinfo: parseUserinfo never panics, and a sub it accepts is
// non-empty, short and free of control characters.
func FuzzUserinfo(f *testing.F) {
	f.Add([]byte(`{"sub":"alice"}`))
	f.Add([]byte(`{"sub":1}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"sub":"a\u0007"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		sub, err := parseUserinfo(body)
		if err == nil && (sub == "" || len(sub) > 255 || strings.ContainsFunc(sub, func(r rune) bool { return r < 0x20 || r == 0x7f })) {
			t.Fatalf("accepted %q", sub)
		}
	})
}
