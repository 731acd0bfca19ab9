package toolsearch

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// words splits text into lowercase words: at every rune that is neither a
// letter nor a digit (spaces, punctuation, '_', '-', '.', '/', control
// characters), at a lower-to-upper case change ("listPullRequests"), at the
// end of an acronym ("HTTPServer" gives "http", "server") and between
// letters and digits ("v2beta" gives "v", "2", "beta"), except that a run of
// letters and digits that is a known abbreviation ("k8s", "s3", "ec2") stays
// whole. Words are appended to dst.
func words(dst []string, text string) []string {
	start := -1 // byte offset of the current alphanumeric run
	for i, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			dst = splitRun(dst, text[start:i])
			start = -1
		}
	}
	if start >= 0 {
		dst = splitRun(dst, text[start:])
	}
	return dst
}

// splitRun splits one run of letters and digits at case and digit
// boundaries.
func splitRun(dst []string, run string) []string {
	if _, ok := alnumWords[strings.ToLower(run)]; ok {
		return append(dst, strings.ToLower(run))
	}
	start := 0
	var prev rune
	prevSize := 0
	for i, r := range run {
		if i > 0 {
			split := false
			switch {
			case unicode.IsDigit(r) != unicode.IsDigit(prev):
				split = true
			case unicode.IsUpper(r) && unicode.IsLower(prev):
				split = true
			case r == 's' && i+1 == len(run) && unicode.IsUpper(prev):
				// "listPRs", "userIDs", "URLs": an acronym's plural stays
				// with it.
			case unicode.IsLower(r) && unicode.IsUpper(prev) && i-prevSize > start:
				// "HTTPServer": the 'S' before "erver" starts a word; the
				// acronym ends before it.
				dst = appendLower(dst, run[start:i-prevSize])
				start = i - prevSize
			}
			if split {
				dst = appendLower(dst, run[start:i])
				start = i
			}
		}
		prev, prevSize = r, utf8.RuneLen(r)
	}
	return appendLower(dst, run[start:])
}

func appendLower(dst []string, w string) []string {
	if w == "" {
		return dst
	}
	return append(dst, strings.ToLower(w))
}

// stem strips a few English suffixes so that the forms of a word meet:
// plurals ("repositories", "branches", "files"), "-ing" and "-ed"
// ("creating", "created") and a final "-e" ("create"), so that
// "create", "creates", "created" and "creating" all give "creat". It is
// deliberately light (no derivational suffixes: "reaction" is not "react",
// "server" is not "serve"); the index and the query use the same function,
// so a stem only has to be consistent, not a word. "-ing" and "-ed" go
// only when a vowel is left ("string" stays). The final "-e" follows
// Porter's rule, so that short words keep apart: it goes when more than
// one vowel-consonant run comes before it ("delete", "update"), or one
// that does not end consonant-vowel-consonant ("create", "merge"); it stays
// after one that does ("state" is not "stat", "note" not "not", "make",
// "file"), and "-ing" or "-ed" taken from such a stem gives it back
// ("making", "noted", "stating"). A few words that only look plural stay
// whole ("news" is not "new"). Words of three letters or fewer, and words
// with a digit or a non-ASCII letter, are left alone.
func stem(w string) string {
	if len(w) <= 3 || !isASCIILetters(w) {
		return w
	}
	switch w {
	case "news", "atlas", "bias", "cosmos", "canvas", "alias", "aliases":
		if w == "aliases" {
			return "alias"
		}
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"), strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "zes"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
		// "access", "status", "analysis": not plurals
	case strings.HasSuffix(w, "s"):
		w = w[:len(w)-1]
	}
	switch {
	case strings.HasSuffix(w, "ment") && len(w) >= 9:
		w = w[:len(w)-4] // "deployment", "attachment"; not "document", "comment"
	case (strings.HasSuffix(w, "tion") || strings.HasSuffix(w, "sion")) && len(w) >= 8:
		w = w[:len(w)-3] // "deletion", "execution", "selection": the verb's stem
		if strings.HasSuffix(w, "at") && len(w) >= 7 && !strings.HasSuffix(w, "eat") {
			w = w[:len(w)-2] + "e" // "configuration", "organization": "configure", "organize"
		}
	}
	cut := ""
	switch {
	case strings.HasSuffix(w, "ing") && len(w) >= 6 && hasVowel(w[:len(w)-3]):
		cut = w[:len(w)-3]
	case strings.HasSuffix(w, "ed") && len(w) >= 5 && !strings.HasSuffix(w, "eed") && hasVowel(w[:len(w)-2]):
		cut = w[:len(w)-2]
	}
	if cut != "" {
		if u := undouble(cut); u != cut {
			return u // "running": "run"
		}
		if measure(cut) == 1 && endsCVC(cut) {
			return cut + "e" // "making": "make", as "make" stays
		}
		w = cut
		if strings.HasSuffix(cut, "u") {
			w = cut + "e" // "queued", "issued": as "queue", "issue" go
		}
	}
	if n := len(w); n >= 4 && w[n-1] == 'e' && w[n-2] != 'e' {
		if m := measure(w[:n-1]); m > 1 || m == 1 && !endsCVC(w[:n-1]) {
			w = w[:n-1]
		}
	}
	return w
}

// vowelAt says whether w[i] is a vowel: a, e, i, o, u, and y after a
// consonant ("type", not "yes").
func vowelAt(w string, i int) bool {
	switch w[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return true
	case 'y':
		return i > 0 && !vowelAt(w, i-1)
	}
	return false
}

// measure is Porter's m: how many vowel-then-consonant runs w has
// ("tree" 0, "stat" 1, "updat" 2).
func measure(w string) int {
	m, inVowel := 0, false
	for i := range len(w) {
		v := vowelAt(w, i)
		if !v && inVowel {
			m++
		}
		inVowel = v
	}
	return m
}

// endsCVC says whether w ends consonant-vowel-consonant, the last not w,
// x or y ("stat", "mak"; not "creat", "show").
func endsCVC(w string) bool {
	n := len(w)
	if n < 3 || vowelAt(w, n-3) || !vowelAt(w, n-2) || vowelAt(w, n-1) {
		return false
	}
	c := w[n-1]
	return c != 'w' && c != 'x' && c != 'y'
}

// undouble drops the second of a final doubled consonant ("runn" to
// "run"), except for the doublings English keeps ("ll", "ss", "zz").
func undouble(w string) string {
	n := len(w)
	if n >= 4 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiouylsz", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

// hasVowel says whether w has a vowel ("str" of "string" has none, so
// "string" keeps its "-ing").
func hasVowel(w string) bool {
	return strings.ContainsAny(w, "aeiouy")
}

func isASCIILetters(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}
