package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// audit: absent is on, 90 days, checkpoints every 5 minutes, unsigned.
func TestAudit(t *testing.T) {
	day := 24 * time.Hour
	cases := []struct {
		src             string
		enabled         bool
		retain, cp      time.Duration
		keyFile, keyEnv string
	}{
		{"", true, 90 * day, 5 * time.Minute, "", ""},
		{"audit: {}\n", true, 90 * day, 5 * time.Minute, "", ""},
		{"audit: {retain: 90d}\n", true, 90 * day, 5 * time.Minute, "", ""},
		{"audit: {retain: 36h, checkpoint: 30s}\n", true, 36 * time.Hour, 30 * time.Second, "", ""},
		{"audit: {retain: 0}\n", true, 0, 5 * time.Minute, "", ""},
		{"audit: {enabled: false}\n", false, 90 * day, 5 * time.Minute, "", ""},
		{"audit: {signingKeyFile: keys/audit.key}\n", true, 90 * day, 5 * time.Minute, "/srv/keys/audit.key", ""},
		{"audit: {signingKeyFile: /etc/gh/audit.key}\n", true, 90 * day, 5 * time.Minute, "/etc/gh/audit.key", ""},
		{"audit: {signingKeyEnv: GATEHOUSE_AUDIT_KEY, retain: 1d}\n", true, day, 5 * time.Minute, "", "GATEHOUSE_AUDIT_KEY"},
	}
	for _, tc := range cases {
		c, err := Parse([]byte(tc.src), "gh.yaml", "/srv")
		if err != nil {
			t.Errorf("%q: %v", tc.src, err)
			continue
		}
		a := c.Audit
		if a.Enabled != tc.enabled || a.Retain != tc.retain || a.Checkpoint != tc.cp || a.SigningKeyFile != tc.keyFile || a.SigningKeyEnv != tc.keyEnv {
			t.Errorf("%q: %+v", tc.src, a)
		}
	}
}

// Each way audit can be wrong is a *Error naming the field, what is wrong
// and the fix.
func TestAuditErrors(t *testing.T) {
	cases := []struct {
		name, src, field, msg string
	}{
		{"not a mapping", "audit: true\n", "audit", "must be a mapping"},
		{"unknown field", "audit: {retention: 90d}\n", "audit", `unknown field "retention"`},
		{"given twice", "audit: {retain: 1d, retain: 2d}\n", "audit.retain", "given twice"},
		{"enabled a word", "audit: {enabled: yes}\n", "audit.enabled", `"yes" is not true or false`},
		{"retain no unit", "audit: {retain: 90}\n", "audit.retain", `"90"`},
		{"retain negative", "audit: {retain: -1d}\n", "audit.retain", `"-1d"`},
		{"retain fraction of days", "audit: {retain: 1.5d}\n", "audit.retain", `"1.5d"`},
		{"retain a list", "audit: {retain: [90d]}\n", "audit.retain", "a list is not a duration"},
		{"retain null", "audit: {retain: ~}\n", "audit.retain", "no value is not a duration"},
		{"retain too many days", "audit: {retain: 99999d}\n", "audit.retain", "days must be 1 to"},
		{"checkpoint zero", "audit: {checkpoint: 0}\n", "audit.checkpoint", `"0"`},
		{"checkpoint too short", "audit: {checkpoint: 100ms}\n", "audit.checkpoint", "below 1s"},
		{"key file empty", "audit: {signingKeyFile: ''}\n", "audit.signingKeyFile", "is not a file path"},
		{"key file a number", "audit: {signingKeyFile: 12}\n", "audit.signingKeyFile", "is not a file path"},
		{"key env bad name", "audit: {signingKeyEnv: 'A-B'}\n", "audit.signingKeyEnv", "is not an environment variable's name"},
		{"key env a digit first", "audit: {signingKeyEnv: 9KEY}\n", "audit.signingKeyEnv", "is not an environment variable's name"},
		{"both keys", "audit: {signingKeyFile: a.key, signingKeyEnv: KEY}\n", "audit", "both given"},
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
