package toolsearch

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// Limits of a query.
const (
	// MaxQueryBytes is how much of a query is read; the rest is ignored
	// (cut at a character boundary).
	MaxQueryBytes = 1024
	// MaxQueryWords is how many distinct words of a query are searched;
	// later ones are ignored.
	MaxQueryWords = 32
)

// Errors of ParseQuery.
var (
	// ErrEmptyQuery is returned for a query that is empty or only spaces.
	ErrEmptyQuery = errors.New("toolsearch: empty query")
	// ErrNoWords is returned for a query with nothing to search: only
	// punctuation, symbols, control characters or common words ("the",
	// "what", "please").
	ErrNoWords = errors.New("toolsearch: query has no words to search (only punctuation, symbols or common words)")
	// ErrInvalidUTF8 is returned for a query that is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("toolsearch: query is not valid UTF-8")
)

// A Query is a parsed search request: its words, lowercased, split as
// documents are (snake_case, camelCase, kebab-case, dots, digits), without
// common words, each once, in order. The index expands them (stems,
// synonyms, abbreviations) when it searches.
type Query struct {
	words []string
}

// Words returns the query's words.
func (q *Query) Words() []string { return append([]string(nil), q.words...) }

// ParseQuery parses a search request. Control characters separate words
// like spaces; letters of any script are words; a query over MaxQueryBytes
// is cut, and only its first MaxQueryWords distinct words are kept. It
// fails with ErrEmptyQuery, ErrNoWords or ErrInvalidUTF8.
func ParseQuery(s string) (*Query, error) {
	if !utf8.ValidString(s) {
		return nil, ErrInvalidUTF8
	}
	if len(s) > MaxQueryBytes {
		cut := MaxQueryBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	if strings.TrimSpace(s) == "" {
		return nil, ErrEmptyQuery
	}
	all := words(nil, s)
	q := &Query{}
	seen := make(map[string]bool, len(all))
	for _, w := range all {
		if _, stop := stopWords[w]; stop || seen[w] {
			continue
		}
		seen[w] = true
		q.words = append(q.words, w)
		if len(q.words) == MaxQueryWords {
			break
		}
	}
	if len(q.words) == 0 {
		return nil, ErrNoWords
	}
	return q, nil
}
