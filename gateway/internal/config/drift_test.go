package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// drift.recheck: absent is the default, 0 in any spelling is off, and any
// Go duration of at least 1s is taken as written.
func TestDriftRecheck(t *testing.T) {
	cases := []struct {
		src  string
		want time.Duration
	}{
		{"", DefaultDriftRecheck},
		{"drift:\n", DefaultDriftRecheck},
		{"drift: {}\n", DefaultDriftRecheck},
		{"drift: {recheck: 60s}\n", time.Minute},
		{"drift: {recheck: 2m}\n", 2 * time.Minute},
		{"drift: {recheck: 1h30m}\n", 90 * time.Minute},
		{"drift: {recheck: '90s'}\n", 90 * time.Second},
		{"drift: {recheck: 1s}\n", time.Second},
		{"drift: {recheck: 1.5s}\n", 1500 * time.Millisecond},
		{"drift: {recheck: 0}\n", 0},
		{"drift: {recheck: 0s}\n", 0},
		{"drift: {recheck: '0'}\n", 0},
		{"drift: {recheck: -0}\n", 0},
		{"drift:\n  recheck: 0m\n", 0},
		{`{"drift": {"recheck": "45s"}}`, 45 * time.Second},
		{"shutdownTimeout: &t 5m\ndrift: {recheck: *t}\n", 5 * time.Minute},
	}
	for _, tc := range cases {
		c, err := Parse([]byte(tc.src), "gh.yaml", "/srv")
		if err != nil {
			t.Errorf("%q: %v", tc.src, err)
			continue
		}
		if c.Drift.Recheck != tc.want || c.Drift.RecheckOff() != (tc.want == 0) {
			t.Errorf("%q: recheck %v (off %v), want %v", tc.src, c.Drift.Recheck, c.Drift.RecheckOff(), tc.want)
		}
	}
}

// Each way drift.recheck can be wrong is a *Error naming the field, what is
// wrong and the fix, and nothing is started with it.
func TestDriftRecheckErrors(t *testing.T) {
	cases := []struct {
		name, src, field, msg string
	}{
		{"negative", "drift: {recheck: -5s}\n", "drift.recheck", "must not be negative"},
		{"negative minutes", "drift: {recheck: -1m}\n", "drift.recheck", "must not be negative"},
		{"below 1s", "drift: {recheck: 500ms}\n", "drift.recheck", "storm"},
		{"just below 1s", "drift: {recheck: 999ms}\n", "drift.recheck", "below 1s"},
		{"one nanosecond", "drift: {recheck: 1ns}\n", "drift.recheck", "below 1s"},
		{"no unit", "drift: {recheck: 60}\n", "drift.recheck", `"60" has no unit`},
		{"no unit, quoted", "drift: {recheck: '60'}\n", "drift.recheck", `"60" has no unit`},
		{"no unit, fraction", "drift: {recheck: 1.5}\n", "drift.recheck", "has no unit"},
		{"not a duration", "drift: {recheck: soon}\n", "drift.recheck", `"soon" is not a duration`},
		{"a word for off", "drift: {recheck: off}\n", "drift.recheck", "is not a duration"},
		{"a boolean", "drift: {recheck: false}\n", "drift.recheck", "is not a duration"},
		{"a day unit", "drift: {recheck: 1d}\n", "drift.recheck", "is not a duration"},
		{"overflow", "drift: {recheck: 9999999999h}\n", "drift.recheck", "is not a duration"},
		{"empty string", "drift: {recheck: ''}\n", "drift.recheck", "is not a duration"},
		{"null", "drift: {recheck: }\n", "drift.recheck", "has no value"},
		{"tilde", "drift: {recheck: ~}\n", "drift.recheck", "has no value"},
		{"a list", "drift: {recheck: [60s]}\n", "drift.recheck", "not a list or a mapping"},
		{"a mapping", "drift: {recheck: {every: 60s}}\n", "drift.recheck", "not a list or a mapping"},
		{"twice", "drift: {recheck: 60s, recheck: 2m}\n", "drift.recheck", "given twice"},
		{"drift a duration", "drift: 60s\n", "drift", "must be a mapping"},
		{"drift a list", "drift: [60s]\n", "drift", "must be a mapping"},
		{"unknown field", "drift: {recheck: 60s, interval: 5s}\n", "drift", `unknown field "interval"`},
		{"misspelt", "drift: {recheckk: 60s}\n", "drift", `unknown field "recheckk"`},
		{"merge key", "drift: {<<: {recheck: 60s}}\n", "drift", `unknown field "<<"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.src), "gh.yaml", "/srv")
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (config %+v), want *Error", err, c)
			}
			if ce.File != "gh.yaml" || ce.Field != tc.field || !strings.Contains(ce.Msg, tc.msg) {
				t.Errorf("got file=%q field=%q msg=%q; want field %q msg containing %q", ce.File, ce.Field, ce.Msg, tc.field, tc.msg)
			}
			if ce.Fix == "" {
				t.Errorf("no fix in %v", ce)
			}
			if tc.field == "drift.recheck" && tc.name != "twice" && !strings.Contains(ce.Fix, "or 0 to turn") {
				t.Errorf("the fix does not say how to turn it off: %q", ce.Fix)
			}
		})
	}
}
