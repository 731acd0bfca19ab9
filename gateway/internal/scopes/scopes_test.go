package scopes

import (
	"strings"
	"testing"
)

// TestParse: each way a scope can fail to be a visibility scope is no
// scope of its kind; each kind is read apart.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		name           string
		scopes         []string
		absentMeansAll bool
		tool, skill    bool // sees the tool "t" and the skill "s"
	}{
		{"nil static", nil, false, false, false},
		{"nil oauth", nil, true, true, true},
		{"other scopes only, static", []string{"mcp", "read"}, false, false, false},
		{"other scopes only, oauth", []string{"mcp", "read"}, true, true, true},
		{"empty tool name", []string{"tool:"}, true, true, true},
		{"empty skill name", []string{"skill:"}, true, true, true},
		{"upper-case kind is not a kind", []string{"TOOL:x", "Skill:y"}, true, true, true},
		{"plural kind is not a kind", []string{"tools:x", "skills:y"}, true, true, true},
		{"kind without colon", []string{"tool", "skill"}, true, true, true},
		{"tool named", []string{"tool:t"}, false, true, false},
		{"tool other, oauth", []string{"tool:u"}, true, false, true},
		{"skill named, oauth", []string{"skill:s"}, true, true, true},
		{"skill other, oauth", []string{"skill:u"}, true, true, false},
		{"stars", []string{"tool:*", "skill:*"}, false, true, true},
		{"star is a name only alone", []string{"tool:t*", "skill:*s"}, true, false, false},
		{"names are exact", []string{"tool:T", "skill:s "}, true, false, false},
	} {
		s := Parse(c.scopes, c.absentMeansAll)
		if s.Tool("t") != c.tool || s.Skill("s") != c.skill {
			t.Errorf("%s: Parse(%q, %v) sees tool %v skill %v, want %v %v", c.name, c.scopes, c.absentMeansAll,
				s.Tool("t"), s.Skill("s"), c.tool, c.skill)
		}
	}
	var none *Set
	if none.Tool("t") || none.Skill("s") {
		t.Error("a nil Set sees something")
	}
	if a := All(); !a.Tool("anything") || !a.Skill("anything") {
		t.Error("All does not see everything")
	}
}

// FuzzParse: a static list never sees more than the same list read as an
// OAuth token's, and sees a name only when the list names it or its kind's
// star.
func FuzzParse(f *testing.F) {
	f.Add("tool:a skill:b mcp", "a", "b")
	f.Add("tool:* skill:", "x", "y")
	f.Add("skill:*", "", "")
	f.Fuzz(func(t *testing.T, list, tool, skill string) {
		sc := strings.Fields(list)
		static, oauth := Parse(sc, false), Parse(sc, true)
		if static.Tool(tool) && !oauth.Tool(tool) || static.Skill(skill) && !oauth.Skill(skill) {
			t.Fatalf("%q: the static reading sees more than the OAuth one", sc)
		}
		named := func(kind, name string) bool {
			for _, s := range sc {
				if s == kind+"*" || s == kind+name && name != "" {
					return true
				}
			}
			return false
		}
		if static.Tool(tool) != named(KindTool, tool) || static.Skill(skill) != named(KindSkill, skill) {
			t.Fatalf("%q: static sees tool %q %v, skill %q %v", sc, tool, static.Tool(tool), skill, static.Skill(skill))
		}
	})
}
