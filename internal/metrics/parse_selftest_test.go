package metrics

import (
	"strings"
	"testing"
)

// TestParserRejects proves the test parser can fail: every way the output
// could be wrong is refused, so the tests that run it on real output mean
// something.
func TestParserRejects(t *testing.T) {
	const ok = "# HELP a_total Help.\n# TYPE a_total counter\na_total{x=\"1\"} 2\n"
	if _, err := parseExposition(ok); err != nil {
		t.Fatalf("valid input refused: %v", err)
	}
	hist := func(body string) string { return "# TYPE h histogram\n" + body }
	cases := map[string]string{
		"no final newline":          strings.TrimSuffix(ok, "\n"),
		"blank line":                ok + "\n",
		"other comment":             "# hello\n",
		"bad metric name":           "1a 1\n",
		"bad metric name in TYPE":   "# TYPE a-b counter\n",
		"unknown type":              "# TYPE a countr\n",
		"second TYPE":               "# TYPE a counter\n# TYPE a counter\n",
		"second HELP":               "# HELP a x\n# HELP a y\n",
		"TYPE after samples":        "a 1\n# TYPE a counter\n",
		"HELP bad escape":           "# HELP a bad \\t escape\n",
		"HELP quote escape":         "# HELP a bad \\\" escape\n",
		"HELP dangling backslash":   "# HELP a bad \\\n",
		"bad label name":            "a{1x=\"v\"} 1\n",
		"reserved label name":       "a{__x=\"v\"} 1\n",
		"duplicate label":           "a{x=\"1\",x=\"2\"} 1\n",
		"unquoted label value":      "a{x=1} 1\n",
		"unterminated label value":  "a{x=\"1} 1\n",
		"bad label escape":          "a{x=\"\\t\"} 1\n",
		"unescaped quote":           "a{x=\"a\"b\"} 1\n",
		"trailing comma":            "a{x=\"1\",} 1\n",
		"missing close brace":       "a{x=\"1\" 1\n",
		"two spaces":                "a  1\n",
		"no value":                  "a\n",
		"bad value":                 "a one\n",
		"hex value":                 "a 0x10\n",
		"timestamp":                 "a 1 1700000000\n",
		"duplicate series":          "a{x=\"1\"} 1\na{x=\"1\"} 2\n",
		"not contiguous":            "a 1\nb 1\na{x=\"1\"} 2\n",
		"negative counter":          "# TYPE a counter\na -1\n",
		"invalid UTF-8":             "a{x=\"\xff\"} 1\n",
		"histogram no +Inf":         hist("h_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n"),
		"histogram not cumulative":  hist("h_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n"),
		"histogram le decreasing":   hist("h_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n"),
		"histogram count mismatch":  hist("h_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n"),
		"histogram missing sum":     hist("h_bucket{le=\"+Inf\"} 1\nh_count 1\n"),
		"histogram bucket no le":    hist("h_bucket 1\nh_sum 1\nh_count 1\n"),
		"histogram le not a number": hist("h_bucket{le=\"x\"} 1\nh_sum 1\nh_count 1\n"),
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			if fams, err := parseExposition(in); err == nil {
				t.Fatalf("accepted %q: %+v", in, fams)
			}
		})
	}
}
