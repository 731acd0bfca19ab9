package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// A tiny WordNet: "bug" is a defect (a glitch) and an insect (an animal
// sense, dropped); "notify" derives "notification".
const (
	testNounData = `  1 license header
00000001 06 n 02 bug 0 glitch 0 001 @ 00000002 n 0000 | a fault
00000002 06 n 02 defect 0 fault 0 000 | imperfection
00000003 05 n 01 bug 1 001 @ 00000004 n 0000 | an insect
00000004 05 n 01 insect 0 000 | an animal
00000005 10 n 01 notification 0 001 + 00000011 v 0101 | informing
`
	testNounIndex = `  1 license header
bug n 2 1 @ 2 1 00000001 00000003
defect n 1 0 1 1 00000002
notification n 1 1 + 1 1 00000005
`
	testVerbData = `  1 license header
00000011 32 v 01 notify 0 001 + 00000005 n 0101 01 + 08 00 | inform
`
	testVerbIndex = `  1 license header
notify v 1 1 + 1 1 00000011
`
)

func testSources() []source {
	return []source{
		{pos: "noun", index: strings.NewReader(testNounIndex), data: strings.NewReader(testNounData)},
		{pos: "verb", index: strings.NewReader(testVerbIndex), data: strings.NewReader(testVerbData)},
	}
}

func TestBuild(t *testing.T) {
	o := options{senses: 2, maxSynset: 8, hypernyms: true, derived: true, minTagged: 1}
	tab, err := build(testSources(), o)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tab.write(&buf, o); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(buf.String(), "\n") {
		if l != "" && l[0] != '#' {
			lines = append(lines, l)
		}
	}
	want := []string{
		"bug|glitch|defect fault|", // not "insect": an animal sense
		"defect|fault||",
		"notification|||notify",
		"notify|||notification",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("table:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	o.minTagged = 2 // no word of the tiny WordNet has two tagged senses
	tab, err = build(testSources(), o)
	if err != nil || len(tab) != 0 {
		t.Fatalf("min-tagged 2: %v, %v", tab, err)
	}
}

func TestBuildMissingSynset(t *testing.T) {
	srcs := testSources()
	srcs[0].index = strings.NewReader("bug n 1 0 1 1 00000099\n")
	if _, err := build(srcs, options{senses: 1, maxSynset: 8, minTagged: 1}); err == nil || !strings.Contains(err.Error(), "no synset 99") {
		t.Fatalf("got %v", err)
	}
}

func TestParseDataErrors(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       error
	}{
		{"short", "00000001 06 n", errShort},
		{"offset", "x 06 n 01 bug 0 000 | g", errNumber},
		{"negative offset", "-1 06 n 01 bug 0 000 | g", errNumber},
		{"lexicographer file", "1 x n 01 bug 0 000 | g", errNumber},
		{"word count", "1 06 n zz bug 0 000 | g", errNumber},
		{"no words", "1 06 n 00 000 | g", errCount},
		{"words end early", "1 06 n 03 bug 0 | g", errShort},
		{"no pointer count", "1 06 n 01 bug 0 | g", errShort},
		{"pointer count", "1 06 n 01 bug 0 x | g", errNumber},
		{"pointers end early", "1 06 n 01 bug 0 002 @ 2 n 0000 | g", errShort},
		{"pointer offset", "1 06 n 01 bug 0 001 @ x n 0000 | g", errNumber},
		{"pointer source/target", "1 06 n 01 bug 0 001 @ 2 n zzzz | g", errNumber},
		{"pointer part of speech", "1 06 n 01 bug 0 001 @ 2 nn 0000 | g", errNumber},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := parseData(tc.line); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	off, s, err := parseData("00000005 10 n 01 notification 0 001 + 00000011 v 0102 | informing")
	if err != nil || off != 5 || s.lexFile != 10 || s.words[0] != "notification" || s.ptrs[0] != (pointer{"+", 11, 'v', 1, 2}) {
		t.Fatalf("got %d %+v %v", off, s, err)
	}
}

func TestParseIndexErrors(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       error
	}{
		{"short", "bug n 1", errShort},
		{"synset count", "bug n x 0 1 1 1", errNumber},
		{"zero synsets", "bug n 0 0 1 1", errNumber},
		{"pointer count", "bug n 1 x 1 1 1", errNumber},
		{"too few offsets", "bug n 2 0 2 1 1", errCount},
		{"too many offsets", "bug n 1 0 1 1 1 2", errCount},
		{"tagged count", "bug n 1 0 1 x 1", errNumber},
		{"offset", "bug n 1 0 1 1 x", errNumber},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseIndex(tc.line); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func FuzzParseData(f *testing.F) {
	f.Add("00000001 06 n 02 bug 0 glitch 0 001 @ 00000002 n 0000 | a fault")
	f.Add("00000011 32 v 01 notify 0 001 + 00000005 n 0101 01 + 08 00 | inform")
	f.Add("1 06 n ff")
	f.Fuzz(func(t *testing.T, line string) {
		_, s, err := parseData(line)
		if err == nil && len(s.words) == 0 {
			t.Fatalf("accepted a synset without words: %q", line)
		}
	})
}

func FuzzParseIndex(f *testing.F) {
	f.Add("bug n 2 1 @ 2 1 00000001 00000003")
	f.Add("notify v 1 1 + 1 1 00000011")
	f.Add("bug n 1 -5 1 1 1")
	f.Fuzz(func(t *testing.T, line string) {
		e, err := parseIndex(line)
		if err == nil && len(e.offsets) == 0 {
			t.Fatalf("accepted an entry without synsets: %q", line)
		}
	})
}
