package jsonscan

import "encoding/binary"

// MaxDepth is the deepest nesting of objects and arrays that [Valid],
// [Value] and [Object] accept (1000, as the go-sdk's decoder). A document
// made of 1000 nested arrays is accepted; 1001 is rejected.
const MaxDepth = 1000

// strSpecial marks the bytes that end the fast path inside a string:
// '"', '\\' and the control characters below 0x20. It is read-only.
var strSpecial = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'] = true
	t['\\'] = true
	return t
}()

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// hasSpecial reports whether any of the 8 bytes in x is '"', '\\' or below
// 0x20. The answer is exact (no false positives), although the positions of
// the flagged bits are not.
func hasSpecial(x uint64) bool {
	q := x ^ (ones * '"')
	s := x ^ (ones * '\\')
	lt := (x - ones*0x20) &^ x
	lq := (q - ones) &^ q
	ls := (s - ones) &^ s
	return (lt|lq|ls)&highs != 0
}

// Valid reports whether b is exactly one valid JSON value (RFC 8259),
// surrounded by optional whitespace. It agrees with [encoding/json.Valid] on
// every input (including invalid UTF-8 inside strings, which both accept),
// except that it rejects nesting deeper than [MaxDepth] levels.
func Valid(b []byte) bool {
	i := skipWS(b, 0)
	if i >= len(b) {
		return false
	}
	e := scanValue(b, i, 0)
	return e >= 0 && skipWS(b, e) == len(b)
}

// Value returns the extent of the JSON value at the start of b, after
// optional leading whitespace: v is the value's bytes and rest is what
// follows it, both sub-slices of b. ok is false when b does not start with
// one complete valid value (same rules as [Valid]).
//
// rest is not inspected: Value scans the longest value token, so for b
// "1x" it returns v "1" and rest "x", and for "01" v "0" and rest "1".
// Valid(b) holds exactly when ok is true and rest is only whitespace.
func Value(b []byte) (v, rest []byte, ok bool) {
	i := skipWS(b, 0)
	if i >= len(b) {
		return nil, nil, false
	}
	e := scanValue(b, i, 0)
	if e < 0 {
		return nil, nil, false
	}
	return b[i:e], b[e:], true
}

// Object calls fn for each member of the JSON object obj (which may have
// surrounding whitespace), in order, with the key's raw bytes between the
// quotes (escapes are NOT decoded; escaped reports whether the key
// contained a backslash) and the member value's exact bytes. Both are
// sub-slices of obj.
//
// It stops calling fn once fn returns false, but still checks the rest of
// obj, so the result never depends on fn: Object returns true exactly when
// obj is one valid JSON object (Valid(obj) and it starts with '{'). When it
// returns false, fn may have been called for the members before the error.
func Object(obj []byte, fn func(key []byte, escaped bool, val []byte) bool) bool {
	n := len(obj)
	i := skipWS(obj, 0)
	if i >= n || obj[i] != '{' {
		return false
	}
	i = skipWS(obj, i+1)
	if i < n && obj[i] == '}' {
		return skipWS(obj, i+1) == n
	}
	call := true
	for {
		if i >= n || obj[i] != '"' {
			return false
		}
		ks := i + 1
		e, esc := scanString(obj, ks)
		if e < 0 {
			return false
		}
		i = skipWS(obj, e)
		if i >= n || obj[i] != ':' {
			return false
		}
		i = skipWS(obj, i+1)
		vs := i
		if i >= n {
			return false
		}
		i = scanValue(obj, i, 1)
		if i < 0 {
			return false
		}
		if call && !fn(obj[ks:e-1], esc, obj[vs:i]) {
			call = false
		}
		i = skipWS(obj, i)
		if i >= n {
			return false
		}
		switch obj[i] {
		case ',':
			i = skipWS(obj, i+1)
		case '}':
			return skipWS(obj, i+1) == n
		default:
			return false
		}
	}
}

// skipWS returns the index of the first non-whitespace byte in b at or
// after i, or len(b).
func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanValue scans the value that starts at b[i] (which must be in range and
// not whitespace) and returns the index just after it, or -1 if it is not
// a valid value. depth0 is the nesting depth of the enclosing container,
// counted against MaxDepth.
func scanValue(b []byte, i, depth0 int) int {
	// stack holds one bit per open container: 1 for an object, 0 for an
	// array. Bit d describes the container at depth d+1.
	var stack [MaxDepth/64 + 1]uint64
	n := len(b)
	depth := depth0
	var d int
	var inObj bool

value: // b[i] should start a value; i may be out of range.
	if i >= n {
		return -1
	}
	switch b[i] {
	case '{':
		if depth >= MaxDepth {
			return -1
		}
		stack[depth>>6] |= 1 << (depth & 63)
		depth++
		i = skipWS(b, i+1)
		if i < n && b[i] == '}' {
			depth--
			i++
			goto end
		}
		goto key
	case '[':
		if depth >= MaxDepth {
			return -1
		}
		stack[depth>>6] &^= 1 << (depth & 63)
		depth++
		i = skipWS(b, i+1)
		if i < n && b[i] == ']' {
			depth--
			i++
			goto end
		}
		goto value
	case '"':
		i, _ = scanString(b, i+1)
		if i < 0 {
			return -1
		}
	case 't':
		if n-i < 4 || string(b[i:i+4]) != "true" {
			return -1
		}
		i += 4
	case 'f':
		if n-i < 5 || string(b[i:i+5]) != "false" {
			return -1
		}
		i += 5
	case 'n':
		if n-i < 4 || string(b[i:i+4]) != "null" {
			return -1
		}
		i += 4
	default:
		i = scanNumber(b, i)
		if i < 0 {
			return -1
		}
	}

end: // A value ended just before b[i].
	if depth == depth0 {
		return i
	}
	i = skipWS(b, i)
	if i >= n {
		return -1
	}
	d = depth - 1
	inObj = stack[d>>6]&(1<<(d&63)) != 0
	switch b[i] {
	case ',':
		i = skipWS(b, i+1)
		if inObj {
			goto key
		}
		goto value
	case '}':
		if !inObj {
			return -1
		}
	case ']':
		if inObj {
			return -1
		}
	default:
		return -1
	}
	depth--
	i++
	goto end

key: // b[i] should start an object key; i may be out of range.
	if i >= n || b[i] != '"' {
		return -1
	}
	i, _ = scanString(b, i+1)
	if i < 0 {
		return -1
	}
	i = skipWS(b, i)
	if i >= n || b[i] != ':' {
		return -1
	}
	i = skipWS(b, i+1)
	goto value
}

// scanString scans string contents starting at b[i], just after the
// opening quote. It returns the index just after the closing quote (or -1
// if the string is invalid or unterminated) and whether it had an escape.
func scanString(b []byte, i int) (end int, escaped bool) {
	n := len(b)
	for {
		// Fast path: 8 plain bytes at a time, then byte by byte to the
		// special byte (at most 8 more, since hasSpecial is exact).
		for n-i >= 8 && !hasSpecial(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < n && !strSpecial[b[i]] {
			i++
		}
		if i >= n {
			return -1, escaped
		}
		switch b[i] {
		case '"':
			return i + 1, escaped
		case '\\':
			escaped = true
			i++
			if i >= n {
				return -1, escaped
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if n-i < 5 || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return -1, escaped
				}
				i += 5
			default:
				return -1, escaped
			}
		default: // control character
			return -1, escaped
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber scans the number that starts at b[i] and returns the index
// just after it, or -1. Grammar (RFC 8259):
// -? (0 | [1-9][0-9]*) (\.[0-9]+)? ([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) int {
	n := len(b)
	if b[i] == '-' {
		i++
		if i >= n {
			return -1
		}
	}
	switch c := b[i]; {
	case c == '0':
		i++
	case '1' <= c && c <= '9':
		i++
		for i < n && isDigit(b[i]) {
			i++
		}
	default:
		return -1
	}
	if i < n && b[i] == '.' {
		i++
		if i >= n || !isDigit(b[i]) {
			return -1
		}
		for i < n && isDigit(b[i]) {
			i++
		}
	}
	if i < n && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < n && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= n || !isDigit(b[i]) {
			return -1
		}
		for i < n && isDigit(b[i]) {
			i++
		}
	}
	return i
}
