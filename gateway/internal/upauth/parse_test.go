package upauth

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const formType = "application/x-www-form-urlencoded"

// TestParseProofForm: the connect form's parser accepts flow, csrf and an
// optional token once each, and refuses every other shape.
func TestParseProofForm(t *testing.T) {
	flow := strings.Repeat("f", 43)
	good := "flow=" + flow + "&csrf=c"
	f, err := parseProofForm(formType, strings.NewReader(good+"&token=t0k%2Bx"))
	if err != nil || f != (proofForm{Flow: flow, CSRF: "c", Token: "t0k+x"}) {
		t.Fatalf("good form: %+v %v", f, err)
	}
	if f, err := parseProofForm(formType+"; charset=UTF-8", strings.NewReader(good)); err != nil || f.Token != "" {
		t.Fatalf("good form without a token: %+v %v", f, err)
	}
	cases := []struct{ name, ct, body, want string }{
		{"json", "application/json", good, "content type"},
		{"multipart", "multipart/form-data; boundary=x", good, "content type"},
		{"no content type", "", good, "content type"},
		{"bad content type", "a/b; c", good, "content type"},
		{"latin1", formType + "; charset=latin1", good, "charset"},
		{"too large", formType, good + "&token=" + strings.Repeat("a", maxFormBody), "more than"},
		{"bad escape", formType, good + "&token=%zz", "invalid URL escape"},
		{"semicolon", formType, good + ";token=x", "invalid semicolon"},
		{"unknown field", formType, good + "&redirect=x", "unknown field"},
		{"flow twice", formType, good + "&flow=" + flow, "given 2 times"},
		{"token twice", formType, good + "&token=a&token=b", "given 2 times"},
		{"no flow", formType, "csrf=c", "no flow"},
		{"empty flow", formType, "flow=&csrf=c", "no flow"},
		{"no csrf", formType, "flow=" + flow, "no form token"},
		{"long token", formType, good + "&token=" + strings.Repeat("a", maxFormToken+1), "longer than"},
		{"space in token", formType, good + "&token=a+b", "space or control"},
		{"newline in token", formType, good + "&token=a%0Ab", "space or control"},
		{"NUL in csrf", formType, "flow=" + flow + "&csrf=c%00", "space or control"},
		{"DEL in flow", formType, "flow=a%7F&csrf=c", "space or control"},
		{"empty body", formType, "", "no flow"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseProofForm(tc.ct, strings.NewReader(tc.body))
			if !errors.Is(err, errForm) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want an errForm containing %q", err, tc.want)
			}
		})
	}
}

// FuzzProofForm: the connect form's parser never panics, and what it
// accepts has the shape it promises.
func FuzzProofForm(f *testing.F) {
	f.Add(formType, "flow=abc&csrf=c&token=t")
	f.Add(formType+"; charset=utf-8", "flow=abc&csrf=c")
	f.Add("text/plain", "flow=abc&csrf=c")
	f.Add(formType, "flow=a&flow=b&csrf=c")
	f.Add(formType, "flow=%zz")
	f.Add(formType, "flow=a;csrf=c")
	f.Fuzz(func(t *testing.T, ct, body string) {
		p, err := parseProofForm(ct, strings.NewReader(body))
		if err != nil {
			if !errors.Is(err, errForm) {
				t.Fatalf("an error that is not errForm: %v", err)
			}
			return
		}
		if p.Flow == "" || p.CSRF == "" || len(p.Token) > maxFormToken || len(body) > maxFormBody {
			t.Fatalf("accepted %+v from %q", p, body)
		}
		for _, v := range []string{p.Flow, p.CSRF, p.Token} {
			if strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
				t.Fatalf("accepted a space or control character: %q", v)
			}
		}
	})
}

func jws(payload string) string {
	return "eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString([]byte(payload)) + ".c2ln"
}

// TestParseIDClaims: sub, nonce and azp read from a JWS's payload; every
// malformed token refused.
func TestParseIDClaims(t *testing.T) {
	c, err := parseIDClaims(jws(`{"sub":"alice","nonce":"n","azp":"gw","aud":["gw"],"x":{"y":1}}`))
	if err != nil || c != (idClaims{Sub: "alice", Nonce: "n", AZP: "gw"}) {
		t.Fatalf("good: %+v %v", c, err)
	}
	if c, err := parseIDClaims(jws(`{}`)); err != nil || c != (idClaims{}) {
		t.Fatalf("empty object: %+v %v", c, err)
	}
	cases := []struct{ name, tok, want string }{
		{"empty", "", "not a compact JWS"},
		{"two parts", "a.b", "not a compact JWS"},
		{"four parts", "a.b.c.d", "not a compact JWS"},
		{"JWE", "a.b.c.d.e", "not a compact JWS"},
		{"payload not base64url", "a.!!!.c", "not base64url"},
		{"padded payload", "a." + base64.URLEncoding.EncodeToString([]byte(`{"sub":"a"}`)) + ".c", "not base64url"},
		{"payload not JSON", jws(`nope`), "not a JSON object"},
		{"payload an array", jws(`["sub"]`), "not a JSON object"},
		{"payload null", jws(`null`), "not a JSON object"},
		{"payload a string", jws(`"x"`), "not a JSON object"},
		{"trailing garbage", jws(`{"sub":"a"}x`), "not a JSON object"},
		{"nonce a number", jws(`{"nonce":1}`), "nonce is not a string"},
		{"sub an object", jws(`{"sub":{}}`), "sub is not a string"},
		{"azp an array", jws(`{"azp":["gw"]}`), "azp is not a string"},
		{"nonce null", jws(`{"nonce":null,"sub":"a"}`), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseIDClaims(tc.tok)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want %q", err, tc.want)
			}
		})
	}
}

// FuzzIDClaims: parseIDClaims never panics on any token.
func FuzzIDClaims(f *testing.F) {
	f.Add(jws(`{"sub":"alice","nonce":"n","azp":"gw"}`))
	f.Add(jws(`{"nonce":1}`))
	f.Add("a.b.c")
	f.Add("a.!!!.c")
	f.Add(jws(`[]`))
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := parseIDClaims(tok)
		if err == nil && strings.Count(tok, ".") != 2 {
			t.Fatalf("accepted %q as %+v", tok, c)
		}
	})
}

// TestIDTokenRefused: an ID token that is not the issuer's for the
// gateway's login client is refused by the verification: garbage, an
// access token of the issuer for another audience, a token of the right
// shape signed by nobody.
func TestIDTokenRefused(t *testing.T) {
	p := startProving(t)
	ctx := context.Background()
	l := p.m.o.Prove.Login
	jwks := p.as.JWKSURL()
	at, err := p.as.Token(ctx, "gw", "gw-secret", "")
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{
		"garbage":         "not-a-token",
		"unsigned":        jws(`{"iss":"` + l.Issuer + `","aud":"gw-login","sub":"alice","exp":9999999999}`),
		"another's token": at, // aud gw, not gw-login
		"alg none":        "eyJhbGciOiJub25lIn0." + base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"`+l.Issuer+`","aud":"gw-login","sub":"alice","exp":9999999999}`)) + ".",
	} {
		if _, err := p.m.verifyIDToken(ctx, nil, l.Issuer, l.ClientID, "sub", jwks, tok); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
	if _, err := p.m.verifyIDToken(ctx, nil, l.Issuer, l.ClientID, "sub", "", at); err == nil || !strings.Contains(err.Error(), "jwks_uri") {
		t.Errorf("no jwks_uri: %v", err)
	}
	if _, err := p.m.verifyIDToken(ctx, nil, l.Issuer, l.ClientID, "sub", "https://169.254.169.254/keys", at); err == nil {
		t.Error("a jwks_uri on a metadata address was fetched")
	}
}

// TestLoginCallbackChecks: the login's redirect back is refused without
// taking anything when its state is not a login's (an upstream state, a
// flow ID, garbage) or the browser has not the login's cookie.
func TestLoginCallbackChecks(t *testing.T) {
	p := startProving(t)
	get := func(target string, c *http.Cookie) int {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		if c != nil {
			req.AddCookie(c)
		}
		rec := httptest.NewRecorder()
		p.m.ServeHTTP(rec, req)
		return rec.Code
	}
	nonce := strings.Repeat("n", 43)
	for _, st := range []string{"", "x", stateOf(nonce), strings.Repeat("f", 43), "l." + strings.Repeat("!", 43)} {
		if code := get(LoginPath+"?code=c&state="+st, &http.Cookie{Name: loginCookie, Value: nonce}); code != http.StatusBadRequest {
			t.Errorf("state %q: %d", st, code)
		}
	}
	st := loginStateOf(nonce)
	if code := get(LoginPath+"?code=c&state="+st, nil); code != http.StatusForbidden {
		t.Errorf("no cookie: %d", code)
	}
	if code := get(LoginPath+"?code=c&state="+st, &http.Cookie{Name: loginCookie, Value: "other"}); code != http.StatusForbidden {
		t.Errorf("another cookie: %d", code)
	}
	if code := get(LoginPath+"?code=c&state="+st, &http.Cookie{Name: loginCookie, Value: nonce}); code != http.StatusBadRequest {
		t.Errorf("a login never begun: %d", code)
	}
	req := httptest.NewRequest(http.MethodPost, LoginPath, nil)
	rec := httptest.NewRecorder()
	p.m.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST to the login callback: %d", rec.Code)
	}
}
