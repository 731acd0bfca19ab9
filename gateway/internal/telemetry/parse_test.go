package telemetry

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/internal/metrics"
)

// This file is a copy of internal/metrics/parse_test.go (where
// TestParserRejects proves it can fail), with expose added and the unused
// sample.label left out: a small, strict parser of the text exposition
// format 0.0.4, used to check that everything the catalogue makes package
// metrics write is valid. It accepts a subset of the grammar, the one
// package metrics promises to write: no blank lines, no comments other
// than HELP and TYPE, exactly one space between a series and its value, no
// timestamps, no trailing comma in label sets. Within that subset it is
// exact: escapes, names, values, family grouping and histogram consistency
// are all checked.

// expose returns the registry's exposition.
func expose(r *metrics.Registry) string {
	var b bytes.Buffer
	if _, err := r.WriteTo(&b); err != nil {
		panic(err)
	}
	return b.String()
}

var (
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	valueRE      = regexp.MustCompile(`^(?:[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]Inf|NaN)$`)
)

type label struct{ name, value string }

type sample struct {
	name   string
	labels []label
	value  float64
}

type parsedFamily struct {
	name, typ, help string
	hasHelp         bool
	samples         []sample
}

// belongs reports whether a sample name is one of the family's series.
func belongs(fam *parsedFamily, sampleName string) bool {
	if fam.typ == "histogram" {
		return sampleName == fam.name+"_bucket" || sampleName == fam.name+"_sum" || sampleName == fam.name+"_count"
	}
	if fam.typ == "summary" {
		return sampleName == fam.name || sampleName == fam.name+"_sum" || sampleName == fam.name+"_count"
	}
	return sampleName == fam.name
}

// parseExposition parses text and validates it; see the file comment.
func parseExposition(text string) ([]*parsedFamily, error) {
	if text != "" && !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("output does not end with a line feed")
	}
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("output is not valid UTF-8")
	}
	var fams []*parsedFamily
	byName := map[string]*parsedFamily{}
	seenSeries := map[string]bool{}
	var cur *parsedFamily
	get := func(name string) *parsedFamily {
		f := byName[name]
		if f == nil {
			f = &parsedFamily{name: name}
			byName[name] = f
			fams = append(fams, f)
		}
		return f
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		lines = nil
	}
	for n, line := range lines {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("line %d %q: %s", n+1, line, fmt.Sprintf(format, args...))
		}
		switch {
		case line == "":
			return nil, fail("blank line")
		case strings.HasPrefix(line, "# HELP "):
			rest := line[len("# HELP "):]
			name, doc, ok := strings.Cut(rest, " ")
			if !ok {
				return nil, fail("HELP without docstring")
			}
			if !metricNameRE.MatchString(name) {
				return nil, fail("invalid metric name %q", name)
			}
			f := get(name)
			if f.hasHelp {
				return nil, fail("second HELP for %s", name)
			}
			if len(f.samples) > 0 || f.typ != "" {
				return nil, fail("HELP after TYPE or samples of %s", name)
			}
			d, err := unescape(doc, false)
			if err != nil {
				return nil, fail("%v", err)
			}
			f.help, f.hasHelp = d, true
			cur = f
		case strings.HasPrefix(line, "# TYPE "):
			parts := strings.Split(line[len("# TYPE "):], " ")
			if len(parts) != 2 {
				return nil, fail("TYPE needs a name and a type")
			}
			name, typ := parts[0], parts[1]
			if !metricNameRE.MatchString(name) {
				return nil, fail("invalid metric name %q", name)
			}
			if !slices.Contains([]string{"counter", "gauge", "histogram", "summary", "untyped"}, typ) {
				return nil, fail("unknown type %q", typ)
			}
			f := get(name)
			if f.typ != "" {
				return nil, fail("second TYPE for %s", name)
			}
			if len(f.samples) > 0 {
				return nil, fail("TYPE after samples of %s", name)
			}
			if f.hasHelp && cur != f {
				return nil, fail("TYPE for %s not next to its HELP", name)
			}
			f.typ = typ
			cur = f
		case strings.HasPrefix(line, "#"):
			return nil, fail("comment line")
		default:
			s, err := parseSample(line)
			if err != nil {
				return nil, fail("%v", err)
			}
			if cur == nil || !belongs(cur, s.name) {
				// A sample of another family: it must be a new,
				// untyped one.
				if f := byName[s.name]; f != nil {
					return nil, fail("samples of %s are not contiguous", s.name)
				}
				for _, f := range fams {
					if belongs(f, s.name) {
						return nil, fail("samples of %s are not contiguous", f.name)
					}
				}
				cur = get(s.name)
				cur.typ = "untyped"
			}
			key := seriesKey(s.name, s.labels)
			if seenSeries[key] {
				return nil, fail("duplicate series")
			}
			seenSeries[key] = true
			cur.samples = append(cur.samples, s)
		}
	}
	for _, f := range fams {
		if err := checkFamily(f); err != nil {
			return nil, fmt.Errorf("family %s: %w", f.name, err)
		}
	}
	return fams, nil
}

func seriesKey(name string, ls []label) string {
	ls = slices.Clone(ls)
	slices.SortFunc(ls, func(a, b label) int { return strings.Compare(a.name, b.name) })
	var b strings.Builder
	b.WriteString(name)
	for _, l := range ls {
		fmt.Fprintf(&b, "\x00%s\x00%s", l.name, l.value)
	}
	return b.String()
}

// parseSample parses `name{l="v",...} value`.
func parseSample(line string) (sample, error) {
	var s sample
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("no value")
	}
	s.name = line[:i]
	if !metricNameRE.MatchString(s.name) {
		return s, fmt.Errorf("invalid metric name %q", s.name)
	}
	rest := line[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			eq := strings.IndexByte(rest, '=')
			if eq < 0 {
				return s, fmt.Errorf("label without '='")
			}
			name := rest[:eq]
			if !labelNameRE.MatchString(name) {
				return s, fmt.Errorf("invalid label name %q", name)
			}
			if strings.HasPrefix(name, "__") {
				return s, fmt.Errorf("reserved label name %q", name)
			}
			for _, l := range s.labels {
				if l.name == name {
					return s, fmt.Errorf("duplicate label %q", name)
				}
			}
			rest = rest[eq+1:]
			if rest == "" || rest[0] != '"' {
				return s, fmt.Errorf("label value not quoted")
			}
			rest = rest[1:]
			end := -1
			for j := 0; j < len(rest); j++ {
				if rest[j] == '\\' {
					j++
					continue
				}
				if rest[j] == '"' {
					end = j
					break
				}
			}
			if end < 0 {
				return s, fmt.Errorf("unterminated label value")
			}
			v, err := unescape(rest[:end], true)
			if err != nil {
				return s, err
			}
			s.labels = append(s.labels, label{name, v})
			rest = rest[end+1:]
			if strings.HasPrefix(rest, ",") {
				rest = rest[1:]
				if strings.HasPrefix(rest, "}") {
					return s, fmt.Errorf("trailing comma in label set")
				}
				continue
			}
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			return s, fmt.Errorf("expected ',' or '}' after label value")
		}
	}
	if !strings.HasPrefix(rest, " ") {
		return s, fmt.Errorf("expected one space before the value")
	}
	rest = rest[1:]
	if !valueRE.MatchString(rest) {
		return s, fmt.Errorf("invalid value %q", rest)
	}
	v, err := strconv.ParseFloat(rest, 64)
	if err != nil {
		return s, fmt.Errorf("value %q: %v", rest, err)
	}
	s.value = v
	return s, nil
}

// unescape undoes the format's escapes: \\ and \n, and \" in label values.
func unescape(s string, quoted bool) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("invalid UTF-8")
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if quoted && c == '"' {
			return "", fmt.Errorf("unescaped double quote")
		}
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(s) {
			return "", fmt.Errorf("dangling backslash")
		}
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case '"':
			if !quoted {
				return "", fmt.Errorf(`escape \" outside a label value`)
			}
			b.WriteByte('"')
		default:
			return "", fmt.Errorf("invalid escape \\%c", s[i])
		}
	}
	return b.String(), nil
}

// checkFamily validates the samples of one family against its type.
func checkFamily(f *parsedFamily) error {
	switch f.typ {
	case "counter":
		for _, s := range f.samples {
			if s.value < 0 {
				return fmt.Errorf("negative counter %v", s.value)
			}
		}
	case "histogram":
		return checkHistogram(f)
	}
	return nil
}

func checkHistogram(f *parsedFamily) error {
	type series struct {
		les      []float64
		counts   []float64
		sum      *float64
		count    *float64
		hasSum   bool
		hasCount bool
	}
	groups := map[string]*series{}
	var order []string
	for _, s := range f.samples {
		var rest []label
		le, hasLE := "", false
		for _, l := range s.labels {
			if l.name == "le" {
				le, hasLE = l.value, true
			} else {
				rest = append(rest, l)
			}
		}
		k := seriesKey("", rest)
		g := groups[k]
		if g == nil {
			g = &series{}
			groups[k] = g
			order = append(order, k)
		}
		switch s.name {
		case f.name + "_bucket":
			if !hasLE {
				return fmt.Errorf("bucket without le")
			}
			if g.hasSum || g.hasCount {
				return fmt.Errorf("bucket after _sum or _count")
			}
			b, err := strconv.ParseFloat(le, 64)
			if err != nil || !valueRE.MatchString(le) {
				return fmt.Errorf("le %q is not a float", le)
			}
			if n := len(g.les); n > 0 {
				if b <= g.les[n-1] {
					return fmt.Errorf("le %v not increasing", b)
				}
				if s.value < g.counts[n-1] {
					return fmt.Errorf("bucket le=%v count %v below the previous %v: not cumulative", b, s.value, g.counts[n-1])
				}
			}
			g.les = append(g.les, b)
			g.counts = append(g.counts, s.value)
		case f.name + "_sum":
			if hasLE {
				return fmt.Errorf("_sum with le")
			}
			v := s.value
			g.sum, g.hasSum = &v, true
		case f.name + "_count":
			if hasLE {
				return fmt.Errorf("_count with le")
			}
			v := s.value
			g.count, g.hasCount = &v, true
		}
	}
	for _, k := range order {
		g := groups[k]
		if len(g.les) == 0 || !math.IsInf(g.les[len(g.les)-1], +1) {
			return fmt.Errorf("no +Inf bucket")
		}
		if !g.hasSum || !g.hasCount {
			return fmt.Errorf("missing _sum or _count")
		}
		if *g.count != g.counts[len(g.counts)-1] {
			return fmt.Errorf("_count %v != +Inf bucket %v", *g.count, g.counts[len(g.counts)-1])
		}
	}
	return nil
}

// mustParse parses text or fails the test with the text.
func mustParse(t interface {
	Helper()
	Fatalf(string, ...any)
}, text string) []*parsedFamily {
	t.Helper()
	fams, err := parseExposition(text)
	if err != nil {
		t.Fatalf("exposition does not parse: %v\n%s", err, text)
	}
	return fams
}

// find returns the value of the sample with name and exactly the given
// labels (name=value pairs), and whether it exists.
func find(fams []*parsedFamily, name string, kv ...string) (float64, bool) {
	want := make([]label, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		want = append(want, label{kv[i], kv[i+1]})
	}
	key := seriesKey(name, want)
	for _, f := range fams {
		for _, s := range f.samples {
			if seriesKey(s.name, s.labels) == key {
				return s.value, true
			}
		}
	}
	return 0, false
}
