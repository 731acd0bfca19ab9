package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/gatehouse-dev/gatehouse/store/postgres"
)

// TestSharedRateLimitHostileSubjects: a shared rate limit on PostgreSQL
// counts subjects whatever bytes Identify returns for them (a NUL byte,
// which PostgreSQL text refuses; a 64 KiB claim; non-ASCII), each on its
// own: "eve" and "eve\x00x" do not share a quota.
func TestSharedRateLimitHostileSubjects(t *testing.T) {
	dsn := pgSchema(t)
	st, err := postgres.Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	subjects := map[string]string{
		"tok-eve":     "eve",
		"tok-nul":     "eve\x00x",
		"tok-huge":    strings.Repeat("e", 64<<10),
		"tok-unicode": "éve-🚀-\u202e",
	}
	var eff effects
	s, err := New(Options{
		Tools:     testTools(&eff, nil),
		Identify:  identify,
		AllowTool: testAllow,
		RateLimit: &RateLimit{MaxCalls: 3, Window: time.Hour, Counters: st}, // initialize and two calls
		Clock:     func() time.Time { return childNow },
		Logger:    quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	url := serveHTTP(t, s, &HTTPOptions{Verifier: func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		user, ok := subjects[token]
		if !ok {
			return nil, fmt.Errorf("%w: unknown token", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{UserID: user, Expiration: time.Now().Add(time.Hour)}, nil
	}})
	for tok := range subjects {
		cs := connect(t, url, tok)
		for i, want := range []string{"", "", "rate_limited"} {
			r := callTool(t, cs, "charge", chargeIn{Account: "a", Amount: i}, nil)
			if code := refusalCode(r); code != want || (want == "" && r.IsError) {
				t.Fatalf("%s: call %d: code %q (%+v), want %q", tok, i, code, r.Content, want)
			}
		}
	}
	if n := eff.total(); n != 2*len(subjects) {
		t.Fatalf("%d effects ran, want %d (2 per subject)", n, 2*len(subjects))
	}
}
