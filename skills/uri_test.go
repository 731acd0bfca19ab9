package skills_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/skills"
)

func TestURIRoundTrip(t *testing.T) {
	for _, c := range []struct{ plugin, name, path, uri string }{
		{"hello", "greet", "SKILL.md", "skill://hello/greet/SKILL.md"},
		{"acme.tools", "deploy-v2", "references/api.md", "skill://acme.tools/deploy-v2/references/api.md"},
		{"a", "b", "assets/my file #1?.txt", "skill://a/b/assets/my%20file%20%231%3F.txt"},
		{"a", "b", "references/é.md", "skill://a/b/references/%C3%A9.md"},
		{"a", "b", "x/100%.md", "skill://a/b/x/100%25.md"},
	} {
		if got := skills.URI(c.plugin, c.name, c.path); got != c.uri {
			t.Errorf("URI(%q, %q, %q) = %q, want %q", c.plugin, c.name, c.path, got, c.uri)
		}
		p, n, f, err := skills.ParseURI(c.uri)
		if err != nil || p != c.plugin || n != c.name || f != c.path {
			t.Errorf("ParseURI(%q) = %q, %q, %q, %v", c.uri, p, n, f, err)
		}
	}
}

// TestParseURIErrors: one case per way a URI can be wrong, each with the
// words of its error.
func TestParseURIErrors(t *testing.T) {
	for _, c := range []struct{ uri, want string }{
		{"", "must start with"},
		{"file:///etc/passwd", "must start with"},
		{"SKILL://hello/greet/SKILL.md", "must start with"},
		{"skill:/hello/greet/SKILL.md", "must start with"},
		{"skill://hello", "no skill name"},
		{"skill://hello/greet", "no path"},
		{"skill://hello/greet/", "empty segment"},
		{"skill://hello/greet//x", "empty segment"},
		{"skill:///greet/SKILL.md", "plugin name \"\" is invalid"},
		{"skill://Hello/greet/SKILL.md", "plugin name \"Hello\" is invalid"},
		{"skill://hello:80/greet/SKILL.md", "plugin name \"hello:80\" is invalid"},
		{"skill://user@hello/greet/SKILL.md", "plugin name \"user@hello\" is invalid"},
		{"skill://-hello/greet/SKILL.md", "start and end"},
		{"skill://hel--lo/greet/SKILL.md", "consecutive"},
		{"skill://" + strings.Repeat("a", 65) + "/greet/SKILL.md", "1 to 64"},
		{"skill://hello/gr.eet/SKILL.md", "skill name \"gr.eet\" is invalid"},
		{"skill://hello/%67reet/SKILL.md", "skill name"},
		{"skill://hello/greet/../secret", "is \"..\""},
		{"skill://hello/greet/./SKILL.md", "is \".\""},
		{"skill://hello/greet/%2e%2e/x", "is \"..\""},
		{"skill://hello/greet/a%2Fb", "\"/\" or a NUL"},
		{"skill://hello/greet/a%00b", "\"/\" or a NUL"},
		{"skill://hello/greet/%ff", "valid UTF-8"},
		{"skill://hello/greet/%zz", "bad escape"},
		{"skill://hello/greet/a%20b%2", "bad escape"},
		{"skill://hello/greet/SKILL.md?x=1", "not escaped the one way"},
		{"skill://hello/greet/SKILL.md#top", "not escaped the one way"},
		{"skill://hello/greet/a b", "not escaped the one way"},
		{"skill://hello/greet/%41.md", "not escaped the one way"},
		{"skill://hello/greet/%c3%a9.md", "not escaped the one way"},
		{"skill://hello/greet/" + strings.Repeat("a", 4096), "bytes long"},
	} {
		p, n, f, err := skills.ParseURI(c.uri)
		if !errors.Is(err, skills.ErrBadURI) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseURI(%q) = %q, %q, %q, %v; want an ErrBadURI saying %q", c.uri, p, n, f, err, c.want)
		}
	}
}

// FuzzParseURI: whatever ParseURI accepts, URI writes back byte for byte,
// and its parts are a valid plugin name, skill name and clean path.
func FuzzParseURI(f *testing.F) {
	for _, s := range []string{
		"skill://hello/greet/SKILL.md", "skill://a.b/c-d/references/x%20y.md",
		"skill://hello/greet/../x", "skill://hello/greet/a%2Fb", "skill://h/g/%C3%A9",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		p, n, path, err := skills.ParseURI(uri)
		if err != nil {
			if !errors.Is(err, skills.ErrBadURI) {
				t.Fatalf("error does not wrap ErrBadURI: %v", err)
			}
			return
		}
		if back := skills.URI(p, n, path); back != uri {
			t.Fatalf("ParseURI(%q) = %q %q %q, URI writes %q", uri, p, n, path, back)
		}
		for _, seg := range strings.Split(path, "/") {
			if seg == "" || seg == "." || seg == ".." || strings.ContainsRune(seg, 0) {
				t.Fatalf("ParseURI(%q) accepted path %q", uri, path)
			}
		}
		if strings.ContainsAny(p+n, "/?#%:@ ") {
			t.Fatalf("ParseURI(%q) accepted names %q %q", uri, p, n)
		}
	})
}
