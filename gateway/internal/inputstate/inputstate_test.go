package inputstate

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/vault"
)

// testKeys are fixed keys: the fuzz corpus holds tokens sealed under them.
func testKeys(t testing.TB) (cur, prev *vault.Keys) {
	t.Helper()
	k1 := bytes.Repeat([]byte{1}, 32)
	k2 := bytes.Repeat([]byte{2}, 32)
	c, err := vault.NewKeys(k1, k2)
	if err != nil {
		t.Fatal(err)
	}
	p, err := vault.NewKeys(k2, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Derive(Purpose), p.Derive(Purpose)
}

// epoch is the fixed clock of the tests (and of the fuzz corpus's tokens).
var epoch = time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)

func fixed(t time.Time) func() time.Time { return func() time.Time { return t } }

func binding() Binding {
	return Binding{Server: "up", Subject: "alice", Method: "tools/call", Name: "confirm", Args: Digest([]byte(`{"n":1}`))}
}

func TestRoundTrip(t *testing.T) {
	cur, _ := testKeys(t)
	s := New(cur, &Options{Now: fixed(epoch)})
	for _, state := range []string{"", "state-1", strings.Repeat("x", 100<<10), "\x00é\"}"} {
		tok, err := s.Seal(binding(), state)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(tok, prefix) || strings.Contains(tok, state) && state != "" {
			t.Fatalf("token %.40q", tok)
		}
		got, err := s.Open(tok, binding())
		if err != nil || got != state {
			t.Fatalf("Open: %q, %v", got, err)
		}
	}
}

// TestSealedTwiceDiffers: a random nonce per seal; two tokens of one state
// differ (a caller cannot tell two equal states apart by their tokens).
func TestSealedTwiceDiffers(t *testing.T) {
	cur, _ := testKeys(t)
	s := New(cur, &Options{Now: fixed(epoch)})
	a, _ := s.Seal(binding(), "same")
	b, _ := s.Seal(binding(), "same")
	if a == b {
		t.Fatal("two seals of one state are equal")
	}
}

// TestRotation: a state sealed under the previous key opens while that key
// is held as the previous one, and not once it is dropped.
func TestRotation(t *testing.T) {
	cur, old := testKeys(t)
	tok, err := New(old, &Options{Now: fixed(epoch)}).Seal(binding(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := New(cur, &Options{Now: fixed(epoch)}).Open(tok, binding()); err != nil || got != "s" {
		t.Fatalf("with the previous key held: %q %v", got, err)
	}
	k3, _ := vault.NewKeys(bytes.Repeat([]byte{3}, 32), nil)
	if _, err := New(k3.Derive(Purpose), &Options{Now: fixed(epoch)}).Open(tok, binding()); !errors.Is(err, ErrSealed) {
		t.Fatalf("with another key: %v", err)
	}
}

// TestNotTheVaultKey: the vault's own key (not derived) does not open a
// state, nor does a key derived for another purpose.
func TestNotTheVaultKey(t *testing.T) {
	cur, _ := testKeys(t)
	tok, _ := New(cur, &Options{Now: fixed(epoch)}).Seal(binding(), "s")
	base, _ := vault.NewKeys(bytes.Repeat([]byte{1}, 32), nil)
	for name, k := range map[string]*vault.Keys{"vault key": base, "other purpose": base.Derive("something else")} {
		if _, err := New(k, &Options{Now: fixed(epoch)}).Open(tok, binding()); !errors.Is(err, ErrSealed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestOpenRefuses: one case per way a retry's state is wrong, each with
// its own error, none quoting the token or what it seals.
func TestOpenRefuses(t *testing.T) {
	cur, _ := testKeys(t)
	s := New(cur, &Options{Now: fixed(epoch), TTL: time.Minute})
	good, err := s.Seal(binding(), "secret-upstream-state")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(good, prefix))
	flip := func(i int) string {
		b := bytes.Clone(raw)
		b[i] ^= 1
		return prefix + base64.RawURLEncoding.EncodeToString(b)
	}
	// sealRaw seals plaintext as Seal would, to reach decode's checks.
	sealRaw := func(pt string) string {
		id, blob, err := cur.Seal(aad, []byte(pt))
		if err != nil {
			t.Fatal(err)
		}
		rid, _ := hex.DecodeString(id)
		return prefix + base64.RawURLEncoding.EncodeToString(append(rid, blob...))
	}
	bArgs := binding().Args
	digest := hex.EncodeToString(bArgs[:])
	other := func(f func(*Binding)) Binding { b := binding(); f(&b); return b }
	cases := []struct {
		name  string
		token string
		b     Binding
		now   time.Time
		want  error
	}{
		{"empty", "", binding(), epoch, ErrMalformed},
		{"raw upstream state", "secret-upstream-state", binding(), epoch, ErrMalformed},
		{"other prefix", "ghs2." + strings.TrimPrefix(good, prefix), binding(), epoch, ErrMalformed},
		{"prefix only", prefix, binding(), epoch, ErrMalformed},
		{"not base64url", prefix + "a+b/c", binding(), epoch, ErrMalformed},
		{"padded base64", good + "==", binding(), epoch, ErrMalformed},
		{"key id only", prefix + base64.RawURLEncoding.EncodeToString(raw[:keyIDLen]), binding(), epoch, ErrMalformed},
		{"too long", prefix + strings.Repeat("A", MaxToken), binding(), epoch, ErrMalformed},
		{"truncated", good[:len(good)-10], binding(), epoch, ErrSealed},
		{"blob only, no key id", prefix + base64.RawURLEncoding.EncodeToString(raw[keyIDLen:]), binding(), epoch, ErrSealed},
		{"unknown key id", flip(0), binding(), epoch, ErrSealed},
		{"format version", flip(keyIDLen), binding(), epoch, ErrSealed},
		{"nonce", flip(keyIDLen + 1), binding(), epoch, ErrSealed},
		{"ciphertext", flip(keyIDLen + 20), binding(), epoch, ErrSealed},
		{"tag", flip(len(raw) - 1), binding(), epoch, ErrSealed},
		{"sealed by the vault (another aad)", func() string {
			id, blob, _ := cur.Seal("connection", []byte(`{}`))
			rid, _ := hex.DecodeString(id)
			return prefix + base64.RawURLEncoding.EncodeToString(append(rid, blob...))
		}(), binding(), epoch, ErrSealed},
		{"seals no JSON", sealRaw("not json"), binding(), epoch, ErrMalformed},
		{"seals an array", sealRaw(`[1]`), binding(), epoch, ErrMalformed},
		{"seals trailing data", sealRaw(`{"v":1,"srv":"up","st":"","sub":"alice","m":"tools/call","n":"confirm","a":"` + digest + `","exp":99999999999} {}`), binding(), epoch, ErrMalformed},
		{"seals an unknown field", sealRaw(`{"v":1,"x":1}`), binding(), epoch, ErrMalformed},
		{"seals version 2", sealRaw(`{"v":2,"srv":"up","st":"","sub":"alice","m":"tools/call","n":"confirm","a":"` + digest + `","exp":99999999999}`), binding(), epoch, ErrMalformed},
		{"seals no server", sealRaw(`{"v":1,"st":"","sub":"alice","m":"tools/call","n":"confirm","a":"` + digest + `","exp":99999999999}`), binding(), epoch, ErrMalformed},
		{"seals no digest", sealRaw(`{"v":1,"srv":"up","st":"","sub":"alice","m":"tools/call","n":"confirm","a":"","exp":99999999999}`), binding(), epoch, ErrMalformed},
		{"seals no expiry", sealRaw(`{"v":1,"srv":"up","st":"","sub":"alice","m":"tools/call","n":"confirm","a":"` + digest + `"}`), binding(), epoch, ErrMalformed},
		{"seals a wrong type", sealRaw(`{"v":"1"}`), binding(), epoch, ErrMalformed},
		{"expired", good, binding(), epoch.Add(time.Minute), ErrExpired},
		{"long expired", good, binding(), epoch.Add(24 * time.Hour), ErrExpired},
		{"another subject", good, other(func(b *Binding) { b.Subject = "mallory" }), epoch, ErrOtherCaller},
		{"no subject", good, other(func(b *Binding) { b.Subject = "" }), epoch, ErrOtherCaller},
		{"another server", good, other(func(b *Binding) { b.Server = "up2" }), epoch, ErrOtherRequest},
		{"another tool", good, other(func(b *Binding) { b.Name = "delete_all" }), epoch, ErrOtherRequest},
		{"another method", good, other(func(b *Binding) { b.Method = "prompts/get" }), epoch, ErrOtherRequest},
		{"other arguments", good, other(func(b *Binding) { b.Args = Digest([]byte(`{"n":2}`)) }), epoch, ErrOtherRequest},
		{"no arguments", good, other(func(b *Binding) { b.Args = Digest(nil) }), epoch, ErrOtherRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(cur, &Options{Now: fixed(c.now), TTL: time.Minute})
			got, err := s.Open(c.token, c.b)
			if !errors.Is(err, c.want) || got != "" {
				t.Fatalf("Open = %q, %v; want %v", got, err, c.want)
			}
			msg := err.Error()
			if strings.Contains(msg, "secret-upstream-state") || len(c.token) > 8 && strings.Contains(msg, c.token[len(prefix):]) ||
				strings.Contains(msg, "alice") || strings.Contains(msg, "mallory") {
				t.Fatalf("the error quotes the token or what it holds: %s", msg)
			}
		})
	}
}

// TestDigest: one value digests alike however it is spaced or its keys
// ordered; another value, or none, differently.
func TestDigest(t *testing.T) {
	a := Digest([]byte(`{"b":[1, 2.50, "x"], "a":{"z":null,"y":true}}`))
	b := Digest([]byte("{\"a\":{\"y\":true,\"z\":null},\"b\":[1,2.50,\"x\"]}\n"))
	if a != b {
		t.Fatal("one value spaced and ordered otherwise digests otherwise")
	}
	if Digest([]byte(`{"b":[1,2.5,"x"],"a":{"z":null,"y":true}}`)) == a {
		t.Fatal("2.50 and 2.5 digest alike (numbers are kept as written)")
	}
	if Digest(nil) != Digest([]byte("null")) || Digest(nil) != Digest([]byte("  ")) {
		t.Fatal("no arguments digest otherwise than null")
	}
	if Digest(nil) == Digest([]byte("{}")) {
		t.Fatal("{} digests as none")
	}
	if Digest([]byte(`{"a":`)) == Digest([]byte(`{"a":}`)) {
		t.Fatal("two bad inputs digest alike")
	}
}

// FuzzOpen: whatever a caller sends as requestState, Open answers one of
// its errors (never a panic), and only a token it sealed opens.
func FuzzOpen(f *testing.F) {
	cur, _ := testKeys(f)
	s := New(cur, &Options{Now: fixed(epoch)})
	tok, err := s.Seal(binding(), "state-1")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tok)
	f.Add("")
	f.Add(prefix)
	f.Add(prefix + "AAAA")
	f.Fuzz(func(t *testing.T, token string) {
		got, err := s.Open(token, binding())
		if err == nil {
			// Only a token sealed under these keys for this binding opens:
			// the corpus's own, or one a future seal made.
			if got != "state-1" {
				t.Fatalf("a forged token opened: %q", got)
			}
			return
		}
		for _, e := range []error{ErrMalformed, ErrSealed, ErrExpired, ErrOtherCaller, ErrOtherRequest} {
			if errors.Is(err, e) {
				return
			}
		}
		t.Fatalf("an error of no kind: %v", err)
	})
}

// FuzzDecode: what a key opens is read strictly, never with a panic.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"v":1,"srv":"up","st":"s","sub":"alice","m":"tools/call","n":"confirm","a":"` + strings.Repeat("0", 64) + `","exp":1}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"v":1} x`))
	f.Fuzz(func(t *testing.T, pt []byte) {
		p, err := decode(pt)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("an error of another kind: %v", err)
			}
			return
		}
		if p.V != 1 || p.Server == "" || p.Method == "" || p.Name == "" || len(p.Args) != 64 || p.Expires <= 0 {
			t.Fatalf("decoded an incomplete payload: %+v", p)
		}
	})
}
