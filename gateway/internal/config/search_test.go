package config

import (
	"errors"
	"strings"
	"testing"
)

// search: absent is auto (the stable list for callers over the budget)
// with 8 hits; enabled true or false is taken as written, and so is a
// limit from 1 to 50.
func TestSearch(t *testing.T) {
	cases := []struct {
		src           string
		always, off   bool
		limit         int
		enabledAbsent bool
	}{
		{"", false, false, 8, true},
		{"search:\n", false, false, 8, true},
		{"search: {}\n", false, false, 8, true},
		{"search: {enabled: true}\n", true, false, 8, false},
		{"search: {enabled: false}\n", false, true, 8, false},
		{"search: {limit: 1}\n", false, false, 1, true},
		{"search: {enabled: true, limit: 50}\n", true, false, 50, false},
		{"search:\n  enabled: true\n  limit: 12\n", true, false, 12, false},
		{`{"search": {"enabled": true, "limit": 5}}`, true, false, 5, false},
		{"search: {limit: 0x10}\n", false, false, 16, true},
		{"shutdownTimeout: 5s\nsearch: {enabled: true, limit: 07}\n", true, false, 7, false},
		{"strictPlugins: &t true\nsearch: {enabled: *t}\n", true, false, 8, false},
	}
	for _, tc := range cases {
		c, err := Parse([]byte(tc.src), "gh.yaml", "/srv")
		if err != nil {
			t.Errorf("%q: %v", tc.src, err)
			continue
		}
		s := c.Search
		if s.Always() != tc.always || s.Off() != tc.off || s.Limit != tc.limit || (s.Enabled == nil) != tc.enabledAbsent {
			t.Errorf("%q: always %v off %v limit %d enabled %v, want %v %v %d absent=%v", tc.src, s.Always(), s.Off(), s.Limit, s.Enabled, tc.always, tc.off, tc.limit, tc.enabledAbsent)
		}
	}
}

// Each way search can be wrong is a *Error naming the field, what is wrong
// and the fix.
func TestSearchErrors(t *testing.T) {
	cases := []struct {
		name, src, field, msg string
	}{
		{"enabled a word", "search: {enabled: yes}\n", "search.enabled", `"yes" is not true or false`},
		{"enabled on", "search: {enabled: on}\n", "search.enabled", `"on" is not true or false`},
		{"enabled quoted", "search: {enabled: 'true'}\n", "search.enabled", `"true" is not true or false`},
		{"enabled a number", "search: {enabled: 1}\n", "search.enabled", `"1" is not true or false`},
		{"enabled null", "search: {enabled: }\n", "search.enabled", "no value is not true or false"},
		{"enabled a list", "search: {enabled: [true]}\n", "search.enabled", "a list is not true or false"},
		{"enabled a mapping", "search: {enabled: {on: true}}\n", "search.enabled", "a mapping is not true or false"},
		{"limit zero", "search: {limit: 0}\n", "search.limit", "0 is out of range"},
		{"limit negative", "search: {limit: -3}\n", "search.limit", "-3 is out of range"},
		{"limit too large", "search: {limit: 51}\n", "search.limit", "51 is out of range"},
		{"limit huge", "search: {limit: 99999999999999999999}\n", "search.limit", "is not a whole number"},
		{"limit a fraction", "search: {limit: 2.5}\n", "search.limit", `"2.5" is not a whole number`},
		{"limit a word", "search: {limit: ten}\n", "search.limit", `"ten" is not a whole number`},
		{"limit quoted", "search: {limit: '8'}\n", "search.limit", `"8" is not a whole number`},
		{"limit null", "search: {limit: ~}\n", "search.limit", "no value is not a whole number"},
		{"limit a list", "search: {limit: [8]}\n", "search.limit", "a list is not a whole number"},
		{"limit a boolean", "search: {limit: true}\n", "search.limit", `"true" is not a whole number`},
		{"enabled twice", "search: {enabled: true, enabled: false}\n", "search.enabled", "given twice"},
		{"limit twice", "search: {limit: 3, limit: 4}\n", "search.limit", "given twice"},
		{"search a boolean", "search: true\n", "search", "must be a mapping"},
		{"search a list", "search: [enabled]\n", "search", "must be a mapping"},
		{"unknown field", "search: {enabled: true, max: 5}\n", "search", `unknown field "max"`},
		{"misspelt", "search: {enable: true}\n", "search", `unknown field "enable"`},
		{"model empty", "search: {model: ''}\n", "search.model", `"" is not a directory's path`},
		{"model spaces", "search: {model: '  '}\n", "search.model", `"  " is not a directory's path`},
		{"model a number", "search: {model: 8}\n", "search.model", `"8" is not a directory's path`},
		{"model null", "search: {model: ~}\n", "search.model", "no value is not a directory's path"},
		{"model a list", "search: {model: [a, b]}\n", "search.model", "a list is not a directory's path"},
		{"model a mapping", "search: {model: {dir: a}}\n", "search.model", "a mapping is not a directory's path"},
		{"model twice", "search: {model: a, model: b}\n", "search.model", "given twice"},
		{"merge key", "search: {<<: {enabled: true}}\n", "search", `unknown field "<<"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src), "gh.yaml", "/srv")
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("%q: %v, want a *Error", tc.src, err)
			}
			if ce.Field != tc.field || !strings.Contains(ce.Msg, tc.msg) || ce.Fix == "" || ce.File != "gh.yaml" {
				t.Errorf("%q: field %q msg %q fix %q, want field %q msg containing %q", tc.src, ce.Field, ce.Msg, ce.Fix, tc.field, tc.msg)
			}
		})
	}
}

// search.model is a directory's path, resolved against the config file's
// directory unless absolute; absent, no model.
func TestSearchModel(t *testing.T) {
	for src, want := range map[string]string{
		"search: {enabled: true}\n":                     "",
		"search: {model: models/potion}\n":              "/srv/models/potion",
		"search: {model: ./m, limit: 3}\n":              "/srv/m",
		"search: {model: /opt/models/potion-base-8M}\n": "/opt/models/potion-base-8M",
		`{"search": {"model": "../shared/m"}}`:          "/shared/m",
	} {
		c, err := Parse([]byte(src), "gh.yaml", "/srv")
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if got := c.SearchModelDir(); got != want {
			t.Errorf("%q: SearchModelDir %q, want %q", src, got, want)
		}
	}
}
