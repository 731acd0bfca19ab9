package pin

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestVisibleEscapes(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"zero-width space", "a\u200bb", "a⟦U+200B⟧b"},
		{"zero-width joiner and non-joiner", "\u200c\u200d", "⟦U+200C⟧⟦U+200D⟧"},
		{"word joiner and BOM", "\u2060\ufeff", "⟦U+2060⟧⟦U+FEFF⟧"},
		{"bidi override", "abc\u202edcba\u202c", "abc⟦U+202E⟧dcba⟦U+202C⟧"},
		{"bidi isolates and marks", "\u2066\u2067\u2068\u2069\u200e\u200f\u061c", "⟦U+2066⟧⟦U+2067⟧⟦U+2068⟧⟦U+2069⟧⟦U+200E⟧⟦U+200F⟧⟦U+061C⟧"},
		{"tag characters spelling ASCII", "ok\U000E0001\U000E0049\U000E0047\U000E007F", "ok⟦U+E0001⟧⟦U+E0049⟧⟦U+E0047⟧⟦U+E007F⟧"},
		{"soft hyphen", "pay\u00admail", "pay⟦U+00AD⟧mail"},
		{"C0 controls but TAB and LF", "a\x00b\rc\x1b[31md\x7f\te\nf", "a⟦U+0000⟧b⟦U+000D⟧c⟦U+001B⟧[31md⟦U+007F⟧\te\nf"},
		{"C1 control", "a\u0085b\u009bc", "a⟦U+0085⟧b⟦U+009B⟧c"},
		{"private use", "\ue000\U000F0000\U00100000", "⟦U+E000⟧⟦U+F0000⟧⟦U+100000⟧"},
		{"unassigned and noncharacters", "\U000E0FFF\ufffe\uffff\ufdd0", "⟦U+E0FFF⟧⟦U+FFFE⟧⟦U+FFFF⟧⟦U+FDD0⟧"},
		{"line and paragraph separators", "a\u2028b\u2029c", "a⟦U+2028⟧b⟦U+2029⟧c"},
		{"default-ignorable letters", "\u3164\u115f\u1160\uffa0", "⟦U+3164⟧⟦U+115F⟧⟦U+1160⟧⟦U+FFA0⟧"},
		{"combining grapheme joiner", "a\u034fb", "a⟦U+034F⟧b"},
		{"variation selectors", "❤\ufe0f\U000E0100", "❤⟦U+FE0F⟧⟦U+E0100⟧"},
		{"mongolian vowel separator", "\u180e", "⟦U+180E⟧"},
		{"invalid UTF-8", "a\xffb\xc3", "a⟦0xFF⟧b⟦0xC3⟧"},
		{"encoded surrogate", "\xed\xa0\x80", "⟦0xED⟧⟦0xA0⟧⟦0x80⟧"},
		{"escape brackets", "⟦U+200B⟧", "⟦U+27E6⟧U+200B⟦U+27E7⟧"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Visible(tc.in); got != tc.want {
				t.Fatalf("Visible(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestVisibleKeepsText(t *testing.T) {
	for _, s := range []string{
		"",
		"Moves money between accounts.\n\tAmounts are in cents.",
		"Überweisung — «Betrag» in €",
		"Перевод денег",
		"تحويل الأموال",
		"העברת כסף",
		"资金转账、残高照会",
		"송금",
		"पैसे भेजें", // Devanagari with combining vowel signs
		"ส่งเงิน",
		"e\u0301",                // combining acute
		"😀👍🏽",                    // emoji and a skin-tone modifier
		"a\u00a0b\u3000c\u2003d", // space separators
		"\ufffd",                 // a replacement character as such
	} {
		if got := Visible(s); got != s {
			t.Errorf("Visible(%q) = %q, want it unchanged", s, got)
		}
	}
}

// TestVisibleCannotBeForged: a server's text that spells an escape is shown
// differently from the character it names, and Visible is one-to-one on
// the inputs that matter here.
func TestVisibleCannotBeForged(t *testing.T) {
	pairs := [][2]string{
		{"⟦U+200B⟧", "\u200b"},
		{"⟦0xFF⟧", "\xff"},
		{"\ufffd", "\xff"},
		{"⟦U+27E6⟧", "⟦"},
		{"a\u200bb", "a\u200cb"},
	}
	for _, p := range pairs {
		if Visible(p[0]) == Visible(p[1]) {
			t.Errorf("Visible(%q) == Visible(%q) == %q", p[0], p[1], Visible(p[0]))
		}
	}
	if !noHiddenOutsideEscapes(Visible("⟦U+200B⟧\u200b⟦")) {
		t.Fatal("Visible's output has a character it would escape")
	}
}

func TestVisibleASCIIIsNotCopied(t *testing.T) {
	s := strings.Repeat("plain ascii\ttext\n", 4)
	if n := testing.AllocsPerRun(100, func() { _ = Visible(s) }); n != 0 {
		t.Fatalf("%v allocations for printable ASCII", n)
	}
}

// noHiddenOutsideEscapes reports whether out is valid UTF-8 and, once every
// escape Visible writes is cut out, holds no character Visible escapes
// (so no stray bracket either).
func noHiddenOutsideEscapes(out string) bool {
	if !utf8.ValidString(out) {
		return false
	}
	rest := stripEscapes(out)
	return Visible(rest) == rest
}

// stripEscapes removes the escapes ⟦U+XXXX⟧ (4 to 6 upper-case hex digits)
// and ⟦0xXX⟧ from s.
func stripEscapes(s string) string {
	var b strings.Builder
	for {
		i := strings.IndexRune(s, escOpen)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i:]
		n := escapeLen(s)
		if n == 0 { // not an escape: keep the bracket so the check fails
			b.WriteRune(escOpen)
			n = len(string(escOpen))
		}
		s = s[n:]
	}
}

func escapeLen(s string) int {
	body := s[len(string(escOpen)):]
	end := strings.IndexRune(body, escClose)
	if end < 0 {
		return 0
	}
	inner := body[:end]
	hexDigits := func(h string, lo, hi int) bool {
		if len(h) < lo || len(h) > hi {
			return false
		}
		for _, c := range h {
			if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'F') {
				return false
			}
		}
		return true
	}
	switch {
	case strings.HasPrefix(inner, "U+") && hexDigits(inner[2:], 4, 6):
	case strings.HasPrefix(inner, "0x") && hexDigits(inner[2:], 2, 2):
	default:
		return 0
	}
	return len(string(escOpen)) + end + len(string(escClose))
}
