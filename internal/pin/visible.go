package pin

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The brackets of an escape written by Visible. They are escaped themselves
// wherever they occur in the input, so every one in Visible's output opens
// or closes an escape Visible wrote: a server cannot forge one.
const (
	escOpen  = '⟦' // U+27E6 MATHEMATICAL LEFT WHITE SQUARE BRACKET
	escClose = '⟧' // U+27E7 MATHEMATICAL RIGHT WHITE SQUARE BRACKET
)

// Visible returns s as text an operator can read without being deceived:
// every character that is invisible, reorders or hides text, or is not a
// character at all is replaced by an escape naming it, and everything else
// (letters of every script, marks, digits, punctuation, symbols, emoji,
// spaces, TAB and LF) is kept. Exactly, these are escaped:
//
//   - control characters (Cc) other than TAB and LF: CR, NUL, ESC, DEL, ...;
//   - format characters (Cf): the zero-width characters, the bidi controls,
//     the soft hyphen, the tag characters (U+E0001, U+E0020–U+E007F) that
//     spell hidden ASCII, ...;
//   - private-use (Co), surrogate (Cs) and unassigned (Cn) code points,
//     noncharacters included;
//   - the line and paragraph separators U+2028 and U+2029 (Zl, Zp);
//   - the other default-ignorable code points (Other_Default_Ignorable_Code_Point,
//     e.g. the Hangul fillers U+3164 and U+FFA0, the combining grapheme joiner
//     U+034F) and every variation selector (so "❤️" shows its U+FE0F);
//   - the escape brackets ⟦ (U+27E6) and ⟧ (U+27E7) themselves.
//
// A character is written as ⟦U+XXXX⟧ (at least four upper-case hex digits),
// and a byte that is not part of valid UTF-8 as ⟦0xXX⟧. Since the brackets
// are always escaped, the output reads back unambiguously: a server's text
// "⟦U+200B⟧" is shown as "⟦U+27E6⟧U+200B⟦U+27E7⟧", never as an escape.
// Visible returns s itself when it is printable ASCII, TAB and LF.
func Visible(s string) string {
	i := 0
	for i < len(s) && plainASCII(s[i]) {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	appendVisible(&b, s[i:])
	return b.String()
}

func plainASCII(c byte) bool { return c >= 0x20 && c < 0x7f || c == '\t' || c == '\n' }

// appendVisible writes Visible(s) to b.
func appendVisible(b *strings.Builder, s string) {
	for i := 0; i < len(s); {
		if plainASCII(s[i]) {
			b.WriteByte(s[i])
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			writeByteEscape(b, s[i])
		case hidden(r):
			writeRuneEscape(b, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
}

// hidden reports whether Visible escapes the (validly encoded) rune r.
func hidden(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return false
	case r < 0x7f:
		return r < 0x20
	case r == escOpen || r == escClose:
		return true
	}
	// Kept: letters, marks, numbers, punctuation, symbols and space
	// separators. Everything else (Cc, Cf, Co, Cs, Cn, Zl, Zp) is escaped,
	// and so are the default-ignorables among the kept categories.
	if !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Zs) {
		return true
	}
	return unicode.In(r, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

func writeRuneEscape(b *strings.Builder, r rune) {
	b.WriteRune(escOpen)
	b.WriteString("U+")
	h := strings.ToUpper(strconv.FormatInt(int64(r), 16))
	for n := len(h); n < 4; n++ {
		b.WriteByte('0')
	}
	b.WriteString(h)
	b.WriteRune(escClose)
}

func writeByteEscape(b *strings.Builder, c byte) {
	const digits = "0123456789ABCDEF"
	b.WriteRune(escOpen)
	b.WriteString("0x")
	b.WriteByte(digits[c>>4])
	b.WriteByte(digits[c&0xf])
	b.WriteRune(escClose)
}
