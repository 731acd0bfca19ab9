package plugin

import (
	"net/url"
	"strings"

	"github.com/gatehouse-dev/gatehouse/diag"
)

// secretNameParts mark a variable, header or query parameter name as one
// that usually carries a credential (matched case-insensitively).
var secretNameParts = []string{"TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "CREDENTIAL"}

// secretHeaders always carry credentials when set.
var secretHeaders = []string{"authorization", "proxy-authorization", "cookie"}

// tokenPrefixes begin well-known credential formats.
var tokenPrefixes = []string{
	"sk-", "sk_live_", "rk_live_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
	"xoxb-", "xoxp-", "xoxa-", "xoxs-", "AKIA", "ASIA", "glpat-", "AIza", "npm_", "pypi-",
}

// looksLikeToken reports whether a value begins with a known credential
// prefix followed by enough characters to be a real credential, or is an
// HTTP Bearer/Basic credential.
func looksLikeToken(v string) bool {
	v = strings.TrimSpace(v)
	for _, scheme := range []string{"bearer ", "basic "} {
		if len(v) > len(scheme)+3 && strings.EqualFold(v[:len(scheme)], scheme) {
			return true
		}
	}
	for _, p := range tokenPrefixes {
		if strings.HasPrefix(v, p) && len(v) >= len(p)+8 {
			return true
		}
	}
	return false
}

func secretName(name string) bool {
	up := strings.ToUpper(name)
	for _, part := range secretNameParts {
		if strings.Contains(up, part) {
			return true
		}
	}
	return false
}

// referencesPath reports whether a value is a path built on a placeholder
// (a key file in the plugin or its data directory), not a literal secret.
func referencesPath(v string) bool {
	return strings.HasPrefix(v, placeholderRoot) || strings.HasPrefix(v, placeholderData)
}

// secrets adds a secret-in-config warning for each credential-looking value
// in a valid entry (§7.2.1, §9.2). The entry still loads. Messages name the
// field, never the value.
func (p *serverParser) secrets(sc ServerConfig) {
	warn := func(section, format string, args ...any) {
		p.fail(diag.SecretInConfig, section, format+"; plugin files are visible package data, so supply credentials through the client instead", args...)
	}
	for _, k := range sortedKeys(sc.Env) {
		v := sc.Env[k]
		switch {
		case looksLikeToken(v):
			warn("9.2", "\"env\" value of %s looks like a credential", k)
		case secretName(k) && v != "" && !referencesPath(v):
			warn("9.2", "\"env\" %s looks like it holds a credential", k)
		}
	}
	for _, k := range sortedKeys(sc.Headers) {
		v := sc.Headers[k]
		lk := strings.ToLower(k)
		switch {
		case contains(secretHeaders, lk) && v != "":
			warn("7.2.1", "header %q carries credentials", k)
		case looksLikeToken(v):
			warn("7.2.1", "the value of header %q looks like a credential", k)
		case secretName(k) && v != "":
			warn("7.2.1", "header %q looks like it holds a credential", k)
		}
	}
	for i, a := range sc.Args {
		val := a
		if _, after, found := strings.Cut(a, "="); found {
			val = after
		}
		if looksLikeToken(a) || looksLikeToken(val) {
			warn("9.2", "argument %d looks like a credential", i)
		}
	}
	if sc.URL != "" {
		if pu, err := url.Parse(sc.URL); err == nil {
			for _, k := range sortedQueryKeys(pu.Query()) {
				if secretName(k) {
					warn("7.2.1", "the URL query parameter %q looks like a credential", k)
				}
			}
		}
	}
}

func sortedQueryKeys(q url.Values) []string {
	m := make(map[string]string, len(q))
	for k := range q {
		m[k] = ""
	}
	return sortedKeys(m)
}
