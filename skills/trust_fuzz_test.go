package skills_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/skills"
)

// FuzzPluginOf: PluginOf accepts exactly the IDs Owner writes (a non-empty
// plugin name after "skills:"), and gives back the name Owner was given.
func FuzzPluginOf(f *testing.F) {
	for _, s := range []string{"skills:acme", "skills:", "acme/greet", "config:skills:acme", "skills:a:b", "Skills:acme", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		p, ok := skills.PluginOf(id)
		want := strings.HasPrefix(id, "skills:") && len(id) > len("skills:")
		if ok != want {
			t.Fatalf("PluginOf(%q) ok = %v, want %v", id, ok, want)
		}
		if ok && skills.Owner(p) != id {
			t.Fatalf("Owner(PluginOf(%q)) = %q", id, skills.Owner(p))
		}
		if !ok && p != "" {
			t.Fatalf("PluginOf(%q) = %q with ok false", id, p)
		}
		if id != "" {
			if q, ok := skills.PluginOf(skills.Owner(id)); !ok || q != id {
				t.Fatalf("PluginOf(Owner(%q)) = %q, %v", id, q, ok)
			}
		}
	})
}
