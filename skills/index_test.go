package skills_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/skills"
)

// manySkills is a plugin with n skills whose descriptions are long.
func manySkills(t *testing.T, n int) *plugin.Plugin {
	files := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("skill-%03d", i)
		files["skills/"+name+"/SKILL.md"] = skillMD(name, strings.Repeat("word ", 60)+"end", "Body.\n")
	}
	return newPlugin(t, "many", files)
}

func TestIndexFull(t *testing.T) {
	p := newPlugin(t, "acme", map[string]string{
		"skills/greet/SKILL.md":  skillMD("greet", "\"Greets people.\\n# Not a heading\\n- not an item\"", "Body.\n"),
		"skills/deploy/SKILL.md": skillMD("deploy", "Deploys.", "Body.\n"),
	})
	cat, _ := skills.New([]*plugin.Plugin{p}, nil)
	idx := cat.Index()
	if !strings.HasPrefix(idx, "## Skills from plugins\n\n") || !strings.Contains(idx, skills.ReadToolName) {
		t.Fatalf("index header:\n%s", idx)
	}
	if !strings.HasSuffix(idx, "\n- acme/deploy: Deploys.\n- acme/greet: Greets people. # Not a heading - not an item\n") {
		t.Fatalf("index lines:\n%s", idx)
	}
	if (*skills.Catalog)(nil).Index() != "" {
		t.Fatal("a nil catalog has an index")
	}
	empty, _ := skills.New(nil, nil)
	if empty.Index() != "" || empty.Len() != 0 {
		t.Fatal("an empty catalog has an index")
	}
}

// TestIndexBudget: past the budget, names only; past that, as many names as
// fit and a count; never over the budget (for a budget above the framing).
func TestIndexBudget(t *testing.T) {
	p := manySkills(t, 40)
	full, _ := skills.New([]*plugin.Plugin{p}, &skills.Options{IndexBudget: 1 << 20})
	if idx := full.Index(); strings.Count(idx, "word") != 40*60 {
		t.Fatalf("a large budget cut the index: %d bytes", len(idx))
	}
	names, _ := skills.New([]*plugin.Plugin{p}, nil) // 4096: 40 x ~320 bytes do not fit, 40 names do
	idx := names.Index()
	if len(idx) > skills.DefaultIndexBudget || strings.Contains(idx, "word") || strings.Count(idx, "\n- many/skill-") != 40 {
		t.Fatalf("names-only index (%d bytes):\n%s", len(idx), idx)
	}
	for _, budget := range []int{600, 700, 900, 1000} {
		cut, _ := skills.New([]*plugin.Plugin{p}, &skills.Options{IndexBudget: budget})
		idx := cut.Index()
		listed := strings.Count(idx, "\n- many/skill-")
		if len(idx) > budget || listed == 0 || listed == 40 ||
			!strings.HasSuffix(idx, fmt.Sprintf("- and %d more skills not listed\n", 40-listed)) {
			t.Fatalf("budget %d: %d bytes, %d listed:\n%s", budget, len(idx), listed, idx)
		}
		if budget > 600 && len(idx)+len("- many/skill-000\n") <= budget {
			t.Fatalf("budget %d: room for another name is left (%d bytes)", budget, len(idx))
		}
	}
}

func TestWithout(t *testing.T) {
	p := newPlugin(t, "acme", map[string]string{
		"skills/greet/SKILL.md":  skillMD("greet", "Greets.", "Body.\n"),
		"skills/deploy/SKILL.md": skillMD("deploy", "Deploys.", "Body.\n"),
	})
	cat, _ := skills.New([]*plugin.Plugin{p}, nil)
	w := cat.Without(func(plugin, name string) bool { return plugin == "acme" && name == "deploy" })
	if _, ok := w.Lookup("acme", "deploy"); ok || w.Len() != 1 || strings.Contains(w.Index(), "deploy") {
		t.Fatalf("withheld skill still there: %v", w.Skills())
	}
	if _, ok := skills.ContractOf(w, "acme", "deploy"); ok {
		t.Fatal("withheld skill has a contract")
	}
	if _, err := w.Body(t.Context(), "acme", "deploy"); err == nil {
		t.Fatal("withheld skill's body read")
	}
	if cat.Len() != 2 || cat.Without(nil).Len() != 2 {
		t.Fatal("Without changed its receiver or a nil func withheld something")
	}
}

// TestDuplicatePlugin: two plugins of one name: the second's skills are left
// out with a diagnostic.
func TestDuplicatePlugin(t *testing.T) {
	a := newPlugin(t, "acme", map[string]string{"skills/greet/SKILL.md": skillMD("greet", "First.", "A.\n")})
	b := newPlugin(t, "acme", map[string]string{"skills/greet/SKILL.md": skillMD("greet", "Second.", "B.\n")})
	cat, ds := skills.New([]*plugin.Plugin{a, nil, b}, nil)
	s, _ := cat.Lookup("acme", "greet")
	if cat.Len() != 1 || s.Description != "First." || len(ds) != 1 || !strings.Contains(ds[0].Message, "second plugin") {
		t.Fatalf("skills %v diagnostics %v", cat.Skills(), ds)
	}
}
