package toolsearch

import (
	"errors"
	"slices"
	"strings"
	"unicode"
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
// common words, each once, in order, and which of them are values (see
// ParseQuery). The index expands them (stems, synonyms, abbreviations) when
// it searches.
type Query struct {
	words []string
	kind  []valueKind // per word: whether it is a value, and how sure
	pairs []pair      // adjacent words that may be one word split in two ("on call": "oncall")
	hints []string    // words a value stands for ("url" for a URL)
	// action is what the request asks to do, as its verb or its question
	// form says (see requestAction).
	action action
}

// valueKind says whether a query word is an argument value rather than
// what the request asks to do.
type valueKind uint8

const (
	notValue  valueKind = iota
	softValue           // a capitalized word or one with digits: a value unless a tool's or server's name has it
	hardValue           // a word of a URL, path, e-mail address, quoted text, number, key:value or #name
)

// pair is two adjacent words of a request, as indexes into Query.words
// (-1 for a common word, which is not searched alone) and their join.
type pair struct {
	a, b   int
	joined string
}

// Words returns the query's words.
func (q *Query) Words() []string { return append([]string(nil), q.words...) }

// Values returns the query's words that were recognized as argument values
// (a URL, path, e-mail address, quoted text, number, or a capitalized or
// digit-bearing word that may be a proper name): the index weighs them down,
// except a name-like word that names a tool or a server.
func (q *Query) Values() []string {
	var out []string
	for i, k := range q.kind {
		if k != notValue {
			out = append(out, q.words[i])
		}
	}
	return out
}

// ParseQuery parses a search request. Control characters separate words
// like spaces; letters of any script are words; a query over MaxQueryBytes
// is cut, and only its first MaxQueryWords distinct words are kept. It
// fails with ErrEmptyQuery, ErrNoWords or ErrInvalidUTF8.
//
// The words of argument values are marked, so that a request is ranked by
// what it asks to do rather than by the values it carries: quoted text
// ("..." '...' `...` and typographic quotes), URLs, e-mail addresses,
// paths, dotted names (report.pdf, acme.io), key:value and image:tag
// tokens, keys and hashes (PROJ-12, 3f9a1c7), #channels and @handles, and
// numbers are values; a word
// capitalized inside the request or carrying digits ("Berlin", "Q3") is a
// value unless a tool's or server's name has it ("GitHub", "R2").
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
	q := &Query{}
	index := make(map[string]int, 8)
	prev := "" // the previous word, common or not, for pairs
	prevIdx := -1
	sentenceStart := true
	var buf, all []string // all: the words that are not values, in order, common ones included
	for _, tok := range tokens(s) {
		kind := tok.kind
		if kind == notValue {
			kind = classify(tok.text)
		}
		if hint := hintOf(tok.text, kind); hint != "" && !slices.Contains(q.hints, hint) {
			q.hints = append(q.hints, hint)
		}
		buf = words(buf[:0], tok.text)
		for _, w := range buf {
			k := kind
			if k == notValue && !sentenceStart && nameLike(tok.text, w) {
				k = softValue
			}
			sentenceStart = false
			if k != hardValue && len(all) < 2*MaxQueryWords {
				all = append(all, w)
			}
			i := -1
			_, stop := stopWords[w]
			if _, asks := questionWords[[2]string{prev, w}]; asks && prev == "how" {
				stop = true // "many" of "how many" is the question, not a word to find
			}
			if !stop {
				if j, ok := index[w]; ok {
					i = j
					q.kind[j] = min(q.kind[j], k) // said once as a value, once not: not a value
				} else if len(q.words) < MaxQueryWords {
					i = len(q.words)
					index[w] = i
					q.words = append(q.words, w)
					q.kind = append(q.kind, k)
				}
			}
			if prev != "" && k == notValue && (i >= 0 || prevIdx >= 0) && len(q.pairs) < MaxQueryWords {
				q.pairs = append(q.pairs, pair{a: prevIdx, b: i, joined: prev + w})
			}
			prev, prevIdx = w, i
			if k != notValue {
				prev, prevIdx = "", -1
			}
		}
		if tok.endsSentence {
			sentenceStart = true
			prev, prevIdx = "", -1
		}
	}
	if len(q.words) == 0 {
		return nil, ErrNoWords
	}
	q.action = requestAction(all)
	for _, h := range questionHints(all) {
		if !slices.Contains(q.hints, h) {
			q.hints = append(q.hints, h)
		}
	}
	return q, nil
}

// token is one whitespace-separated token of a request, or one quoted
// span.
type token struct {
	text         string
	kind         valueKind // hardValue for a quoted span, else decided by classify
	endsSentence bool      // the token ends with '.', '!', '?' or ':'
}

// quotes maps an opening quote to its closing one.
var quotes = map[rune]rune{'"': '"', '\'': '\'', '`': '`', '“': '”', '‘': '’', '«': '»'}

// tokens splits a request at spaces and control characters, keeping a
// quoted span whole. A quote opens a span only at the start of a token
// and closes it only at the end of one, so "today's" and "don't" quote
// nothing.
func tokens(s string) []token {
	var out []token
	isSpace := func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if isSpace(r) {
			i += size
			continue
		}
		if closing, ok := quotes[r]; ok {
			// Find the closing quote followed by a space, punctuation or the end.
			for j := i + size; j < len(s); {
				c, cs := utf8.DecodeRuneInString(s[j:])
				if c == closing {
					next, _ := utf8.DecodeRuneInString(s[j+cs:])
					if j+cs == len(s) || isSpace(next) || unicode.IsPunct(next) {
						if j > i+size {
							out = append(out, token{text: s[i+size : j], kind: hardValue})
						}
						i = j + cs
						goto next
					}
				}
				j += cs
			}
		}
		{
			j := i
			for j < len(s) {
				c, cs := utf8.DecodeRuneInString(s[j:])
				if isSpace(c) {
					break
				}
				j += cs
			}
			t := s[i:j]
			trimmed := strings.TrimRight(t, ",;)]}>\"'`”’")
			ends := strings.HasSuffix(trimmed, ".") || strings.HasSuffix(trimmed, "!") ||
				strings.HasSuffix(trimmed, "?") || strings.HasSuffix(trimmed, ":")
			out = append(out, token{text: t, endsSentence: ends})
			i = j
		}
	next:
	}
	return out
}

// classify says whether a token (not quoted) is an argument value.
func classify(t string) valueKind {
	t = strings.Trim(t, ",;:!?()[]{}<>\"'`“”‘’")
	t = strings.TrimSuffix(t, ".")
	if t == "" {
		return notValue
	}
	switch {
	case strings.Contains(t, "://"), strings.HasPrefix(strings.ToLower(t), "www."):
		return hardValue // a URL
	case strings.HasPrefix(t, "#"), strings.HasPrefix(t, "@"), strings.HasPrefix(t, "~"), strings.HasPrefix(t, "$"):
		return hardValue // a channel, a handle, a home path, a variable
	case strings.ContainsAny(t, "/\\@=*{}[]"):
		return hardValue // a path, an e-mail address, an expression
	}
	digits, inner := true, false
	for i, r := range t {
		if !unicode.IsDigit(r) && r != ',' && r != '.' {
			digits = false
		}
		if (r == '.' || r == ':') && i > 0 && i < len(t)-1 {
			inner = true // report.pdf, acme.io, 1.2.3, nginx:latest, session:abc
		}
	}
	if digits || inner || identifier(t) || clockTime(t) {
		return hardValue
	}
	return notValue
}

// clockTime says whether a token is a time of day: "9am", "10:30",
// "7.45pm", "17h" (not "10.30", a number, nor "10:30:00").
func clockTime(t string) bool {
	t = strings.ToLower(strings.Trim(t, ",;!?()[]{}<>\"'`“”‘’"))
	t = strings.TrimSuffix(t, ".")
	rest := strings.TrimRight(t, "apmh")
	suffix := t[len(rest):]
	switch suffix {
	case "am", "pm", "h", "":
	default:
		return false
	}
	hh, mm, colon := strings.Cut(rest, ":")
	if !colon && (suffix == "am" || suffix == "pm") {
		hh, mm, colon = strings.Cut(rest, ".") // "7.45pm"; "10.30" is a number
	}
	if hh == "" || len(hh) > 2 || strings.Trim(hh, "0123456789") != "" {
		return false
	}
	if colon && (len(mm) != 2 || strings.Trim(mm, "0123456789") != "") {
		return false
	}
	return colon || suffix != ""
}

// identifier says whether a token is a key or a hash: letters and digits
// joined by a hyphen or underscore (PROJ-12, INC_2041, gpt-4), or seven
// hex digits or more with a digit and a letter among them (a commit).
func identifier(t string) bool {
	var letter, digit, joined, hex bool
	hex = len(t) >= 7
	for _, r := range t {
		switch {
		case unicode.IsDigit(r):
			digit = true
		case unicode.IsLetter(r):
			letter = true
			if !strings.ContainsRune("abcdefABCDEF", r) {
				hex = false
			}
		case r == '-' || r == '_':
			joined = true
			hex = false
		default:
			hex = false
		}
	}
	return letter && digit && (joined || hex)
}

// hintOf returns the word a value stands for, if it says one: "url" for a
// URL or a domain, "email" for an e-mail address, "path" for a path.
func hintOf(t string, k valueKind) string {
	if k != hardValue {
		return ""
	}
	t = strings.Trim(t, ",;:!?()[]{}<>\"'`")
	switch {
	case strings.Contains(t, "://"), strings.HasPrefix(strings.ToLower(t), "www."):
		return "url"
	case strings.Contains(t, "@") && strings.Contains(t[strings.Index(t, "@"):], ".") && !strings.HasPrefix(t, "@"):
		return "email"
	case strings.HasPrefix(t, "~/"), strings.HasPrefix(t, "./"), strings.HasPrefix(t, "/") && len(t) > 1:
		return "path"
	}
	if clockTime(t) {
		return "time"
	}
	// A dotted name: a domain ("acme.io") is a URL's, a name with an
	// extension ("notes.txt", "Projects/Gatehouse.md") a file's.
	t = strings.TrimSuffix(t, ".")
	dot := strings.LastIndexByte(t, '.')
	if dot <= 0 || dot == len(t)-1 || strings.ContainsAny(t, ":") {
		return ""
	}
	ext := strings.ToLower(t[dot+1:])
	if _, ok := domainSuffixes[ext]; ok && !strings.Contains(t, "/") {
		return "url"
	}
	if len(ext) > 5 || ext[0] < 'a' || ext[0] > 'z' {
		return "" // "spec.replicas", "1.2.3": no extension
	}
	for i := 0; i < len(ext); i++ {
		if (ext[i] < 'a' || ext[i] > 'z') && (ext[i] < '0' || ext[i] > '9') {
			return ""
		}
	}
	return "file"
}

// domainSuffixes are the top-level domains a name ending in one is taken
// for a web address by ("github.com", "acme.io"): the generic ones and the
// country codes sites use as generic ones. Others ("report.md", "run.sh")
// end file names far more often in a request to tools.
var domainSuffixes = setOf("com", "org", "net", "edu", "gov", "io", "ai", "dev", "app", "co", "me", "info", "biz",
	"tv", "ly", "us", "uk", "eu", "de", "fr", "ca", "au", "jp", "cn", "ru", "nl", "cloud", "site", "xyz", "tech")

// nameLike says whether word w of token t may be a proper name or a code:
// the token is capitalized or carries digits, and w is not a word the
// search's tables know (a verb, a catalog noun, an abbreviation).
func nameLike(t, w string) bool {
	caps := false
	for _, r := range t {
		if unicode.IsUpper(r) || unicode.IsDigit(r) {
			caps = true
			break
		}
	}
	if !caps {
		return false
	}
	_, known := tableWords[w]
	return !known
}
