package main

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"server", []string{"server"}},
		{"  /bin/srv  -a   b\t-c\n", []string{"/bin/srv", "-a", "b", "-c"}},
		{`srv 'a b' "c d"`, []string{"srv", "a b", "c d"}},
		{`srv 'it''s' x`, []string{"srv", "its", "x"}},
		{`srv "say \"hi\"" 'back\slash'`, []string{"srv", `say "hi"`, `back\slash`}},
		{`srv "a\b" a\ b`, []string{"srv", "ab", "a b"}},
		{`srv '' ""`, []string{"srv", "", ""}},
		{`srv $HOME *`, []string{"srv", "$HOME", "*"}}, // no expansion
		{`a"b"'c'd`, []string{"abcd"}},
	}
	for _, tt := range tests {
		got, err := splitWords(tt.in)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestSplitWordsErrors(t *testing.T) {
	for _, in := range []string{
		"",           // empty
		"   \t\n",    // blanks only
		`srv 'open`,  // unterminated single quote
		`srv "open`,  // unterminated double quote
		`srv "a\"`,   // escaped closing quote leaves it open
		`srv trail\`, // lone trailing backslash
	} {
		if got, err := splitWords(in); err == nil {
			t.Errorf("splitWords(%q) = %q, want an error", in, got)
		}
	}
	if _, err := splitWords(" "); !errors.Is(err, errEmptyCommand) {
		t.Errorf("blank command: %v, want errEmptyCommand", err)
	}
}

func FuzzSplitWords(f *testing.F) {
	for _, s := range []string{"srv -a b", `a 'b c' "d\"e"`, `x\ y`, `'`, `"`, `\`, ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := splitWords(s)
		if err != nil {
			return
		}
		if len(words) == 0 {
			t.Fatal("no words and no error")
		}
		// Quoting each word back must give the same words.
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		again, err := splitWords(strings.Join(quoted, " "))
		if err != nil || !slices.Equal(again, words) {
			if utf8.ValidString(s) {
				t.Fatalf("round trip of %q: %q, %v; want %q", s, again, err, words)
			}
		}
	})
}

func TestParseHeader(t *testing.T) {
	tests := []struct{ in, name, value string }{
		{"Authorization: Bearer x", "Authorization", "Bearer x"},
		{"x-api-key:abc", "X-Api-Key", "abc"},
		{"X-Empty:", "X-Empty", ""},
		{"X-Colon: a:b:c", "X-Colon", "a:b:c"},
		{"X-Tab:\tv\t", "X-Tab", "v"},
	}
	for _, tt := range tests {
		n, v, err := parseHeader(tt.in)
		if err != nil || n != tt.name || v != tt.value {
			t.Errorf("parseHeader(%q) = %q, %q, %v; want %q, %q", tt.in, n, v, err, tt.name, tt.value)
		}
	}
}

func TestParseHeaderErrors(t *testing.T) {
	for _, in := range []string{
		"Authorization Bearer x",  // no colon
		": value",                 // empty name
		"Bad Name: v",             // space in name
		"Bad\tName: v",            // tab in name
		"Bäd: v",                  // non-ASCII name
		"X-A: v\r\nX-Injected: 1", // CRLF in value: header injection
		"X-A: v\nX-Injected: 1",   // LF in value
		"X-A: nul\x00byte",        // NUL in value
		"X-A: del\x7f",            // DEL in value
		"X-A(: v",                 // separator in name
	} {
		if n, v, err := parseHeader(in); err == nil {
			t.Errorf("parseHeader(%q) = %q, %q; want an error", in, n, v)
		}
	}
	var h headerList
	if err := h.Set("no colon"); err == nil || len(h) != 0 {
		t.Errorf("headerList.Set accepted a bad header: %v %q", err, h)
	}
}

func FuzzParseHeader(f *testing.F) {
	for _, s := range []string{"Authorization: Bearer x", "a:b", ":", "X: a\r\nY: b", "Bad Name: v"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, value, err := parseHeader(s)
		if err != nil {
			return
		}
		if name == "" || strings.ContainsAny(value, "\r\n\x00") || strings.ContainsAny(name, " \t\r\n:") {
			t.Fatalf("parseHeader(%q) accepted %q: %q", s, name, value)
		}
	})
}

func TestBuildArgs(t *testing.T) {
	b, expect, err := buildArgs(`{"n": 1}`, "message", 5, true)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["n"] != float64(1) || got["message"] != "abcde" || expect != "abcde" {
		t.Errorf("args %s, expect %q", b, expect)
	}
	if b, _, err := buildArgs("", "m", 0, false); err != nil || string(b) != "{}" {
		t.Errorf("no args: %s, %v; want {}", b, err)
	}
	if p := makePayload(16384); len(p) != 16384 {
		t.Errorf("payload of %d bytes", len(p))
	} else if q, _ := json.Marshal(p); len(q) != 16384+2 {
		t.Errorf("payload encodes to %d bytes, want no escapes", len(q))
	}
	for _, tc := range []struct {
		args   string
		field  string
		n      int
		verify bool
	}{
		{`[1,2]`, "m", 0, false},               // not an object
		{`null`, "m", 0, false},                // null
		{`{"a":`, "m", 0, false},               // truncated
		{`"str"`, "m", 0, false},               // a string
		{`{}`, "message", 0, true},             // verify with nothing to verify
		{`{"message": 3}`, "message", 0, true}, // verify a non-string
	} {
		if b, _, err := buildArgs(tc.args, tc.field, tc.n, tc.verify); err == nil {
			t.Errorf("buildArgs(%q, verify=%v) = %s, want an error", tc.args, tc.verify, b)
		}
	}
}

func TestCheckURL(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:8080/mcp", "http://localhost/mcp", "https://[::1]:9/x", "http://127.3.4.5/"} {
		if err := checkURL(ok, false); err != nil {
			t.Errorf("checkURL(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{
		"ftp://127.0.0.1/",          // scheme
		"127.0.0.1:8080/mcp",        // no scheme
		"http:///mcp",               // no host
		"http://10.0.0.1/mcp",       // private address
		"http://example.com/mcp",    // a name that is not localhost
		"http://localhost.evil/x",   // nor this
		"http://[::ffff:10.0.0.1]/", // mapped non-loopback
		"http://%zz/",               // unparsable
	} {
		if err := checkURL(bad, false); err == nil {
			t.Errorf("checkURL(%q) accepted", bad)
		}
	}
	if err := checkURL("http://10.0.0.1/mcp", true); err != nil {
		t.Errorf("-allow-remote: %v", err)
	}
}

func TestLoopbackOnlyDialer(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:80", "[::1]:443", "127.9.9.9:1"} {
		if err := loopbackOnly("tcp", ok, nil); err != nil {
			t.Errorf("loopbackOnly(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"10.0.0.1:80", "192.168.1.1:80", "[2001:db8::1]:80", "0.0.0.0:80", "localhost:80", "noport"} {
		if err := loopbackOnly("tcp", bad, nil); err == nil {
			t.Errorf("loopbackOnly(%q) allowed", bad)
		}
	}
}

func TestParseFlagsErrors(t *testing.T) {
	for _, args := range [][]string{
		{}, // no target
		{"-url", "http://127.0.0.1/", "-cmd", "x"}, // both
		{"-url", "http://10.1.1.1/"},               // remote
		{"-cmd", "'open"},                          // bad command
		{"-cmd", "x", "-header", "A: b"},           // header with stdio
		{"-url", "http://127.0.0.1/", "-sessions", "0"},
		{"-url", "http://127.0.0.1/", "-duration", "0s"},
		{"-url", "http://127.0.0.1/", "-payload", "-1"},
		{"-url", "http://127.0.0.1/", "-idle", "3", "-shared"},
		{"-url", "http://127.0.0.1/", "-tool", ""},
		{"-url", "http://127.0.0.1/", "-header", "bad header"},
		{"-url", "http://127.0.0.1/", "extra"},
		{"-report"},
	} {
		var sb strings.Builder
		if cfg, err := parseFlags(args, &sb); err == nil {
			t.Errorf("parseFlags(%q) = %+v, want an error", args, cfg)
		}
	}
}
