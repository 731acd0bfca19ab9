package projection

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sanitize returns s without the characters that let server-controlled text
// hide from a person or reorder itself before it reaches a model. Exactly:
//
//   - control characters (category Cc: U+0000–U+001F, U+007F–U+009F) except
//     TAB (U+0009) and LF (U+000A); CR is removed. An ANSI CSI escape sequence
//     (ESC '[' then bytes 0x30–0x3F, then bytes 0x20–0x2F, then one final byte
//     0x40–0x7E, e.g. "\x1b[31m") is removed whole; any other ESC alone;
//   - every format character (category Cf), which includes the zero-width
//     characters U+200B–U+200D, U+2060–U+2064, U+FEFF and U+180E, the soft
//     hyphen U+00AD, the bidi controls U+200E, U+200F, U+061C, U+202A–U+202E
//     and U+2066–U+2069, and the tag characters U+E0001 and U+E0020–U+E007F
//     ("ASCII smuggling"). Emoji ZWJ sequences and tag-flag sequences
//     therefore fall apart into their visible parts;
//   - private-use characters (category Co: U+E000–U+F8FF, planes 15 and 16);
//   - the other default-ignorable code points (Unicode property
//     Other_Default_Ignorable_Code_Point: U+034F, U+115F, U+1160, U+17B4,
//     U+17B5, U+2065, U+3164, U+FFA0, U+FFF0–U+FFF8, U+E0000, U+E0002–U+E001F,
//     U+E0080–U+E00FF, U+E01F0–U+E0FFF);
//   - a variation selector (property Variation_Selector: U+180B–U+180D,
//     U+180F, U+FE00–U+FE0F, U+E0100–U+E01EF) unless it directly follows a
//     kept character that is neither a variation selector, TAB nor LF; so at
//     most one selector rides on each visible character ("❤️" keeps its
//     U+FE0F, but a run of selectors cannot carry a hidden payload);
//   - bytes that are not valid UTF-8.
//
// The line and paragraph separators U+2028 and U+2029 become LF. Everything
// else, including letters of every script, combining marks, emoji, spaces and
// punctuation, is kept unchanged. Sanitize is idempotent, and returns s
// itself (no allocation) when s is printable ASCII plus TAB and LF.
func Sanitize(s string) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= 0x20 && c < 0x7f || c == '\t' || c == '\n' {
			i++
			continue
		}
		break
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	prevBase := i > 0 && s[i-1] != '\t' && s[i-1] != '\n' // last kept rune may carry a selector
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c >= 0x20 && c < 0x7f:
				b.WriteByte(c)
				prevBase = true
			case c == '\t' || c == '\n':
				b.WriteByte(c)
				prevBase = false
			case c == 0x1b:
				i += csiLen(s[i:])
				continue
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			// invalid UTF-8: dropped
		case r == '\u2028' || r == '\u2029':
			b.WriteByte('\n')
			prevBase = false
		case unicode.Is(unicode.Variation_Selector, r):
			if prevBase {
				b.WriteRune(r)
				prevBase = false
			}
		case stripped(r):
			// dropped; does not change prevBase, so a selector after a
			// stripped character binds to the kept one before it.
		default:
			b.WriteRune(r)
			prevBase = true
		}
	}
	return b.String()
}

// stripped reports whether a non-ASCII rune (other than the variation
// selectors and U+2028/U+2029, handled by Sanitize) is removed.
func stripped(r rune) bool {
	return unicode.IsControl(r) ||
		unicode.Is(unicode.Cf, r) ||
		unicode.Is(unicode.Co, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
}

// csiLen returns how many bytes at the start of s (which begins with ESC)
// to drop: a whole CSI sequence when one is there, else the ESC alone.
func csiLen(s string) int {
	if len(s) < 2 || s[1] != '[' {
		return 1
	}
	j := 2
	for j < len(s) && s[j] >= 0x30 && s[j] <= 0x3f {
		j++
	}
	for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
		j++
	}
	if j < len(s) && s[j] >= 0x40 && s[j] <= 0x7e {
		return j + 1
	}
	return 1
}
