package pin

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

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
