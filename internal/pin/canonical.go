package pin

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"
)

// Sentinel errors of Canonical and CanonicalValue. Every error these functions
// return wraps exactly one of them (test with errors.Is); the wrapper is an
// *Error that also says where in the input the problem is.
var (
	// ErrSyntax: the input is not JSON (RFC 8259): a bad token, an unescaped
	// control character in a string, a leading zero, a trailing comma, an
	// unterminated value, empty input, and so on.
	ErrSyntax = errors.New("invalid JSON")
	// ErrTrailingData: a complete JSON value is followed by more than
	// whitespace.
	ErrTrailingData = errors.New("data after the JSON value")
	// ErrDuplicateKey: an object names the same member twice (after escapes
	// are decoded, so "a" and "\u0061" are the same key). RFC 8785 §3.1
	// requires rejecting it; any choice of winner would let two parsers see
	// two different documents under one fingerprint.
	ErrDuplicateKey = errors.New("duplicate object key")
	// ErrInvalidUTF8: a string (raw bytes in the input, or a Go string given to
	// CanonicalValue) is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("invalid UTF-8")
	// ErrLoneSurrogate: a \uD800-\uDFFF escape that is not half of a
	// high+low surrogate pair.
	ErrLoneSurrogate = errors.New("lone UTF-16 surrogate")
	// ErrNumberRange: a number that is not a finite IEEE 754 double: a literal
	// that overflows (1e400), or a NaN or infinite float64 given to
	// CanonicalValue.
	ErrNumberRange = errors.New("number is not a finite IEEE 754 double")
	// ErrTooDeep: arrays and objects nested more than MaxDepth levels.
	ErrTooDeep = errors.New("JSON nested too deeply")
	// ErrUnsupportedValue: CanonicalValue got a Go value that encoding/json
	// cannot marshal (a channel, a function, a cycle, ...).
	ErrUnsupportedValue = errors.New("value cannot be represented as JSON")
)

// MaxDepth is the deepest nesting of arrays and objects Canonical accepts.
// It equals encoding/json's limit, so anything the go-sdk decodes can be
// canonicalized, and it bounds recursion on hostile input.
const MaxDepth = 10000

// Error is the error type of Canonical and CanonicalValue.
type Error struct {
	// Offset is the byte offset in the input where the problem was found, or
	// -1 when the input was a Go value (CanonicalValue).
	Offset int
	// Err is one of the sentinel errors above.
	Err error
	// Detail says what exactly was wrong; it may quote (with %q) a short
	// piece of the input.
	Detail string
	// Field names the part of a fingerprinted object the error is in
	// ("inputSchema", "name", "args", ...); empty for Canonical and
	// CanonicalValue. Offset is then relative to that field.
	Field string
}

// Error implements error.
func (e *Error) Error() string {
	msg := "pin: "
	if e.Field != "" {
		msg += e.Field + ": "
	}
	msg += e.Err.Error()
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Offset >= 0 {
		msg += fmt.Sprintf(" (at byte %d)", e.Offset)
	}
	return msg
}

// Unwrap returns the sentinel error.
func (e *Error) Unwrap() error { return e.Err }

// Canonical returns the RFC 8785 (JSON Canonicalization Scheme) form of the
// JSON text raw:
//
//   - no whitespace between tokens;
//   - object members sorted by their keys compared as arrays of UTF-16 code
//     units (RFC 8785 §3.2.3);
//   - strings written with the shortest JCS escapes: \" \\ \b \f \n \r \t,
//     \u00XX (lower-case hex) for the other controls U+0000-U+001F, and every
//     other character, including "/", DEL, U+2028 and non-ASCII, as literal
//     UTF-8; \uXXXX escapes of the input are decoded;
//   - numbers parsed as IEEE 754 doubles (round to nearest, as JSON.parse
//     does) and written in the ECMAScript Number-to-String form: 4.50 is
//     "4.5", 1E30 is "1e+30", 0.000001 is "0.000001", 1e-7 is "1e-7", -0 is
//     "0". As RFC 8785 requires, integers beyond 2^53 lose precision:
//     9007199254740993 is written "9007199254740992". Numbers that underflow
//     become 0; numbers that overflow are an error.
//
// Canonical rejects, with an *Error wrapping one of the sentinel errors,
// anything that is not exactly one RFC 8259 JSON value (surrounding
// whitespace allowed): ErrSyntax, ErrTrailingData, ErrDuplicateKey,
// ErrInvalidUTF8, ErrLoneSurrogate, ErrNumberRange, ErrTooDeep. It never
// panics, and its time and memory are linear in len(raw).
func Canonical(raw []byte) ([]byte, error) {
	p := parser{data: raw}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(p.data) {
		return nil, p.fail(ErrTrailingData, "unexpected %s", p.describe())
	}
	return appendNode(make([]byte, 0, len(raw)), &v), nil
}

// CanonicalValue returns the RFC 8785 form of a decoded Go value. It walks
// nil, bool, string, float64, json.Number, json.RawMessage, map[string]any
// and []any itself (so a string that is not valid UTF-8 is an error rather
// than silently replaced, and a NaN or infinite float64 is ErrNumberRange);
// any other value (structs, other maps, slices and numbers) is first encoded
// with json.Marshal and then canonicalized, with encoding/json's rules for
// that step (for example, invalid UTF-8 inside a struct's string becomes
// U+FFFD, and a float32 is formatted at float32 precision before being read
// back as a double).
func CanonicalValue(v any) ([]byte, error) {
	return appendValue(nil, v, 0)
}

func appendValue(dst []byte, v any, depth int) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		if x {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case string:
		if !utf8.ValidString(x) {
			return nil, valueError(ErrInvalidUTF8, "string %q", clip(x))
		}
		return appendString(dst, x), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, valueError(ErrNumberRange, "float64 %v", x)
		}
		return appendNumber(dst, x), nil
	case json.Number:
		p := parser{data: []byte(x)}
		text, err := p.number()
		if err == nil && p.pos != len(p.data) {
			err = p.fail(ErrSyntax, "json.Number %q is not one JSON number", clip(string(x)))
		}
		if err != nil {
			return nil, err
		}
		return append(dst, text...), nil
	case json.RawMessage:
		c, err := Canonical(x)
		if err != nil {
			return nil, err
		}
		return append(dst, c...), nil
	case []any:
		if depth >= MaxDepth {
			return nil, valueError(ErrTooDeep, "more than %d levels", MaxDepth)
		}
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, e, depth+1); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		if depth >= MaxDepth {
			return nil, valueError(ErrTooDeep, "more than %d levels", MaxDepth)
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			if !utf8.ValidString(k) {
				return nil, valueError(ErrInvalidUTF8, "object key %q", clip(k))
			}
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = appendValue(dst, x[k], depth+1); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, &Error{Offset: -1, Err: ErrUnsupportedValue, Detail: err.Error()}
		}
		c, err := Canonical(b)
		if err != nil {
			return nil, err
		}
		return append(dst, c...), nil
	}
}

func valueError(sentinel error, format string, args ...any) *Error {
	return &Error{Offset: -1, Err: sentinel, Detail: fmt.Sprintf(format, args...)}
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// compareUTF16 orders strings by their UTF-16 code units (RFC 8785 §3.2.3).
// UTF-8 byte order equals code point order, which differs from UTF-16 order
// only between a supplementary character (a surrogate pair, 0xD800-0xDBFF
// first) and a BMP character at or above U+E000.
func compareUTF16(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i == len(a) || i == len(b) {
		return len(a) - len(b)
	}
	// Back up to the start of the rune that differs.
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	ua, ub := firstUnit(ra), firstUnit(rb)
	if ua != ub {
		return int(ua) - int(ub)
	}
	// Same first unit: both BMP and equal (impossible here), or both
	// supplementary with the same high surrogate, where code point order is
	// the order of the low surrogates.
	return int(ra) - int(rb)
}

func firstUnit(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + (r-0x10000)>>10
	}
	return r
}

func appendNode(dst []byte, n *node) []byte {
	switch n.kind {
	case kindNull:
		return append(dst, "null"...)
	case kindTrue:
		return append(dst, "true"...)
	case kindFalse:
		return append(dst, "false"...)
	case kindNumber:
		return append(dst, n.text...)
	case kindString:
		return appendString(dst, n.text)
	case kindArray:
		dst = append(dst, '[')
		for i := range n.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendNode(dst, &n.elems[i])
		}
		return append(dst, ']')
	default: // kindObject
		dst = append(dst, '{')
		for i := range n.members {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, n.members[i].key)
			dst = append(dst, ':')
			dst = appendNode(dst, &n.members[i].value)
		}
		return append(dst, '}')
	}
}

const hexDigits = "0123456789abcdef"

// appendString writes s (valid UTF-8) as a JCS string literal.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
