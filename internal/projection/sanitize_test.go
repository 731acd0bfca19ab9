package projection

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestSanitize(t *testing.T) {
	tests := []struct{ name, in, want string }{
		// Attacks a hostile server would put in a description.
		{"bidi override", "Transfer \u202Eevil", "Transfer evil"},
		{"bidi isolates and marks", "a\u2066b\u2067c\u2068d\u2069e\u200Ef\u200Fg\u061Ch\u202Ai\u202Bj\u202Ck\u202Dl", "abcdefghijkl"},
		{"zero-width joiners hide a word", "safe\u200Bto\u200Cign\u200Dore\u2060previous\uFEFF", "safetoignoreprevious"},
		{"mongolian vowel separator", "a\u180Eb", "ab"},
		{"ansi colour", "\x1b[31mred\x1b[0m text", "red text"},
		{"ansi long params", "\x1b[38;5;196mX", "X"},
		{"lone escape", "a\x1bcb", "acb"},
		{"unterminated csi keeps text", "a\x1b[31", "a[31"},
		{"NUL", "a\x00b", "ab"},
		{"C0, DEL and C1", "a\x01\x07\x08\x0b\x0c\x0d\x7f\u0085\u009bb", "ab"},
		{"tab and newline kept", "a\tb\nc", "a\tb\nc"},
		{"line and paragraph separators", "a\u2028b\u2029c", "a\nb\nc"},
		{"tag characters (ASCII smuggling)", "hi\U000E0001\U000E0069\U000E0067\U000E006E\U000E007F", "hi"},
		{"private use", "a\uE000b\U000F0000c", "abc"},
		{"soft hyphen and default ignorables", "a\u00ADb\u034Fc\u3164d\uFFA0e\u115Ff\u2065g", "abcdefg"},
		{"invalid utf-8 dropped", "a\xffb\xc3", "ab"},
		{"variation selector run reduced to one", "\u2764\uFE0F\uFE0F\U000E0100\U000E0101x", "\u2764\uFE0Fx"},
		{"leading variation selector dropped", "\uFE0Fa", "a"},
		{"selector after newline dropped", "a\n\uFE0Fb", "a\nb"},
		{"selector binds across stripped char", "a\u200B\uFE0F", "a\uFE0F"},
		// Text that must pass unchanged.
		{"ascii", "Transfer money between accounts.", "Transfer money between accounts."},
		{"latin accents", "Crée un café à Zürich", "Crée un café à Zürich"},
		{"CJK", "検索ツール：文書を検索します", "検索ツール：文書を検索します"},
		{"arabic and hebrew letters", "مرحبا שלום", "مرحبا שלום"},
		{"devanagari with combining marks", "नमस्ते", "नमस्ते"},
		{"emoji", "Send 💸 now 🚀 ❤️", "Send 💸 now 🚀 ❤️"},
		{"empty", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Sanitize(tc.in)
			if got != tc.want {
				t.Errorf("Sanitize(%+q) = %+q, want %+q", tc.in, got, tc.want)
			}
			checkSanitized(t, tc.in, got)
		})
	}
}

func TestSanitizeASCIINoAlloc(t *testing.T) {
	s := "plain description\twith tab\nand newline"
	if n := testing.AllocsPerRun(100, func() { _ = Sanitize(s) }); n != 0 {
		t.Fatalf("Sanitize allocated %v times on clean ASCII", n)
	}
}

func isVS(r rune) bool { return unicode.Is(unicode.Variation_Selector, r) }

// checkSanitized asserts the documented output properties independently of
// the implementation's structure.
func checkSanitized(t *testing.T, in, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("Sanitize(%+q) = %+q: invalid UTF-8", in, out)
	}
	prev := rune(-1)
	for _, r := range out {
		switch {
		case r == '\t' || r == '\n':
		case r < 0x20 || r >= 0x7f && r <= 0x9f:
			t.Fatalf("Sanitize(%+q) = %+q keeps control %U", in, out, r)
		case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Co, r),
			unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r), r == '\u2028', r == '\u2029':
			t.Fatalf("Sanitize(%+q) = %+q keeps %U", in, out, r)
		case isVS(r) && (prev == -1 || prev == '\t' || prev == '\n' || isVS(prev)):
			t.Fatalf("Sanitize(%+q) = %+q keeps a variation selector %U after %U", in, out, r, prev)
		}
		prev = r
	}
	if again := Sanitize(out); again != out {
		t.Fatalf("not idempotent: %+q -> %+q -> %+q", in, out, again)
	}
}

func FuzzSanitize(f *testing.F) {
	f.Add("Transfer \u202Eevil")
	f.Add("\x1b[31mred\x1b[0m")
	f.Add("a\u200Bb\u200Dc\uFEFF")
	f.Add("Send 💸 ❤️\uFE0F\uFE0F")
	f.Fuzz(func(t *testing.T, s string) {
		out := Sanitize(s)
		checkSanitized(t, s, out)
		if len(out) > len(s)+strings.Count(s, "\u2028")+strings.Count(s, "\u2029") {
			t.Fatalf("output longer than input: %+q -> %+q", s, out)
		}
	})
}

func TestSanitizeSchema(t *testing.T) {
	in := map[string]any{
		"type":        "object",
		"title":       "T\u202Eitle",
		"description": "top\u200B",
		"properties": map[string]any{
			"to\u200B": map[string]any{"type": "string", "description": "IBAN\x1b[31m", "enum": []any{"a\u200Bb"}},
			"list":     map[string]any{"type": "array", "items": []any{map[string]any{"description": "deep\u2066"}}},
		},
	}
	before := mustJSON(t, in)
	got := mustJSON(t, SanitizeSchema(in))
	want := `{"description":"top","properties":{"list":{"items":[{"description":"deep"}],"type":"array"},` +
		"\"to\u200b\":{\"description\":\"IBAN\",\"enum\":[\"a\u200bb\"],\"type\":\"string\"}},\"title\":\"Title\",\"type\":\"object\"}"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if mustJSON(t, in) != before {
		t.Errorf("SanitizeSchema mutated its input")
	}
	if SanitizeSchema(nil) != nil {
		t.Errorf("nil schema")
	}
}

// schemaStruct is a schema the way a Go value may hold one: not a map.
type schemaStruct struct {
	Type        string         `json:"type"`
	Description string         `json:"description,omitempty"`
	Properties  map[string]any `json:"properties,omitempty"`
}

func TestSchemaMap(t *testing.T) {
	m := map[string]any{"type": "object"}
	if got := SchemaMap(m); got == nil || reflect.ValueOf(got).Pointer() != reflect.ValueOf(m).Pointer() {
		t.Errorf("a map is returned as is, got %v", got)
	}
	if got := SchemaMap(nil); got != nil {
		t.Errorf("nil: %v", got)
	}
	got := SchemaMap(schemaStruct{Type: "object", Properties: map[string]any{"a": map[string]any{"type": "number"}}})
	if mustJSON(t, got) != `{"properties":{"a":{"type":"number"}},"type":"object"}` {
		t.Errorf("struct: %s", mustJSON(t, got))
	}
	if got := SchemaMap(json.RawMessage(`{"type":"object","required":["a"]}`)); mustJSON(t, got) != `{"required":["a"],"type":"object"}` {
		t.Errorf("raw JSON: %v", got)
	}
	for name, v := range map[string]any{
		"array":         []any{1},
		"string":        "object",
		"number":        7,
		"JSON null":     json.RawMessage(`null`),
		"not encodable": func() {},
		"invalid raw":   json.RawMessage(`{`),
	} {
		if got := SchemaMap(v); got != nil {
			t.Errorf("%s: %v", name, got)
		}
	}
}

func TestInputSchema(t *testing.T) {
	in := map[string]any{
		"type":        "object",
		"description": "top\u200B",
		"properties": map[string]any{
			"to": map[string]any{"type": "string", "title": "T\u202Eo", "default": "x\u200By"},
		},
		"allOf": []any{map[string]any{"description": "deep\u2066"}},
	}
	before := mustJSON(t, in)
	got := InputSchema(in)
	want := `{"allOf":[{"description":"deep"}],"description":"top","properties":{"to":{"default":"x` + "\u200b" + `y","title":"To","type":"string"}},"type":"object"}`
	if mustJSON(t, got) != want {
		t.Errorf("got  %s\nwant %s", mustJSON(t, got), want)
	}
	if mustJSON(t, in) != before {
		t.Error("InputSchema mutated its input")
	}
	got["type"] = "changed"
	if in["type"] != "object" {
		t.Error("InputSchema returned its input, not a copy")
	}
	if got := InputSchema(schemaStruct{Type: "object", Description: "via\u200BJSON"}); mustJSON(t, got) != `{"description":"viaJSON","type":"object"}` {
		t.Errorf("struct: %s", mustJSON(t, got))
	}
	for name, v := range map[string]any{"nil": nil, "array": []any{}, "string": "s", "not encodable": make(chan int)} {
		if got := InputSchema(v); mustJSON(t, got) != `{"type":"object"}` {
			t.Errorf("%s: %s", name, mustJSON(t, got))
		}
	}
	a, b := InputSchema(nil), InputSchema(nil)
	a["x"] = 1
	if len(b) != 1 {
		t.Error("the fallback schema is shared")
	}
}
