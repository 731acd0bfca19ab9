package projection

import (
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
