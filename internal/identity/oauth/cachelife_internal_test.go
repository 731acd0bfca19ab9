package oauth

import (
	"testing"
	"time"
)

func TestCacheLife(t *testing.T) {
	const max = time.Hour
	for _, c := range []struct {
		header string
		want   time.Duration
	}{
		{"", max},
		{"max-age=120", 120 * time.Second},
		{"public, max-age=300, must-revalidate", 300 * time.Second},
		{"MAX-AGE = 60", 60 * time.Second},
		{`max-age="90"`, 90 * time.Second},
		{"max-age=86400", max},                // bounded
		{"max-age=99999999999999999999", max}, // overflows: ignored
		{"max-age=-5", max},                   // negative: ignored
		{"max-age=abc", max},                  // not a number: ignored
		{"max-age", max},                      // no value: ignored
		{"max-age=", max},
		{"no-store", 0},
		{"max-age=60, no-cache", 0},
		{",,,", max},
		{"max-age=0", 0},
	} {
		if got := cacheLife(c.header, max); got != c.want {
			t.Errorf("cacheLife(%q) = %v, want %v", c.header, got, c.want)
		}
	}
}

func FuzzCacheLife(f *testing.F) {
	for _, s := range []string{"", "max-age=60", "no-store", "public, max-age=3600", "max-age=-1", `max-age="9"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got := cacheLife(s, time.Hour); got < 0 || got > time.Hour {
			t.Fatalf("cacheLife(%q) = %v, outside [0, 1h]", s, got)
		}
	})
}

func TestParseKeySetRefuses(t *testing.T) {
	for name, body := range map[string]string{
		"not JSON":             "nope",
		"not an object":        "[]",
		"keys not an array":    `{"keys":{}}`,
		"no keys":              `{"keys":[]}`,
		"only a symmetric key": `{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"h"}]}`,
		"only an encryption key": `{"keys":[{"kty":"EC","crv":"P-256","use":"enc",` +
			`"x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}`,
		"only a P-384 key": `{"keys":[{"kty":"EC","crv":"P-384",` +
			`"x":"iA7lWQLzVrKGEFjfGMfMHfTEZ2KnLiKU7JuNT3E7ygsfE7ygsfE7ygsfE7ygsfE7","y":"x"}]}`,
		"only a key of an alg not allowed": `{"keys":[{"kty":"EC","crv":"P-256","alg":"ES384",` +
			`"x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}`,
	} {
		if _, _, err := parseKeySet([]byte(body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A usable key beside unusable ones is kept; the others are named.
	set, skipped, err := parseKeySet([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"},{"kty":"EC","crv":"P-256","kid":"e",` +
		`"x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}`))
	if err != nil || len(set.all) != 1 || len(set.byKID["e"]) != 1 || len(skipped) != 1 {
		t.Fatalf("set %+v, skipped %q, err %v", set, skipped, err)
	}
}
