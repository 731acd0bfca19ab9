package toolset

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/internal/projection"
)

func TestDisclosureTiers(t *testing.T) {
	gen := func() Server { return stdio("big", "-generate", "300") }

	// Unlimited budget: everything inline, no describe tool. Measure it.
	ts := open(t, []Server{gen()}, &Options{Budget: 1 << 30})
	list, err := ts.Tools(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 300 {
		t.Fatalf("%d tools", len(list))
	}
	full := map[string]map[string]any{}
	var ptools []projection.Tool
	for _, ti := range list {
		if ti.Disclosure != projection.Inline {
			t.Fatalf("%s disclosed %s", ti.Name, ti.Disclosure)
		}
		full[ti.Name] = ti.InputSchema
		ptools = append(ptools, projection.Tool{Name: ti.Name, Description: ti.Description, InputSchema: ti.InputSchema})
	}
	cost := projection.Estimate(ptools)
	if !(cost.Floor < cost.Bare && cost.Bare < cost.Names && cost.Names < cost.Inline) {
		t.Fatalf("fixture does not separate the tiers: %+v", cost)
	}
	prompt, _ := ts.SystemPrompt(ctxT(t))
	if !strings.Contains(prompt, "Input schema:") {
		t.Error("inline server's schemas missing from the prompt")
	}

	for _, c := range []struct {
		budget int
		tier   projection.Tier
		floor  bool
	}{
		{cost.Inline, projection.Inline, false},
		{cost.Names, projection.Names, false},
		{cost.Bare, projection.Bare, false},
		{cost.Floor - 1, projection.Bare, true},
	} {
		ts := open(t, []Server{gen()}, &Options{Budget: c.budget})
		m := tools(t, ts)
		g := m["big__gen_0007"]
		if g.Disclosure != c.tier {
			t.Errorf("budget %d: tier %s, want %s", c.budget, g.Disclosure, c.tier)
		}
		if !reflect.DeepEqual(g.InputSchema, projection.ReduceSchema(full["big__gen_0007"], c.tier)) {
			t.Errorf("budget %d: schema %v", c.budget, g.InputSchema)
		}
		if g.Description == "" || len(m) != 300+boolInt(c.tier != projection.Inline) {
			t.Errorf("budget %d: the catalog floor was cut (%d tools)", c.budget, len(m))
		}
		if got := diag.Has(ts.Diagnostics(), diag.DisclosureBudgetExceeded); got != c.floor {
			t.Errorf("budget %d: floor diagnostic %v: %v", c.budget, got, ts.Diagnostics())
		}
		_, hasDescribe := m[projection.DescribeToolName]
		if hasDescribe != (c.tier != projection.Inline) {
			t.Errorf("budget %d: describe tool present=%v", c.budget, hasDescribe)
		}
		if !hasDescribe {
			continue
		}
		res, err := ts.Call(ctxT(t), projection.DescribeToolName, map[string]any{"name": "big__gen_0007"}, CallInfo{})
		if err != nil || res.IsError {
			t.Fatalf("describe: %v %+v", err, res)
		}
		var got struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"inputSchema"`
		}
		if err := json.Unmarshal([]byte(resultText(t, res)), &got); err != nil {
			t.Fatal(err)
		}
		if got.Name != "big__gen_0007" || !reflect.DeepEqual(got.InputSchema, full["big__gen_0007"]) {
			t.Errorf("describe returned %+v", got)
		}
		res, _ = ts.Call(ctxT(t), projection.DescribeToolName, map[string]any{"name": "nope"}, CallInfo{})
		if res == nil || !res.IsError {
			t.Errorf("describe of an unknown tool: %+v", res)
		}
		prompt, _ := ts.SystemPrompt(ctxT(t))
		if strings.Contains(prompt, "Input schema:") || !strings.Contains(prompt, projection.DescribeToolName) {
			t.Errorf("deferred server's prompt: %.300s", prompt)
		}
	}

	// alwaysLoad is exempt.
	s := gen()
	s.AlwaysLoad = true
	ts = open(t, []Server{s}, &Options{Budget: 10})
	if g := tools(t, ts)["big__gen_0001"]; g.Disclosure != projection.Inline {
		t.Errorf("alwaysLoad disclosed %s", g.Disclosure)
	}
	if len(ts.Diagnostics()) != 0 {
		t.Errorf("diagnostics %v", ts.Diagnostics())
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestDescribeSummary(t *testing.T) {
	ts := open(t, []Server{stdio("big", "-generate", "3")}, &Options{Budget: 1})
	sum, err := ts.Describe(ctxT(t), "big__gen_0001")
	if err != nil {
		t.Fatal(err)
	}
	if sum.RemoteName != "gen_0001" || sum.Server != "big" || len(sum.ContractHash) != 64 || sum.State != Active {
		t.Errorf("summary %+v", sum)
	}
	if _, ok := sum.InputSchema["properties"].(map[string]any)["options"].(map[string]any)["properties"]; !ok {
		t.Errorf("summary schema is not the full schema: %v", sum.InputSchema)
	}
	if _, err := ts.Describe(ctxT(t), projection.DescribeToolName); err == nil {
		t.Error("the describe tool has no summary")
	}
}
