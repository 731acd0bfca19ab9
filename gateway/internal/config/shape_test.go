package config

import (
	"errors"
	"strings"
	"testing"
)

// TestMistakesInTheUsersWords: a mistake of shape names the field by its
// YAML path, says what was wrong without Go's words (no Go type, no YAML
// tag), suggests the near-miss key, and gives the fix.
func TestMistakesInTheUsersWords(t *testing.T) {
	for _, tc := range []struct {
		src, field, msg, fix string
	}{
		{"ratelimit: {maxCalls: 5}\n", "ratelimit", `unknown field "ratelimit"`, "did you mean rateLimit?"},
		{"rateLimit: {maxCals: 5}\n", "rateLimit.maxCals", `unknown field "maxCals" in rateLimit`, "did you mean rateLimit.maxCalls?"},
		{"sessions: {maxPerSubjcet: 3}\n", "sessions.maxPerSubjcet", "unknown field", "did you mean sessions.maxPerSubject?"},
		{"tools: {requireApprovals: [x]}\n", "tools.requireApprovals", "unknown field", "did you mean tools.requireApproval?"},
		{"zzz: 1\n", "zzz", `unknown field "zzz"`, "the fields of the file are listen, store, plugins"},
		{"tools: {zzz: 1}\n", "tools.zzz", "unknown field", "the fields of tools are allow, block, requireApproval, repeatable"},
		{"rateLimit: {maxCalls: 5, window: 5 minutes}\n", "rateLimit.window", `"5 minutes" is not a duration`, "500ms, 90s, 5m, 1h30m"},
		{"rateLimit: {maxCalls: 5, window: 60}\n", "rateLimit.window", "60 has no unit", "with its unit"},
		{"rateLimit: {maxCalls: 5, window: [1m]}\n", "rateLimit.window", "must be a duration, not a list", "with its unit"},
		{"rateLimit: {maxCalls: five}\n", "rateLimit.maxCalls", `must be a whole number, not "five"`, "write a number"},
		{"rateLimit: 100\n", "rateLimit", `must be a mapping of fields, not "100"`, "its fields are maxCalls, window"},
		{"plugins: ./p\n", "plugins", `must be a list, not "./p"`, "[a]"},
		{"auth: {tokens: [{sha256: abc, subject: a, scope: [x]}]}\n", "auth.tokens[0].scope", "unknown field", "did you mean auth.tokens[0].scopes?"},
		{"strictPlugins: yes please\n", "strictPlugins", `must be true or false, not "yes please"`, "true or false"},
		{"[1, 2]\n", "", "must be a mapping of fields, not a list", "listen, store"},
	} {
		_, err := Parse([]byte(tc.src), "gh.yaml", "/srv")
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("%q: err = %v, want *Error", tc.src, err)
			continue
		}
		if ce.Field != tc.field || !strings.Contains(ce.Msg, tc.msg) || !strings.Contains(ce.Fix, tc.fix) {
			t.Errorf("%q:\n got field=%q msg=%q fix=%q\nwant field=%q msg~%q fix~%q", tc.src, ce.Field, ce.Msg, ce.Fix, tc.field, tc.msg, tc.fix)
		}
		for _, goWord := range []string{"config.", "time.Duration", "!!", "unmarshal", "int64", "[]string"} {
			if strings.Contains(err.Error(), goWord) {
				t.Errorf("%q: the message speaks Go (%q): %v", tc.src, goWord, err)
			}
		}
	}
}

func TestNearest(t *testing.T) {
	names := []string{"listen", "store", "rateLimit", "maxPerSubject", "tools"}
	for key, want := range map[string]string{
		"ratelimit": "rateLimit", "RATELIMIT": "rateLimit", "rateLimt": "rateLimit", "maxPerSubjcet": "maxPerSubject",
		"lisen": "listen", "stor": "store", "tool": "tools", "x": "", "sessions": "", "stoer": "store",
	} {
		if got := nearest(key, names); got != want {
			t.Errorf("nearest(%q) = %q, want %q", key, got, want)
		}
	}
}

// TestAliasCycles: an alias to an enclosing node ends in an error, not a
// walk without end: the walk follows the config's types, which are finite.
func TestAliasCycles(t *testing.T) {
	for _, src := range []string{"tools: &a {allow: *a}\n", "plugins: &a [*a]\n", "&a {servers: *a}\n", "auth: &a {tokens: [*a]}\n"} {
		if _, err := Parse([]byte(src), "gh.yaml", "/srv"); err == nil {
			t.Errorf("%q parsed", src)
		}
	}
}
