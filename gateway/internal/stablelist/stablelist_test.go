package stablelist

import (
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/config"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

func names(list []*mcp.Tool) []string {
	out := []string{}
	for _, t := range list {
		out = append(out, t.Name)
	}
	return out
}

func policy(t *testing.T, yml string) *Policy {
	t.Helper()
	c, err := config.Parse([]byte(yml), "gh.yaml", "/srv")
	if err != nil {
		t.Fatal(err)
	}
	return New(&c.Search, &c.Disclosure)
}

func info(server, plugin, name, desc string) toolset.ToolInfo {
	return toolset.ToolInfo{Name: server + "__" + name, Server: server, Plugin: plugin, Description: desc,
		ContractHash: name + desc, State: toolset.Active, InputSchema: map[string]any{"type": "object"}}
}

// The stable list: the search tool first, then the alwaysLoad tools (by
// server or plugin name) the caller may see, sorted; with search absent,
// given only over the budget (by what the caller may see); with search
// off, never.
func TestList(t *testing.T) {
	list := []toolset.ToolInfo{info("mail", "", "send", "Sends."), info("crm", "acme", "b_find", "Finds."),
		info("crm", "acme", "a_add", "Adds."), info("tracker", "", "open", "Opens an issue.")}
	tools := map[string]toolset.ToolInfo{}
	for _, t := range list {
		tools[t.Name] = t
	}
	all := func(string) bool { return true }
	noCRM := func(name string) bool { return name != "crm__a_add" }

	p := policy(t, "search: {enabled: true}\ndisclosure: {alwaysLoad: [acme, tracker]}\n")
	got, stable := p.List(tools, p.Sizes(list, nil, nil), all)
	if want := []string{Name, "crm__a_add", "crm__b_find", "tracker__open"}; !stable || !slices.Equal(names(got), want) {
		t.Errorf("enabled: %v %v, want %v", stable, names(got), want)
	}
	if got, _ := p.List(tools, nil, noCRM); !slices.Equal(names(got), []string{Name, "crm__b_find", "tracker__open"}) {
		t.Errorf("enabled, narrower caller: %v", names(got))
	}

	// Each tool takes len(name)+len(description)+len(`{"type":"object"}`)
	// bytes: 10+6+17, 11+6+17, 10+5+17, 13+15+17 = 33+34+32+45 = 144.
	sizes := policy(t, "").Sizes(list, nil, nil)
	if sizes["mail__send"] != 33 || sizes["tracker__open"] != 45 {
		t.Fatalf("sizes %v", sizes)
	}
	over := policy(t, "disclosure: {budget: 35}\n") // 140 bytes
	if got, stable := over.List(tools, sizes, all); !stable || !slices.Equal(names(got), []string{Name}) {
		t.Errorf("auto, 144 bytes over 140: %v %v", stable, names(got))
	}
	if _, stable := over.List(tools, sizes, noCRM); stable {
		t.Error("auto, 112 bytes under 140: stable list")
	}
	if _, stable := policy(t, "disclosure: {budget: 36}\n").List(tools, sizes, all); stable {
		t.Error("auto, 144 bytes within 144: stable list")
	}
	off := policy(t, "search: {enabled: false}\ndisclosure: {budget: 1}\n")
	if _, stable := off.List(tools, sizes, all); stable || off.On || off.Sizes(list, nil, nil) != nil {
		t.Error("search off: stable list")
	}
	if !over.Reserved(toolset.ToolInfo{Name: Name}) || off.Reserved(toolset.ToolInfo{Name: Name}) {
		t.Error("Reserved")
	}

	// A changed tool is measured again; an unchanged one keeps its size.
	prev := map[string]toolset.ToolInfo{"mail__send": list[0], "tracker__open": list[3]}
	changed := info("tracker", "", "open", "Opens an issue in a tracker project.")
	again := policy(t, "").Sizes([]toolset.ToolInfo{list[0], changed}, prev, map[string]int{"mail__send": 7, "tracker__open": 45})
	if again["mail__send"] != 7 || again["tracker__open"] != 13+36+17 {
		t.Errorf("sizes after a change: %v", again)
	}
}
