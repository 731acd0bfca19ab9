package console

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestParseAuditQuery(t *testing.T) {
	q, _ := url.ParseQuery("chain=gw%2Fa&subject=alice&kind=trust&since=2026-03-01&until=2026-03-02T10:00:00%2B02:00&after=7")
	f, err := ParseAuditQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	if f.Chain != "gw/a" || f.Subject != "alice" || f.Kind != "trust" || f.AfterID != 7 ||
		!f.Since.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) || !f.Until.Equal(time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)) {
		t.Fatalf("%+v", f)
	}
	if f, err := ParseAuditQuery(url.Values{"since": {"2026-03-01T09:30"}, "after": {""}, "kind": {""}}); err != nil || f.Since.Hour() != 9 || f.AfterID != 0 {
		t.Fatalf("datetime-local: %+v %v", f, err)
	}
}

// TestParseAuditQueryErrors: each way the audit page's query can be wrong
// is an *AuditFilterError naming the parameter.
func TestParseAuditQueryErrors(t *testing.T) {
	for _, tc := range []struct{ name, query, param, msg string }{
		{"unknown parameter", "tool=x", "tool", "is not a filter"},
		{"repeated parameter", "subject=a&subject=b", "subject", "more than once"},
		{"control character", "subject=a%0Ab", "subject", "control characters"},
		{"delete character", "kind=a%7Fb", "kind", "control characters"},
		{"invalid UTF-8", "chain=%FF", "chain", "control characters"},
		{"too long", "chain=" + strings.Repeat("a", 513), "chain", "512 bytes"},
		{"since not a time", "since=yesterday", "since", "is not a time"},
		{"until not a time", "until=2026-13-01", "until", "is not a time"},
		{"since without zone", "since=2026-03-01T10:00:00", "since", "is not a time"},
		{"until not after since", "since=2026-03-02&until=2026-03-01", "until", "after since"},
		{"until equal to since", "since=2026-03-02&until=2026-03-02", "until", "after since"},
		{"after negative", "after=-1", "after", "not an entry ID"},
		{"after not a number", "after=1e3", "after", "not an entry ID"},
		{"after too big", "after=99999999999999999999", "after", "not an entry ID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ParseAuditQuery(q)
			var fe *AuditFilterError
			if !errors.As(err, &fe) || fe.Param != tc.param || !strings.Contains(fe.Msg, tc.msg) {
				t.Fatalf("err = %v, want %s: ...%s", err, tc.param, tc.msg)
			}
		})
	}
}

// FuzzParseAuditQuery: any query is either refused with an
// *AuditFilterError naming one of its parameters, or read into a filter
// that holds exactly its text values, with since before until.
func FuzzParseAuditQuery(f *testing.F) {
	for _, s := range []string{"", "chain=operator&subject=alice&kind=trust", "since=2026-03-01&until=2026-03-02", "after=12",
		"since=2026-03-01T10:00:00Z&until=2026-03-01T09:00:00Z", "subject=a%00b", "x=1&x=2", "after=-0", "since=2026-02-30"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		flt, err := ParseAuditQuery(q)
		if err != nil {
			var fe *AuditFilterError
			if !errors.As(err, &fe) || !q.Has(fe.Param) || fe.Msg == "" {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		for k, got := range map[string]string{"chain": flt.Chain, "subject": flt.Subject, "kind": flt.Kind} {
			if got != q.Get(k) || !utf8.ValidString(got) || len(got) > maxFilterLen {
				t.Fatalf("%q: %s = %q", raw, k, got)
			}
		}
		if !flt.Since.IsZero() && !flt.Until.IsZero() && !flt.Since.Before(flt.Until) {
			t.Fatalf("%q: since %v not before until %v", raw, flt.Since, flt.Until)
		}
		if flt.AfterID < 0 || flt.Limit != 0 {
			t.Fatalf("%q: %+v", raw, flt)
		}
	})
}
