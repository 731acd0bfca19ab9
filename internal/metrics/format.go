package metrics

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// validMetricName reports whether s matches [a-zA-Z_:][a-zA-Z0-9_:]*.
func validMetricName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == ':':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// validLabelName reports whether s matches [a-zA-Z_][a-zA-Z0-9_]* and does
// not begin with the reserved "__".
func validLabelName(s string) bool {
	if s == "" || (len(s) >= 2 && s[0] == '_' && s[1] == '_') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// sanitizeUTF8 replaces every byte that is not part of a valid UTF-8
// sequence with U+FFFD. It returns s itself when s is valid.
func sanitizeUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return string(b)
}

// appendEscaped appends s with backslash and line feed escaped, and with a
// double quote escaped too when quote is set (label values). Invalid UTF-8
// bytes become U+FFFD.
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\\':
				b = append(b, '\\', '\\')
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '"' && quote:
				b = append(b, '\\', '"')
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return b
}

// appendFloat appends v the way Prometheus writes sample values and "le"
// bounds: the shortest representation that parses back to v, and +Inf,
// -Inf and NaN for the special values.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, +1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// appendSeries appends `name{l1="v1",...,extraName="extraValue"} ` (the
// braces omitted when there are no labels), ready for the value.
func appendSeries(b []byte, name string, labels, values []string, extraName, extraValue string) []byte {
	b = append(b, name...)
	if len(labels) > 0 || extraName != "" {
		b = append(b, '{')
		for i, l := range labels {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, l...)
			b = append(b, '=', '"')
			b = appendEscaped(b, values[i], true)
			b = append(b, '"')
		}
		if extraName != "" {
			if len(labels) > 0 {
				b = append(b, ',')
			}
			b = append(b, extraName...)
			b = append(b, '=', '"')
			b = appendEscaped(b, extraValue, true)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	return append(b, ' ')
}

// appendHeader appends the HELP line (omitted when help is empty) and the
// TYPE line of a family.
func appendHeader(b []byte, name, help, typ string) []byte {
	if help != "" {
		b = append(b, "# HELP "...)
		b = append(b, name...)
		b = append(b, ' ')
		b = appendEscaped(b, help, false)
		b = append(b, '\n')
	}
	b = append(b, "# TYPE "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, typ...)
	return append(b, '\n')
}

// appendUint appends n and a line feed.
func appendUint(b []byte, n uint64) []byte {
	return append(strconv.AppendUint(b, n, 10), '\n')
}
