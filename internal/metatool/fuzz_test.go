package metatool

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzParseSearchArgs: any bytes either parse into a query the index reads
// and a limit from 1 to MaxLimit, agreeing with encoding/json on what the
// object holds, or are refused with an *ArgsError that says why.
func FuzzParseSearchArgs(f *testing.F) {
	for _, s := range []string{
		`{"query": "open a pull request"}`,
		`{"query": "send mail", "limit": 50}`,
		`{"query": "send mail", "limit": 2.5}`,
		`{"query": "the"}`,
		`{"query": 5}`,
		`{"query": "\ud800 x"}`,
		`{"limit": null, "query": "a", "query": "b c"}`,
		`[]`, `null`, ``, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ParseSearchArgs(data, DefaultLimit)
		if err != nil {
			var ae *ArgsError
			if !errors.As(err, &ae) || ae.Msg == "" {
				t.Fatalf("%q: %v is not an *ArgsError with a message", data, err)
			}
			return
		}
		if a.Parsed == nil || len(a.Parsed.Words()) == 0 || a.Limit < 1 || a.Limit > MaxLimit || !utf8.ValidString(a.Query) {
			t.Fatalf("%q: accepted %+v", data, a)
		}
		// Argument names are JSON Schema property names: exact and
		// case-sensitive ("lImit" is not "limit", as a server validating
		// the inputSchema would read it), so the oracle decodes the object
		// into a map, not into a struct (whose field matching ignores case).
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(data, &obj); err != nil {
			t.Fatalf("%q: accepted what encoding/json refuses: %v", data, err)
		}
		var query string
		if err := json.Unmarshal(obj["query"], &query); err != nil {
			t.Fatalf("%q: accepted a query encoding/json refuses: %v", data, err)
		}
		var limit *float64
		if l, ok := obj["limit"]; ok {
			if err := json.Unmarshal(l, &limit); err != nil {
				t.Fatalf("%q: accepted a limit encoding/json refuses: %v", data, err)
			}
		}
		if query != a.Query || (limit == nil && a.Limit != DefaultLimit) || (limit != nil && float64(a.Limit) != *limit) {
			t.Fatalf("%q: %+v, encoding/json reads %q %v", data, a, query, limit)
		}
	})
}
