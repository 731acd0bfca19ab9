package main

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// errEmptyCommand is returned by splitWords for a command with no words.
var errEmptyCommand = errors.New("empty command")

// splitWords splits a command line into words the way a POSIX shell would for
// the simple cases that matter here: words separated by blanks, '...' taken
// literally, "..." with \" and \\ escapes, and a backslash outside quotes
// escaping the next character. No expansion of any kind is done.
func splitWords(s string) ([]string, error) {
	var (
		words   []string
		cur     strings.Builder
		inWord  bool
		quote   rune // 0, '\'' or '"'
		escaped bool
	)
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			default:
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote = r
			inWord = true
		case r == '\\':
			escaped = true
			inWord = true
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if escaped {
		return nil, errors.New("command ends with a lone backslash")
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in command", quote)
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errEmptyCommand
	}
	return words, nil
}

// parseHeader parses one -header value, "Name: value". The name must be an
// HTTP token and the value must not contain control characters other than tab
// (no CR or LF, so no header injection).
func parseHeader(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, ":")
	if !ok {
		return "", "", fmt.Errorf("header %q: want \"Name: value\"", s)
	}
	if name == "" {
		return "", "", fmt.Errorf("header %q: empty name", s)
	}
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			return "", "", fmt.Errorf("header %q: invalid character %q in name", s, name[i])
		}
	}
	value = strings.Trim(value, " \t")
	for i := 0; i < len(value); i++ {
		if c := value[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return "", "", fmt.Errorf("header %q: control character in value", s)
		}
	}
	return http.CanonicalHeaderKey(name), value, nil
}

// isTokenChar reports whether c may appear in an HTTP token (RFC 9110 §5.6.2).
func isTokenChar(c byte) bool {
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// headerList is a repeatable -header flag.
type headerList []string

func (h *headerList) String() string { return strings.Join(*h, ", ") }

func (h *headerList) Set(s string) error {
	if _, _, err := parseHeader(s); err != nil {
		return err
	}
	*h = append(*h, s)
	return nil
}

// maxTokenFile bounds a -token-file: a bearer token is a line, and the
// gateway refuses JWTs over 16 KiB anyway.
const maxTokenFile = 64 << 10

// parseToken returns the bearer token in the contents of a -token-file: one
// token in the RFC 6750 b64token syntax (letters, digits, "-._~+/", then
// any "=" padding), optionally surrounded by blanks and line ends, as a shell
// redirect or an editor leaves it. Anything else is an error naming what is
// wrong, never the token.
func parseToken(b []byte) (string, error) {
	if len(b) > maxTokenFile {
		return "", fmt.Errorf("token file has %d bytes, more than %d", len(b), maxTokenFile)
	}
	s := strings.Trim(string(b), " \t\r\n")
	if s == "" {
		return "", errors.New("token file is empty")
	}
	pad := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '=':
			if i == 0 {
				return "", errors.New("token file: the token begins with '='")
			}
			pad = true
		case pad:
			return "", fmt.Errorf("token file: character %d follows '=' padding", i+1)
		case c == '\n' || c == '\r':
			return "", errors.New("token file holds more than one line")
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte("-._~+/", c) >= 0:
		default:
			return "", fmt.Errorf("token file: byte %d (%#02x) is not a bearer token character (RFC 6750 b64token)", i+1, c)
		}
	}
	return s, nil
}
