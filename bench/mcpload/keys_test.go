package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseKeys(t *testing.T) {
	for in, want := range map[string]keySpec{
		"unique":      {on: true},
		"pool:1":      {on: true, pool: 1},
		"pool:16":     {on: true, pool: 16},
		"pool:100000": {on: true, pool: maxPool},
	} {
		got, err := parseKeys(in)
		if err != nil || got != want {
			t.Errorf("parseKeys(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if got.String() != in {
			t.Errorf("parseKeys(%q).String() = %q", in, got.String())
		}
	}
}

func TestParseKeysErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                                   "want",           // empty
		"Unique":                             "want",           // case
		"unique ":                            "want",           // trailing blank
		"random":                             "want",           // unknown mode
		"pool":                               "want",           // no colon
		"pool=4":                             "want",           // wrong separator
		"pool:":                              "no pool size",   // no number
		"pool:0":                             "at least 1",     // zero
		"pool:007":                           "leading zeros",  // leading zero
		"pool:-1":                            "not a decimal",  // sign
		"pool:+3":                            "not a decimal",  // sign
		"pool: 3":                            "not a decimal",  // blank
		"pool:3x":                            "not a decimal",  // trailing junk
		"pool:1e3":                           "not a decimal",  // exponent
		"pool:3:4":                           "not a decimal",  // two numbers
		"pool:100001":                        "at most 100000", // over the bound
		"pool:99999999999999999":             "at most 100000", // overflows int64 too
		"pool:٣":                             "not a decimal",  // a non-ASCII digit
		"unique,pool:3":                      "want",           // a list
		"pool:3 ":                            "not a decimal",  // trailing blank
		"POOL:3":                             "want",           // case
		"pool:0x10":                          "not a decimal",  // hex
		"pool:00":                            "leading zeros",  // zeros
		"pool:10000000000000000000000000000": "at most",        // far over
	} {
		got, err := parseKeys(in)
		if err == nil {
			t.Errorf("parseKeys(%q) = %+v, want an error", in, got)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("parseKeys(%q): %v; want it to say %q", in, err, want)
		}
		if want == "want" && !errors.Is(err, errKeysSyntax) {
			t.Errorf("parseKeys(%q): %v is not errKeysSyntax", in, err)
		}
	}
}

func FuzzParseKeys(f *testing.F) {
	for _, s := range []string{"unique", "pool:16", "pool:", "pool:0", "pool:-1", "pool:100001", "pool:01", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := parseKeys(s)
		if err != nil {
			if k != (keySpec{}) {
				t.Fatalf("parseKeys(%q) failed but returned %+v", s, k)
			}
			return
		}
		if !k.on || k.pool < 0 || k.pool > maxPool {
			t.Fatalf("parseKeys(%q) = %+v", s, k)
		}
		if k.String() != s {
			t.Fatalf("parseKeys(%q) prints back as %q", s, k.String())
		}
	})
}

func TestParseToken(t *testing.T) {
	for in, want := range map[string]string{
		"abc":                       "abc",
		"abc\n":                     "abc",
		"  a.b-c_d~e+f/g==\r\n":     "a.b-c_d~e+f/g==",
		"\teyJh.eyJz.c2ln\n\n":      "eyJh.eyJz.c2ln",
		strings.Repeat("A", 16<<10): strings.Repeat("A", 16<<10),
	} {
		got, err := parseToken([]byte(in))
		if err != nil || got != want {
			t.Errorf("parseToken(%.40q) = %.40q, %v; want %.40q", in, got, err, want)
		}
	}
}

func TestParseTokenErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                                "empty",
		" \n\t\r\n":                       "empty",
		"ab cd":                           "byte 3",          // a blank inside
		"ab\ncd":                          "more than one",   // two lines
		"ab\r\ncd":                        "more than one",   // two lines, CRLF
		"=abc":                            "begins with '='", // padding first
		"ab=c":                            "follows '='",     // padding inside
		"ab==\ncd":                        "follows '='",     // a line after padding
		"tök":                             "byte 2",          // non-ASCII
		"a\x00b":                          "byte 2",          // NUL
		"a\x7fb":                          "byte 2",          // DEL
		`a"b`:                             "byte 2",          // a quote
		"a,b":                             "byte 2",          // a comma
		strings.Repeat("A", 64<<10+1):     "more than",       // too large
		"Authorization: Bearer abc":       "byte 14",         // a header, not a token
		"abc\x1b[31m":                     "byte 4",          // an escape
		"a\\b":                            "byte 2",          // a backslash
		"\xff\xfe":                        "byte 1",          // not UTF-8
		"ab\tcd":                          "byte 3",          // a tab inside
		"tok;rm -rf":                      "byte 4",          // shell
		"abc\u2028":                       "byte 4",          // a Unicode line separator
		"a b\n":                           "byte 2",          // a blank then a line end
		"abc\x0bdef":                      "byte 4",          // a vertical tab
		"=":                               "begins with '='", // padding only
		"ab=\x00":                         "follows '='",     // junk after padding
		strings.Repeat("a", 64<<10) + "=": "more than",       // padding past the bound
	} {
		got, err := parseToken([]byte(in))
		if err == nil {
			t.Errorf("parseToken(%.40q) = %.40q, want an error", in, got)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("parseToken(%.40q): %v; want it to say %q", in, err, want)
		}
		if len(in) > 3 && strings.Contains(err.Error(), in) {
			t.Errorf("parseToken(%.40q): the error %q repeats the file", in, err)
		}
	}
}

func FuzzParseToken(f *testing.F) {
	for _, s := range []string{"abc\n", "a.b-c_d~e+f/g==", "", "ab cd", "ab\ncd", "=x", "a=b", "tök"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tok, err := parseToken(b)
		if err != nil {
			return
		}
		if tok == "" || len(tok) > maxTokenFile {
			t.Fatalf("parseToken(%q) = %q", b, tok)
		}
		body := strings.TrimRight(tok, "=")
		for i := 0; i < len(body); i++ {
			c := body[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/", c) >= 0) {
				t.Fatalf("parseToken(%q) accepted byte %q", b, c)
			}
		}
		if body == "" {
			t.Fatalf("parseToken(%q) accepted padding only", b)
		}
		if again, err := parseToken([]byte(tok)); err != nil || again != tok {
			t.Fatalf("parseToken(%q) = %q, but that parses as %q, %v", b, tok, again, err)
		}
	})
}

// TestPoolArgs: each key of a pool has its own arguments, the same every
// time, of the -payload size, and -verify expects its own payload back.
func TestPoolArgs(t *testing.T) {
	cfg, err := parseFlags([]string{"-url", "http://127.0.0.1/", "-payload", "64", "-args", `{"n":1}`, "-verify", "-keys", "pool:12"}, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.PoolArgs) != 12 || len(cfg.PoolExpects) != 12 {
		t.Fatalf("%d args, %d expects for a pool of 12", len(cfg.PoolArgs), len(cfg.PoolExpects))
	}
	seen := map[string]bool{}
	for i, a := range cfg.PoolArgs {
		var obj struct {
			N       int    `json:"n"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(a, &obj); err != nil {
			t.Fatal(err)
		}
		if obj.N != 1 || len(obj.Message) != 64 || obj.Message != cfg.PoolExpects[i] ||
			!strings.HasPrefix(obj.Message, "k"+strconv.Itoa(i)+"-") || seen[obj.Message] {
			t.Errorf("key %d: %s, expect %q", i, a, cfg.PoolExpects[i])
		}
		seen[obj.Message] = true
	}
	k := &keyer{spec: cfg.Keys, prefix: "p-", args: cfg.PoolArgs, expects: cfg.PoolExpects}
	for n := range 30 {
		key, args, expect, repeat := k.next(cfg)
		i := n % 12
		if key != "p-p"+strconv.Itoa(i) || string(args) != string(cfg.PoolArgs[i]) || expect != cfg.PoolExpects[i] || repeat != (n >= 12) {
			t.Fatalf("call %d: %q %s %q %v", n, key, args, expect, repeat)
		}
	}
	// A payload shorter than the key's tag keeps its size.
	cfg, err = parseFlags([]string{"-url", "http://127.0.0.1/", "-payload", "2", "-verify", "-keys", "pool:20"}, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.PoolExpects[15]; got != "k1" {
		t.Errorf("2-byte payload of key 15: %q", got)
	}
	// Without -payload every key has the -args.
	cfg, err = parseFlags([]string{"-url", "http://127.0.0.1/", "-args", `{"message":"hi"}`, "-verify", "-keys", "pool:2"}, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if string(cfg.PoolArgs[1]) != `{"message":"hi"}` || cfg.PoolExpects[1] != "hi" {
		t.Errorf("args %s expect %q", cfg.PoolArgs[1], cfg.PoolExpects[1])
	}
}

// TestParseFlagsNewErrors: every wrong use of -keys, -token-file and
// -medians is a usage error naming the flag.
func TestParseFlagsNewErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(good, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("two\nlines\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	u := "http://127.0.0.1/"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-url", u, "-keys", "pool:0"}, "-keys"},
		{[]string{"-url", u, "-keys", "sometimes"}, "-keys"},
		{[]string{"-url", u, "-keys", "unique", "-idle", "3"}, "-keys applies to load runs"},
		{[]string{"-url", u, "-keys", "pool:100000", "-payload", "16384"}, "MiB of arguments"},
		{[]string{"-url", u, "-token-file", filepath.Join(dir, "missing")}, "-token-file"},
		{[]string{"-url", u, "-token-file", dir}, "-token-file"},
		{[]string{"-url", u, "-token-file", bad}, "more than one line"},
		{[]string{"-url", u, "-token-file", good, "-header", "Authorization: Bearer x"}, "exclusive"},
		{[]string{"-url", u, "-token-file", good, "-header", "authorization: Bearer x"}, "exclusive"},
		{[]string{"-cmd", "srv", "-token-file", good}, "-url only"},
		{[]string{"-url", u, "-medians"}, "-medians applies to -report"},
	} {
		cfg, err := parseFlags(c.args, &strings.Builder{})
		var ue usageError
		if err == nil || !errors.As(err, &ue) {
			t.Errorf("parseFlags(%q) = %+v, %v; want a usage error", c.args, cfg, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("parseFlags(%q): %v; want it to say %q", c.args, err, c.want)
		}
	}
	cfg, err := parseFlags([]string{"-url", u, "-token-file", good, "-header", "X-Other: 1"}, &strings.Builder{})
	if err != nil || cfg.Headers.Get("Authorization") != "Bearer tok" || cfg.Headers.Get("X-Other") != "1" {
		t.Errorf("token file beside another header: %v, %v", cfg, err)
	}
}
