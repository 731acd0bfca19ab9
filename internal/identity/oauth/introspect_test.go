package oauth_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/testclock"
	"github.com/gatehouse-dev/gatehouse/internal/identity/oauth"
)

const (
	inIssuer = "https://as.example.com"
	inClient = "gatehouse"
	inSecret = "s3cr&t:=x" // needs form-encoding in HTTP Basic (RFC 6749 §2.3.1)
	// opaqueToken is what a caller presents; it must never reach an error or
	// a log line.
	opaqueToken = "opq_7f3b9c2e41d04a8a9e6c5b1d2f0e8a7c"
)

// endpoint is an RFC 7662 introspection endpoint on a real HTTP server: it
// checks the resource server's client_secret_basic credentials (401
// otherwise), counts the POSTs it answers, and answers with what answer
// returns for the posted token.
type endpoint struct {
	srv *httptest.Server

	mu     sync.Mutex
	posts  int
	answer func(w http.ResponseWriter, token string)
}

func newEndpoint(t *testing.T, answer func(w http.ResponseWriter, token string)) *endpoint {
	t.Helper()
	ep := &endpoint{answer: answer}
	ep.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ep.mu.Lock()
		ep.posts++
		answer := ep.answer
		ep.mu.Unlock()
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			http.Error(w, "POST a form", http.StatusBadRequest)
			return
		}
		id, secret, ok := r.BasicAuth()
		if !ok || id != inClient || secret != "s3cr%26t%3A%3Dx" {
			w.Header().Set("WWW-Authenticate", `Basic realm="as"`)
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		if err := r.ParseForm(); err != nil || r.PostForm.Get("token") == "" {
			http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
			return
		}
		answer(w, r.PostForm.Get("token"))
	}))
	t.Cleanup(ep.srv.Close)
	return ep
}

func (ep *endpoint) count() int { ep.mu.Lock(); defer ep.mu.Unlock(); return ep.posts }

// active answers an active token of sub "alice" for resource, valid for an
// hour from t0, with edit applied to the JSON members.
func active(edit ...func(map[string]string)) func(http.ResponseWriter, string) {
	m := map[string]string{
		"active": "true", "sub": `"alice"`, "iss": `"` + inIssuer + `"`, "aud": `["` + resource + `"]`,
		"scope": `"mcp tool:echo"`, "exp": fmt.Sprint(t0.Add(time.Hour).Unix()), "iat": fmt.Sprint(t0.Unix()),
		"client_id": `"agent-7"`, "token_type": `"Bearer"`,
	}
	for _, e := range edit {
		e(m)
	}
	var b strings.Builder
	b.WriteString("{")
	first := true
	for k, v := range m {
		if !first {
			b.WriteString(",")
		}
		first = false
		fmt.Fprintf(&b, "%q:%s", k, v)
	}
	b.WriteString("}")
	body := b.String()
	return func(w http.ResponseWriter, token string) {
		if token != opaqueToken {
			raw(`{"active":false}`)(w, token)
			return
		}
		raw(body)(w, token)
	}
}

func raw(body string) func(http.ResponseWriter, string) {
	return func(w http.ResponseWriter, _ string) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}
}

func newIntrospector(t *testing.T, url string, clk *testclock.Clock, logs *bytes.Buffer, edit ...func(*oauth.IntrospectorOptions)) *oauth.Introspector {
	t.Helper()
	opts := &oauth.IntrospectorOptions{URL: url, ClientID: inClient, ClientSecret: inSecret,
		Issuer: inIssuer, Audience: resource, Now: clk.Now}
	if logs != nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	for _, e := range edit {
		e(opts)
	}
	in, err := oauth.NewIntrospector(opts)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestIntrospectActive(t *testing.T) {
	ep := newEndpoint(t, active())
	in := newIntrospector(t, ep.srv.URL, testclock.New(t0), nil)
	id, err := in.Introspect(context.Background(), opaqueToken)
	if err != nil {
		t.Fatal(err)
	}
	if id.Subject != inIssuer+"#alice" || !slices.Equal(id.Scopes, []string{"mcp", "tool:echo"}) || !id.Expiry.Equal(t0.Add(time.Hour)) {
		t.Fatalf("identity %+v", id)
	}
}

// Every way an introspection can fail is a typed refusal that names neither
// the token nor the secret, in the error and in the log.
func TestIntrospectRefusals(t *testing.T) {
	set := func(k, v string) func(map[string]string) { return func(m map[string]string) { m[k] = v } }
	del := func(k string) func(map[string]string) { return func(m map[string]string) { delete(m, k) } }
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	// thief is where a redirect points: it must never be asked.
	var stolen sync.Mutex
	thiefHits := 0
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		stolen.Lock()
		thiefHits++
		stolen.Unlock()
		raw(`{"active":true,"sub":"mallory","exp":4102444800}`)(w, "")
	}))
	defer thief.Close()
	for _, tc := range []struct {
		name   string
		answer func(http.ResponseWriter, string)
		url    string // instead of the endpoint's
		secret string // instead of inSecret
		reason oauth.Reason
	}{
		{name: "inactive", answer: raw(`{"active":false}`), reason: oauth.ReasonInactive},
		{name: "inactive with claims", answer: active(set("active", "false")), reason: oauth.ReasonInactive},
		{name: "wrong aud", answer: active(set("aud", `["https://other.example/mcp"]`)), reason: oauth.ReasonAudience},
		{name: "wrong aud string", answer: active(set("aud", `"https://other.example/mcp"`)), reason: oauth.ReasonAudience},
		{name: "empty aud", answer: active(set("aud", `[]`)), reason: oauth.ReasonAudience},
		{name: "wrong iss", answer: active(set("iss", `"https://evil.example"`)), reason: oauth.ReasonIssuer},
		{name: "expired", answer: active(set("exp", fmt.Sprint(t0.Add(-2*time.Minute).Unix()))), reason: oauth.ReasonExpired},
		{name: "not yet valid", answer: active(set("nbf", fmt.Sprint(t0.Add(5*time.Minute).Unix()))), reason: oauth.ReasonNotYetValid},
		{name: "no exp", answer: active(del("exp")), reason: oauth.ReasonMalformed},
		{name: "exp a string", answer: active(set("exp", `"1893553445"`)), reason: oauth.ReasonMalformed},
		{name: "no sub", answer: active(del("sub")), reason: oauth.ReasonMalformed},
		{name: "sub a number", answer: active(set("sub", `7`)), reason: oauth.ReasonMalformed},
		{name: "scope an array", answer: active(set("scope", `["mcp"]`)), reason: oauth.ReasonMalformed},
		{name: "aud a number", answer: active(set("aud", `1`)), reason: oauth.ReasonMalformed},
		{name: "active a string", answer: active(set("active", `"true"`)), reason: oauth.ReasonIntrospection},
		{name: "no active", answer: active(del("active")), reason: oauth.ReasonIntrospection},
		{name: "malformed JSON", answer: raw(`{"active":true,"sub":"alice"`), reason: oauth.ReasonIntrospection},
		{name: "not an object", answer: raw(`[true]`), reason: oauth.ReasonIntrospection},
		{name: "active in another case", answer: raw(`{"Active":true,"sub":"alice","exp":4102444800}`), reason: oauth.ReasonIntrospection},
		{name: "aud in another case", answer: active(del("aud"), set("AUD", `"`+resource+`"`), set("aud", `"https://other.example/mcp"`)), reason: oauth.ReasonAudience},
		{name: "member twice", answer: raw(`{"active":true,"sub":"alice","exp":4102444800,"active":false}`), reason: oauth.ReasonIntrospection},
		{name: "data after the object", answer: raw(`{"active":false} {"active":true}`), reason: oauth.ReasonIntrospection},
		{name: "oversized response", answer: active(set("pad", `"`+strings.Repeat("x", oauth.MaxIntrospectionResponse)+`"`)), reason: oauth.ReasonIntrospection},
		{name: "500", answer: func(w http.ResponseWriter, _ string) { http.Error(w, "boom", 500) }, reason: oauth.ReasonIntrospection},
		{name: "redirect not followed", answer: func(w http.ResponseWriter, _ string) {
			w.Header().Set("Location", thief.URL+"/steal")
			w.WriteHeader(http.StatusTemporaryRedirect)
		}, reason: oauth.ReasonIntrospection},
		{name: "401 from the endpoint", answer: active(), secret: "wrong", reason: oauth.ReasonIntrospection},
		{name: "endpoint down", answer: active(), url: downURL, reason: oauth.ReasonIntrospection},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := newEndpoint(t, tc.answer)
			var logs bytes.Buffer
			in := newIntrospector(t, or(tc.url, ep.srv.URL), testclock.New(t0), &logs, func(o *oauth.IntrospectorOptions) {
				o.ClientSecret = or(tc.secret, inSecret)
			})
			id, err := in.Introspect(context.Background(), opaqueToken)
			var oe *oauth.Error
			if !errors.As(err, &oe) || oe.Reason != tc.reason {
				t.Fatalf("Introspect = %+v, %v; want reason %v", id, err, tc.reason)
			}
			for _, s := range []string{err.Error(), logs.String()} {
				if strings.Contains(s, opaqueToken) || strings.Contains(s, opaqueToken[4:20]) || strings.Contains(s, inSecret) {
					t.Errorf("token or secret leaked: %s", s)
				}
			}
			// A refusal is never remembered: asked again, the endpoint is asked again.
			before := ep.count()
			if _, err := in.Introspect(context.Background(), opaqueToken); err == nil {
				t.Fatal("second Introspect accepted")
			}
			if tc.url == "" && ep.count() != before+1 {
				t.Errorf("endpoint asked %d times for the second try, want 1", ep.count()-before)
			}
			stolen.Lock()
			defer stolen.Unlock()
			if thiefHits != 0 {
				t.Errorf("a redirect was followed %d times: the token left for another host", thiefHits)
			}
		})
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func TestIntrospectTooLargeTokenNotSent(t *testing.T) {
	ep := newEndpoint(t, active())
	in := newIntrospector(t, ep.srv.URL, testclock.New(t0), nil)
	_, err := in.Introspect(context.Background(), strings.Repeat("a", oauth.DefaultMaxTokenSize+1))
	var oe *oauth.Error
	if !errors.As(err, &oe) || oe.Reason != oauth.ReasonTooLarge {
		t.Fatalf("err = %v, want too_large", err)
	}
	if _, err := in.Introspect(context.Background(), ""); !errors.As(err, &oe) || oe.Reason != oauth.ReasonMalformed {
		t.Fatalf("empty: err = %v, want malformed", err)
	}
	if ep.count() != 0 {
		t.Errorf("endpoint asked %d times", ep.count())
	}
}

// A positive answer is reused without a second POST, but never past the
// token's exp nor past CacheTTL.
func TestIntrospectCache(t *testing.T) {
	ctx := context.Background()
	t.Run("hit", func(t *testing.T) {
		ep := newEndpoint(t, active())
		clk := testclock.New(t0)
		in := newIntrospector(t, ep.srv.URL, clk, nil)
		for range 3 {
			id, err := in.Introspect(ctx, opaqueToken)
			if err != nil || id.Subject != inIssuer+"#alice" {
				t.Fatalf("%+v, %v", id, err)
			}
			id.Scopes[0] = "changed" // the caller's copy
		}
		if ep.count() != 1 {
			t.Fatalf("endpoint asked %d times for 3 presentations, want 1", ep.count())
		}
		id, _ := in.Introspect(ctx, opaqueToken)
		if id.Scopes[0] != "mcp" {
			t.Errorf("cached scopes changed by a caller: %v", id.Scopes)
		}
	})
	t.Run("exp honoured on a hit", func(t *testing.T) {
		exp := t0.Add(90 * time.Second)
		ep := newEndpoint(t, active(func(m map[string]string) { m["exp"] = fmt.Sprint(exp.Unix()) }))
		clk := testclock.New(t0)
		in := newIntrospector(t, ep.srv.URL, clk, nil)
		if _, err := in.Introspect(ctx, opaqueToken); err != nil {
			t.Fatal(err)
		}
		clk.Advance(90*time.Second + oauth.DefaultSkew + time.Second) // past exp and the skew
		_, err := in.Introspect(ctx, opaqueToken)
		var oe *oauth.Error
		if !errors.As(err, &oe) || oe.Reason != oauth.ReasonExpired {
			t.Fatalf("after exp: err = %v, want expired", err)
		}
		if ep.count() != 2 {
			t.Errorf("endpoint asked %d times, want 2 (the entry ends at exp)", ep.count())
		}
	})
	t.Run("cache TTL", func(t *testing.T) {
		ep := newEndpoint(t, active())
		clk := testclock.New(t0)
		in := newIntrospector(t, ep.srv.URL, clk, nil, func(o *oauth.IntrospectorOptions) { o.CacheTTL = time.Minute })
		if _, err := in.Introspect(ctx, opaqueToken); err != nil {
			t.Fatal(err)
		}
		clk.Advance(59 * time.Second)
		if _, err := in.Introspect(ctx, opaqueToken); err != nil || ep.count() != 1 {
			t.Fatalf("within the TTL: %v, %d POSTs", err, ep.count())
		}
		// The authorization server revokes the token; after the TTL it is asked again.
		ep.mu.Lock()
		ep.answer = raw(`{"active":false}`)
		ep.mu.Unlock()
		clk.Advance(2 * time.Second)
		_, err := in.Introspect(ctx, opaqueToken)
		var oe *oauth.Error
		if !errors.As(err, &oe) || oe.Reason != oauth.ReasonInactive || ep.count() != 2 {
			t.Fatalf("after the TTL: %v, %d POSTs; want inactive, 2", err, ep.count())
		}
	})
	t.Run("disabled", func(t *testing.T) {
		ep := newEndpoint(t, active())
		in := newIntrospector(t, ep.srv.URL, testclock.New(t0), nil, func(o *oauth.IntrospectorOptions) { o.Cache = -1 })
		for range 2 {
			if _, err := in.Introspect(ctx, opaqueToken); err != nil {
				t.Fatal(err)
			}
		}
		if ep.count() != 2 {
			t.Errorf("endpoint asked %d times, want 2", ep.count())
		}
	})
}

func TestNewIntrospectorRefusesOptions(t *testing.T) {
	ok := oauth.IntrospectorOptions{URL: "https://as.example.com/introspect", ClientID: "a", ClientSecret: "b",
		Issuer: inIssuer, Audience: resource}
	for _, tc := range []struct {
		name string
		edit func(*oauth.IntrospectorOptions)
		want string
	}{
		{"no URL", func(o *oauth.IntrospectorOptions) { o.URL = "" }, "URL is required"},
		{"no client", func(o *oauth.IntrospectorOptions) { o.ClientID = "" }, "ClientID is required"},
		{"no secret", func(o *oauth.IntrospectorOptions) { o.ClientSecret = "" }, "ClientSecret is required"},
		{"no issuer", func(o *oauth.IntrospectorOptions) { o.Issuer = "" }, "Issuer is required"},
		{"no audience", func(o *oauth.IntrospectorOptions) { o.Audience = "" }, "Audience is required"},
		{"plain http URL", func(o *oauth.IntrospectorOptions) { o.URL = "http://as.example.com/i" }, "not loopback"},
		{"issuer query", func(o *oauth.IntrospectorOptions) { o.Issuer = "https://as.example.com?a" }, "query"},
		{"negative TTL", func(o *oauth.IntrospectorOptions) { o.CacheTTL = -1 }, "CacheTTL is negative"},
		{"negative size", func(o *oauth.IntrospectorOptions) { o.MaxTokenSize = -1 }, "MaxTokenSize is negative"},
	} {
		o := ok
		tc.edit(&o)
		if _, err := oauth.NewIntrospector(&o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := oauth.NewIntrospector(nil); err == nil {
		t.Error("nil options accepted")
	}
	if _, err := oauth.NewIntrospector(&ok); err != nil {
		t.Errorf("valid options: %v", err)
	}
}

// An opaque token obtained from a real authorization server by the
// client_credentials grant is introspected at its RFC 7662 endpoint with
// the resource server's own client credentials; a revoked one stops being
// accepted once its answer leaves the cache.
func TestIntrospectRealAuthServer(t *testing.T) {
	s := authserver.Start(t, authserver.Options{Clients: []authserver.Client{
		{ID: "agent-7", Secret: "agent-secret", Opaque: true, Resources: []string{realResource, otherResource}},
		{ID: "gatehouse", Secret: "rs-secret"},
	}})
	ctx := context.Background()
	clk := &offsetClock{}
	in, err := oauth.NewIntrospector(&oauth.IntrospectorOptions{URL: s.IntrospectionURL(), ClientID: "gatehouse",
		ClientSecret: "rs-secret", Issuer: s.Issuer(), Audience: realResource, CacheTTL: time.Minute, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.Token(ctx, "agent-7", "agent-secret", realResource, "mcp", "tool:echo")
	if err != nil {
		t.Fatal(err)
	}
	id, err := in.Introspect(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	if id.Subject != s.Issuer()+"#agent-7" || !slices.Equal(id.Scopes, []string{"mcp", "tool:echo"}) {
		t.Fatalf("identity %+v", id)
	}
	if _, err := in.Introspect(ctx, tok); err != nil || s.Introspections() != 1 {
		t.Fatalf("second presentation: %v, %d introspections (want 1)", err, s.Introspections())
	}

	other, err := s.Token(ctx, "agent-7", "agent-secret", otherResource)
	if err != nil {
		t.Fatal(err)
	}
	var oe *oauth.Error
	if _, err := in.Introspect(ctx, other); !errors.As(err, &oe) || oe.Reason != oauth.ReasonAudience {
		t.Fatalf("another resource's token: %v", err)
	}
	if _, err := in.Introspect(ctx, "made-up-opaque-token"); !errors.As(err, &oe) || oe.Reason != oauth.ReasonInactive {
		t.Fatalf("made-up token: %v", err)
	}

	s.Revoke("agent-7")
	clk.advance(61 * time.Second)
	if _, err := in.Introspect(ctx, tok); !errors.As(err, &oe) || oe.Reason != oauth.ReasonInactive {
		t.Fatalf("revoked, past the cache TTL: %v", err)
	}

	// Wrong resource-server credentials: the endpoint's 401 is the
	// introspection's failure, not the token's.
	bad, err := oauth.NewIntrospector(&oauth.IntrospectorOptions{URL: s.IntrospectionURL(), ClientID: "gatehouse",
		ClientSecret: "wrong", Issuer: s.Issuer(), Audience: realResource})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Introspect(ctx, tok); !errors.As(err, &oe) || oe.Reason != oauth.ReasonIntrospection {
		t.Fatalf("wrong credentials: %v", err)
	}
}
