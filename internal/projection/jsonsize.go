package projection

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// jsonSize returns len(json.Marshal(v)) without building the encoding, for
// the values a JSON decoder produces (and common hand-built ones). Values of
// other types are measured by json.Marshal itself; a value that cannot be
// encoded counts as "null".
func jsonSize(v map[string]any) int {
	if v == nil {
		return 4
	}
	var scratch [64]byte
	return valueSize(v, scratch[:0])
}

func valueSize(v any, scratch []byte) int {
	switch t := v.(type) {
	case nil:
		return 4
	case string:
		return stringSize(t)
	case bool:
		if t {
			return 4
		}
		return 5
	case float64:
		return floatSize(t, scratch)
	case int:
		return len(strconv.AppendInt(scratch, int64(t), 10))
	case int64:
		return len(strconv.AppendInt(scratch, t, 10))
	case json.Number:
		if t == "" {
			return 1 // encoded as 0
		}
		return len(t)
	case map[string]any:
		if t == nil {
			return 4
		}
		n := 2 // {}
		if len(t) > 0 {
			n += len(t) - 1 // commas
		}
		for k, e := range t {
			n += stringSize(k) + 1 + valueSize(e, scratch)
		}
		return n
	case []any:
		if t == nil {
			return 4
		}
		n := 2
		if len(t) > 0 {
			n += len(t) - 1
		}
		for _, e := range t {
			n += valueSize(e, scratch)
		}
		return n
	case []string:
		if t == nil {
			return 4
		}
		n := 2
		if len(t) > 0 {
			n += len(t) - 1
		}
		for _, e := range t {
			n += stringSize(e)
		}
		return n
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return 4
		}
		return len(b)
	}
}

// stringSize is the length of s encoded by encoding/json (HTML escaping on).
func stringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6 // \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// floatSize mirrors encoding/json's float64 encoding.
func floatSize(f float64, scratch []byte) int {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 4 // json.Marshal fails; counted as null
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(scratch, f, format, -1, 64)
	n := len(b)
	if format == 'e' {
		// clean up e-09 to e-9
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			n--
		}
	}
	return n
}
