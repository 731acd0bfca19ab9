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
		var in struct {
			Query string   `json:"query"`
			Limit *float64 `json:"limit"`
		}
		if err := json.Unmarshal(data, &in); err != nil {
			t.Fatalf("%q: accepted what encoding/json refuses: %v", data, err)
		}
		if in.Query != a.Query || (in.Limit == nil && a.Limit != DefaultLimit) || (in.Limit != nil && float64(a.Limit) != *in.Limit) {
			t.Fatalf("%q: %+v, encoding/json reads %q %v", data, a, in.Query, in.Limit)
		}
	})
}
