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
