package skills

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// uriScheme is the scheme of skill URIs.
const uriScheme = "skill"

// BodyPath is the path of a skill's body in its URI: skill://PLUGIN/NAME/SKILL.md.
const BodyPath = "SKILL.md"

// maxURILength is the longest URI ParseURI accepts, in bytes.
const maxURILength = 4096

// ErrBadURI is wrapped by every error of ParseURI.
var ErrBadURI = errors.New("skills: not a skill URI")

// URI returns the URI of a skill's file: "skill://PLUGIN/NAME/PATH", with
// PATH (slash-separated, relative to the skill directory; BodyPath for the
// body) escaped segment by segment with url.PathEscape. For a valid plugin
// name, a valid skill name and a path of Skill.Files (or BodyPath), ParseURI
// returns the three parts unchanged.
func URI(plugin, name, path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return uriScheme + "://" + plugin + "/" + name + "/" + strings.Join(segs, "/")
}

// ParseURI splits a skill URI into its plugin name, skill name and path. It
// accepts only the form URI writes: the scheme "skill" in lower case, a
// plugin name and a skill name as Agent Plugins and Agent Skills allow them
// (1 to 64 of a-z, 0-9 and hyphens, periods too in a plugin name, starting
// and ending with a letter or digit, no doubled punctuation), and a path of
// one or more non-empty segments, each escaped exactly as url.PathEscape
// escapes it, none "." or "..", decoding to valid UTF-8 without "/" or NUL;
// no query, no fragment, no user, no port; at most maxURILength bytes.
// Every error wraps ErrBadURI and says what is wrong.
func ParseURI(uri string) (plugin, name, path string, err error) {
	bad := func(format string, args ...any) (string, string, string, error) {
		return "", "", "", fmt.Errorf("%w %q: %s", ErrBadURI, clip(uri), fmt.Sprintf(format, args...))
	}
	if len(uri) > maxURILength {
		return bad("it is %d bytes long, more than %d", len(uri), maxURILength)
	}
	rest, ok := strings.CutPrefix(uri, uriScheme+"://")
	if !ok {
		return bad("it must start with %q", uriScheme+"://")
	}
	plugin, rest, ok = strings.Cut(rest, "/")
	if !ok {
		return bad("it has no skill name: the form is skill://PLUGIN/NAME/PATH")
	}
	if why := nameProblem(plugin, true); why != "" {
		return bad("the plugin name %q is invalid: %s", plugin, why)
	}
	name, rest, ok = strings.Cut(rest, "/")
	if !ok {
		return bad("it has no path: the form is skill://PLUGIN/NAME/PATH (the body is %s)", BodyPath)
	}
	if why := nameProblem(name, false); why != "" {
		return bad("the skill name %q is invalid: %s", name, why)
	}
	segs := strings.Split(rest, "/")
	for i, s := range segs {
		if s == "" {
			return bad("its path has an empty segment")
		}
		d, err := url.PathUnescape(s)
		if err != nil {
			return bad("path segment %d has a bad escape: %v", i+1, err)
		}
		switch {
		case d == "." || d == "..":
			return bad("path segment %d is %q", i+1, d)
		case !utf8.ValidString(d):
			return bad("path segment %d does not decode to valid UTF-8", i+1)
		case strings.ContainsAny(d, "/\x00"):
			return bad("path segment %d decodes to a \"/\" or a NUL", i+1)
		case url.PathEscape(d) != s:
			return bad("path segment %d is not escaped the one way URI escapes it (want %q)", i+1, url.PathEscape(d))
		}
		segs[i] = d
	}
	return plugin, name, strings.Join(segs, "/"), nil
}

// nameProblem says why s is not a valid Agent Plugins name (periods true)
// or Agent Skills name (periods false), or returns "". It is the rule of
// package plugin, which does not export it.
func nameProblem(s string, periods bool) string {
	if n := len(s); n < 1 || n > 64 {
		return fmt.Sprintf("it must be 1 to 64 characters long, not %d", n)
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !alnum(c) && c != '-' && (!periods || c != '.') {
			if periods {
				return "use only lowercase letters a-z, digits, hyphens and periods"
			}
			return "use only lowercase letters a-z, digits and hyphens"
		}
	}
	if !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return "it must start and end with a lowercase letter or digit"
	}
	if strings.Contains(s, "--") || strings.Contains(s, "..") {
		return "consecutive hyphens or periods are not allowed"
	}
	return ""
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 128
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}
