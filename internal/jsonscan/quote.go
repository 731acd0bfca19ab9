package jsonscan

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendString appends s to b as a JSON string, byte for byte what
// encoding/json's Marshal writes for it: '"' and '\\' escaped, \b, \f,
// \n, \r and \t by name, other control characters and '<', '>' and '&' as
// \u00XX, U+2028 and U+2029 as \u2028 and \u2029, and each byte of an
// invalid UTF-8 sequence as \ufffd. It allocates only when b must grow.
func AppendString(b []byte, s string) []byte { return appendQuoted(b, s, true) }

// AppendSlogString is AppendString as log/slog's JSON handler writes a
// string: '<', '>' and '&' as they are, and of the control characters
// only \n, \r and \t by name (\b and \f as \u0008 and \u000c).
func AppendSlogString(b []byte, s string) []byte { return appendQuoted(b, s, false) }

// appendQuoted is AppendString (marshal) or AppendSlogString.
func appendQuoted(b []byte, s string, marshal bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!marshal || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\b' && marshal:
				b = append(b, '\\', 'b')
			case c == '\f' && marshal:
				b = append(b, '\\', 'f')
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
