package store_test

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/store"
)

// TestKeyHashFraming: lists that would join to the same bytes (a moved
// separator, an empty part, a NUL) hash differently.
func TestKeyHashFraming(t *testing.T) {
	lists := [][]string{
		{}, {""}, {"", ""}, {"ab"}, {"a", "b"}, {"ab", ""}, {"", "ab"},
		{"a\x00", "b"}, {"a", "\x00b"}, {"a\x00b"}, {"a/1:b"}, {"a", "1:b"},
	}
	seen := map[[sha256.Size]byte][]string{}
	for _, l := range lists {
		h := store.KeyHash(l...)
		if prev, dup := seen[h]; dup {
			t.Fatalf("KeyHash(%q) == KeyHash(%q)", l, prev)
		}
		seen[h] = l
	}
}

// TestKeyHashKnownAnswer pins the derivation: the gateway's journal keys
// and the upstream's idempotency keys are built from it, so a change would
// orphan every stored record.
func TestKeyHashKnownAnswer(t *testing.T) {
	h := sha256.New()
	h.Write([]byte{0, 0, 0, 0, 0, 0, 0, 2, 'f', 'w'})
	h.Write([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	h.Write([]byte{0, 0, 0, 0, 0, 0, 0, 3, 'r', 0, 'x'})
	want := h.Sum(nil)
	got := store.KeyHash("fw", "", "r\x00x")
	if hex.EncodeToString(got[:]) != hex.EncodeToString(want) {
		t.Fatalf("KeyHash = %x, want %x", got, want)
	}
	if k := store.Key("fw", "", "r\x00x"); k != "fw_"+hex.EncodeToString(want[:16]) {
		t.Fatalf("Key = %q", k)
	}
}

// TestKeyIsShortAndPlain: whatever the parts hold, a key is its prefix, "_"
// and 32 hex digits.
func TestKeyIsShortAndPlain(t *testing.T) {
	for _, parts := range [][]string{
		nil, {"\x00"}, {strings.Repeat("x", 1<<20)}, {"\xff\xfe"}, {"ラン🚀", "\u202e"},
	} {
		k := store.Key("rl", parts...)
		if len(k) != len("rl_")+32 || !strings.HasPrefix(k, "rl_") {
			t.Fatalf("Key(%q...) = %q", parts, k)
		}
		if _, err := hex.DecodeString(k[3:]); err != nil {
			t.Fatalf("Key = %q: %v", k, err)
		}
	}
	// The prefix is hashed: another prefix with the same parts is another key.
	if store.Key("a", "x")[2:] == store.Key("b", "x")[2:] {
		t.Fatal("the prefix does not take part in the hash")
	}
}

// FuzzKeyHash checks that KeyHash is injective on two-part lists: equal
// hashes only for equal lists.
func FuzzKeyHash(f *testing.F) {
	for _, s := range [][4]string{
		{"a", "b", "ab", ""}, {"a\x00", "b", "a", "\x00b"}, {"", "", "", ""}, {"x", "1:y", "x/1", "y"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		same := store.KeyHash(a, b) == store.KeyHash(c, d)
		if same != slices.Equal([]string{a, b}, []string{c, d}) {
			t.Fatalf("KeyHash(%q, %q) vs KeyHash(%q, %q): equal hashes = %v", a, b, c, d, same)
		}
		if store.KeyHash(a+b) == store.KeyHash(a, b) {
			t.Fatalf("KeyHash(%q) == KeyHash(%q, %q)", a+b, a, b)
		}
	})
}
