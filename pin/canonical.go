package pin

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
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

// kind of a parsed node.
type kind uint8

const (
	kindNull kind = iota
	kindTrue
	kindFalse
	kindNumber // text holds the canonical number
	kindString // text holds the decoded string
	kindArray
	kindObject
)

// node is a parsed JSON value. Canonical parses into a tree and writes it
// once, so sorting members never copies serialized bytes (which would be
// quadratic in the nesting depth).
type node struct {
	kind    kind
	text    string
	elems   []node
	members []member
}

type member struct {
	key    string
	offset int // of the key in the input, for error messages
	value  node
}

type parser struct {
	data []byte
	pos  int
}

func (p *parser) fail(sentinel error, format string, args ...any) *Error {
	return &Error{Offset: p.pos, Err: sentinel, Detail: fmt.Sprintf(format, args...)}
}

// describe names the byte at p.pos for an error message.
func (p *parser) describe() string {
	if p.pos >= len(p.data) {
		return "end of input"
	}
	c := p.data[p.pos]
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("character %q", c)
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (node, error) {
	if p.pos >= len(p.data) {
		return node{}, p.fail(ErrSyntax, "unexpected end of input, expected a value")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.string()
		return node{kind: kindString, text: s}, err
	case c == 't':
		return node{kind: kindTrue}, p.literal("true")
	case c == 'f':
		return node{kind: kindFalse}, p.literal("false")
	case c == 'n':
		return node{kind: kindNull}, p.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		text, err := p.number()
		return node{kind: kindNumber, text: text}, err
	default:
		return node{}, p.fail(ErrSyntax, "unexpected %s, expected a value", p.describe())
	}
}

func (p *parser) literal(word string) error {
	if len(p.data)-p.pos >= len(word) && string(p.data[p.pos:p.pos+len(word)]) == word {
		p.pos += len(word)
		return nil
	}
	return p.fail(ErrSyntax, "invalid literal, expected %q", word)
}

func (p *parser) array(depth int) (node, error) {
	if depth >= MaxDepth {
		return node{}, p.fail(ErrTooDeep, "more than %d levels", MaxDepth)
	}
	p.pos++ // [
	n := node{kind: kindArray}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return n, nil
	}
	for {
		p.skipSpace()
		v, err := p.value(depth + 1)
		if err != nil {
			return node{}, err
		}
		n.elems = append(n.elems, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return node{}, p.fail(ErrSyntax, "unexpected end of input in an array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return n, nil
		default:
			return node{}, p.fail(ErrSyntax, "unexpected %s in an array, expected ',' or ']'", p.describe())
		}
	}
}

func (p *parser) object(depth int) (node, error) {
	if depth >= MaxDepth {
		return node{}, p.fail(ErrTooDeep, "more than %d levels", MaxDepth)
	}
	p.pos++ // {
	n := node{kind: kindObject}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return n, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return node{}, p.fail(ErrSyntax, "unexpected %s in an object, expected a string key", p.describe())
		}
		offset := p.pos
		key, err := p.string()
		if err != nil {
			return node{}, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return node{}, p.fail(ErrSyntax, "unexpected %s after an object key, expected ':'", p.describe())
		}
		p.pos++
		p.skipSpace()
		v, err := p.value(depth + 1)
		if err != nil {
			return node{}, err
		}
		n.members = append(n.members, member{key: key, offset: offset, value: v})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return node{}, p.fail(ErrSyntax, "unexpected end of input in an object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			// A stable sort keeps equal keys in input order, so the
			// duplicate reported is the later one.
			slices.SortStableFunc(n.members, func(a, b member) int { return compareUTF16(a.key, b.key) })
			for i := 1; i < len(n.members); i++ {
				if n.members[i].key == n.members[i-1].key {
					return node{}, &Error{Offset: n.members[i].offset, Err: ErrDuplicateKey,
						Detail: fmt.Sprintf("key %q appears more than once", clip(n.members[i].key))}
				}
			}
			return n, nil
		default:
			return node{}, p.fail(ErrSyntax, "unexpected %s in an object, expected ',' or '}'", p.describe())
		}
	}
}

// string parses a string token at p.pos (which is '"') and returns its
// decoded value.
func (p *parser) string() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	var buf []byte // nil until the first escape
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			var s string
			if buf == nil {
				s = string(p.data[start:p.pos])
			} else {
				s = string(append(buf, p.data[start:p.pos]...))
			}
			p.pos++
			return s, nil
		case c == '\\':
			buf = append(buf, p.data[start:p.pos]...)
			var err error
			if buf, err = p.escape(buf); err != nil {
				return "", err
			}
			start = p.pos
		case c < 0x20:
			return "", p.fail(ErrSyntax, "unescaped control character 0x%02x in a string", c)
		case c < utf8.RuneSelf:
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size == 1 {
				return "", p.fail(ErrInvalidUTF8, "byte 0x%02x in a string", c)
			}
			p.pos += size
		}
	}
	return "", p.fail(ErrSyntax, "unterminated string")
}

// escape decodes the escape sequence at p.pos (which is '\\') onto buf.
func (p *parser) escape(buf []byte) ([]byte, error) {
	if p.pos+1 >= len(p.data) {
		return nil, p.fail(ErrSyntax, "unterminated escape sequence")
	}
	c := p.data[p.pos+1]
	var r rune
	switch c {
	case '"', '\\', '/':
		r = rune(c)
	case 'b':
		r = '\b'
	case 'f':
		r = '\f'
	case 'n':
		r = '\n'
	case 'r':
		r = '\r'
	case 't':
		r = '\t'
	case 'u':
		hi, ok := hex4(p.data[p.pos+2:])
		if !ok {
			return nil, p.fail(ErrSyntax, `invalid \u escape, expected four hex digits`)
		}
		switch {
		case hi >= 0xDC00 && hi <= 0xDFFF:
			return nil, p.fail(ErrLoneSurrogate, `\u%04x is a low surrogate with no high surrogate before it`, hi)
		case hi >= 0xD800 && hi <= 0xDBFF:
			rest := p.data[p.pos+6:]
			if len(rest) < 2 || rest[0] != '\\' || rest[1] != 'u' {
				return nil, p.fail(ErrLoneSurrogate, `\u%04x is a high surrogate not followed by a \u low surrogate`, hi)
			}
			lo, ok := hex4(rest[2:])
			if !ok {
				p.pos += 6
				return nil, p.fail(ErrSyntax, `invalid \u escape, expected four hex digits`)
			}
			if lo < 0xDC00 || lo > 0xDFFF {
				return nil, p.fail(ErrLoneSurrogate, `\u%04x is a high surrogate followed by \u%04x, not a low surrogate`, hi, lo)
			}
			p.pos += 12
			return utf8.AppendRune(buf, 0x10000+(hi-0xD800)<<10+(lo-0xDC00)), nil
		}
		p.pos += 6
		return utf8.AppendRune(buf, hi), nil
	default:
		return nil, p.fail(ErrSyntax, "invalid escape sequence \\%s", printable(c))
	}
	p.pos += 2
	return append(buf, byte(r)), nil
}

func printable(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return string(rune(c))
	}
	return fmt.Sprintf("<0x%02x>", c)
}

// hex4 reads four hex digits.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// number parses a number token at p.pos and returns its canonical text.
func (p *parser) number() (string, error) {
	start := p.pos
	d := p.data
	i := p.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
		if i < len(d) && d[i] >= '0' && d[i] <= '9' {
			p.pos = i
			return "", p.fail(ErrSyntax, "number with a leading zero")
		}
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		return "", p.fail(ErrSyntax, "unexpected %s in a number, expected a digit", p.describe())
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return "", p.fail(ErrSyntax, "unexpected %s after a decimal point, expected a digit", p.describe())
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return "", p.fail(ErrSyntax, "unexpected %s in an exponent, expected a digit", p.describe())
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	text := string(d[start:i])
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) {
		// The grammar above is a subset of ParseFloat's, so the only
		// possible failure is overflow.
		return "", p.fail(ErrNumberRange, "%s overflows a double", clip(text))
	}
	p.pos = i
	return string(appendNumber(nil, f)), nil
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
