package plugin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/gatehouse-dev/gatehouse/diag"
)

// expected is the expected.json of a conformance case: the shape of
// `gatehouse plugin check --json` (docs/reference/cli.md) without messages.
type expected struct {
	OK          bool     `json:"ok"`
	Name        string   `json:"name"`
	Skills      []string `json:"skills"`
	MCPServers  []string `json:"mcpServers"`
	Diagnostics []ruleAt `json:"diagnostics"`
}

type ruleAt struct {
	Rule   diag.Rule `json:"rule"`
	Origin string    `json:"origin"`
}

// summarize reduces a Result to the comparable shape of expected.
func summarize(r Result) expected {
	e := expected{OK: r.OK(), Skills: []string{}, MCPServers: []string{}, Diagnostics: []ruleAt{}}
	if r.Plugin != nil {
		e.Name = r.Plugin.Manifest.Name
		for _, s := range r.Plugin.Skills {
			e.Skills = append(e.Skills, s.Name)
		}
		for _, s := range r.Plugin.Servers {
			e.MCPServers = append(e.MCPServers, s.Name)
		}
	}
	for _, d := range r.Diagnostics {
		e.Diagnostics = append(e.Diagnostics, ruleAt{d.Rule, d.Origin})
	}
	sortRules(e.Diagnostics)
	return e
}

func sortRules(rs []ruleAt) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Rule != rs[j].Rule {
			return rs[i].Rule < rs[j].Rule
		}
		return rs[i].Origin < rs[j].Origin
	})
}

// TestConformanceCorpus loads every case under testdata/conformance and
// compares ok, name, skills, servers and the multiset of (rule, origin).
// Lists of skills and servers must also be sorted, as Load promises.
func TestConformanceCorpus(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join("testdata", "conformance", "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 45 {
		t.Fatalf("corpus has %d cases, want at least 45", len(cases))
	}
	for _, dir := range cases {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, "expected.json"))
			if err != nil {
				t.Fatal(err)
			}
			var want expected
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatalf("expected.json: %v", err)
			}
			if want.Skills == nil {
				want.Skills = []string{}
			}
			if want.MCPServers == nil {
				want.MCPServers = []string{}
			}
			if want.Diagnostics == nil {
				want.Diagnostics = []ruleAt{}
			}
			sortRules(want.Diagnostics)
			res := Load(filepath.Join(dir, "plugin"))
			got := summarize(res)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
				for _, d := range res.Diagnostics {
					t.Logf("  %s", d)
				}
			}
			checkDiagnostics(t, res.Diagnostics)
			if res.Plugin != nil {
				if !sort.StringsAreSorted(got.Skills) || !sort.StringsAreSorted(got.MCPServers) {
					t.Errorf("skills or servers not sorted: %v %v", got.Skills, got.MCPServers)
				}
			}
		})
	}
}

// checkDiagnostics asserts what every diagnostic must carry: a known rule, a
// section, an origin and a message a person can act on.
func checkDiagnostics(t *testing.T, ds []diag.Diagnostic) {
	t.Helper()
	for _, d := range ds {
		if !d.Rule.Known() {
			t.Errorf("unknown rule %q in %s", d.Rule, d)
		}
		if d.Section == "" || d.Message == "" {
			t.Errorf("diagnostic without section or message: %s", d)
		}
	}
}
