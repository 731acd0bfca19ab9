package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/store"
)

// canonicalCases are texts isCanonical must accept (true) or leave to
// pin.Canonical (false), each for its reason.
var canonicalCases = map[string]bool{
	`{}`:                                   true,
	`{"message":"hello"}`:                  true,
	`{"a":1,"b":[true,false,null],"c":{}}`: true,
	`{"a":{"b":{"c":[[],{}]}}}`:            true,
	`[1,-2,0,123456789012345,"x"]`:         true,
	`"just a string"`:                      true,
	`{"A":1,"B":2,"a":3}`:                  true,  // byte order: upper case first
	`{"b":1,"a":2}`:                        false, // out of order
	`{"a":1,"a":2}`:                        false, // given twice: pin refuses it, digested raw
	`{"a": 1}`:                             false, // a blank
	` {}`:                                  false,
	`{}` + "\n":                            false,
	`{"a":"\u0041"}`:                       false, // an escape
	`{"a":"\n"}`:                           false,
	`{"a":"é"}`:                            false, // beyond ASCII
	`{"a":1.5}`:                            false,
	`{"a":1e3}`:                            false,
	`{"a":-0}`:                             false,
	`{"a":01}`:                             false,
	`{"a":1234567890123456}`:               false, // 16 digits
	`{"a":-}`:                              false,
	`{"a":tru}`:                            false,
	`{"a":truex}`:                          false,
	`{"a":1,}`:                             false,
	`[1,]`:                                 false,
	`{"a"}`:                                false,
	`{"a":1}{}`:                            false,
	`{`:                                    false,
	`"open`:                                false,
	``:                                     false,
	strings.Repeat("[", 64) + strings.Repeat("]", 64): true,
	strings.Repeat("[", 65) + strings.Repeat("]", 65): false, // deeper than maxCanonicalDepth
}

// TestIsCanonical: every text accepted is one pin.Canonical returns
// unchanged, and the common shapes are accepted.
func TestIsCanonical(t *testing.T) {
	for text, want := range canonicalCases {
		if got := isCanonical([]byte(text)); got != want {
			t.Errorf("isCanonical(%q) = %v, want %v", text, got, want)
		}
		if want {
			c, err := pin.Canonical([]byte(text))
			if err != nil || !bytes.Equal(c, []byte(text)) {
				t.Errorf("%q accepted, but pin.Canonical gives %q, %v", text, c, err)
			}
		}
	}
}

// TestArgsDigestFastPath: the digest of canonical arguments is the
// SHA-256 of their bytes, and of others that of their canonical form, as
// before the fast path (the digests recorded stay comparable).
func TestArgsDigestFastPath(t *testing.T) {
	for _, tc := range []struct{ args, canonical string }{
		{`{"message":"hello"}`, `{"message":"hello"}`},
		{`{"message": "hello"}`, `{"message":"hello"}`},
		{`{"b":1,"a":2.50}`, `{"a":2.5,"b":1}`},
		{``, `{}`},
	} {
		sum := sha256.Sum256([]byte(tc.canonical))
		if got, want := ArgsDigest([]byte(tc.args)), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("ArgsDigest(%q) = %s, want %s", tc.args, got, want)
		}
	}
	raw := `{"a":1,"a":2}`
	sum := sha256.Sum256([]byte(raw))
	if got := ArgsDigest([]byte(raw)); got != "raw:"+hex.EncodeToString(sum[:]) {
		t.Errorf("ArgsDigest of a duplicate key = %s, want the raw digest", got)
	}
}

// FuzzIsCanonical: a text isCanonical accepts is one pin.Canonical accepts
// and returns unchanged, so ArgsDigest's fast path gives the digest the
// slow one would. Its seeds are canonicalCases and testdata/fuzz.
func FuzzIsCanonical(f *testing.F) {
	for text := range canonicalCases {
		f.Add([]byte(text))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !isCanonical(b) {
			return
		}
		c, err := pin.Canonical(b)
		if err != nil {
			t.Fatalf("isCanonical(%q), but pin.Canonical refuses it: %v", b, err)
		}
		if !bytes.Equal(c, b) {
			t.Fatalf("isCanonical(%q), but pin.Canonical gives %q", b, c)
		}
	})
}

// TestHashGolden: the digests and hashes of a fixed entry, as the code
// before issue 36's second pass computed them (its canonicalization of
// every argument, its heap buffers): chains written before verify after.
func TestHashGolden(t *testing.T) {
	e := store.AuditEntry{Chain: "gw/a", Seq: 42, At: time.UnixMilli(1764936000123).UTC(), Kind: KindCall, Subject: "alice", Server: "bank", Tool: "pay",
		ArgsDigest: ArgsDigest([]byte(`{"amount":120,"to":"acct-42"}`)), Outcome: "ok", Duration: 1500 * time.Microsecond, Instance: "a",
		Detail: []byte(`{"replayed":true}`), PrevHash: ArgsDigest([]byte(`{"b":1,"a":2.50}`))}
	long := e // a detail past the hash's stack buffer
	long.Detail = []byte(`{"note":"` + strings.Repeat("0", 599) + `7"}`)
	for what, got := range map[string][2]string{
		"canonical arguments' digest":     {e.ArgsDigest, "be164e07fd4bb3f898a41004873a79586906f64cb73a5ba33b540190c8311d7a"},
		"non-canonical arguments' digest": {e.PrevHash, "f616bb1c00f0fedb4ec43354aa82ceb3aa0e104b98196ea4e5eea3edf51303cc"},
		"entry's hash":                    {Hash(e), "5bf64d76bca692cff463f0152dac0031baee364efed9d18d67b3d6eb47d73926"},
		"hash with a long detail":         {Hash(long), "aa411cc3907e62dca9ee348788cd9f0975e332c60ac4cdf49caa9814f1ae8d95"},
	} {
		if got[0] != got[1] {
			t.Errorf("%s = %s, want %s", what, got[0], got[1])
		}
	}
}
