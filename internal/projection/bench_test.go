package projection

import (
	"fmt"
	"testing"
)

// BenchmarkProject1000 projects one 1,000-tool server the way a toolset
// does: Name and Sanitize per tool, then Plan over the catalogue. The tools
// are those of bigServer (12 documented parameters and a nested object
// each), every tenth with an illegal remote name and a description with
// non-ASCII text to strip. Plan lands on Names, its most expensive path.
func BenchmarkProject1000(b *testing.B) {
	src := bigServer(1000)
	for i := range src {
		src[i].RemoteName = fmt.Sprintf("tool_%04d", i)
		if i%10 == 0 {
			src[i].RemoteName = fmt.Sprintf("tool.%04d/café", i)
			src[i].Description += " \u202Eevil\u200B 検索 💸"
		}
	}
	tools := make([]Tool, len(src))
	project := func() {
		for i, t := range src {
			t.Name = Name("big.server", t.RemoteName)
			t.Description = Sanitize(t.Description)
			tools[i] = t
		}
	}
	project()
	budget := Estimate(tools).Names + 100 // Names fits, Inline does not
	b.ReportAllocs()
	for b.Loop() {
		project()
		if tier, _ := Plan("big.server", tools, budget); tier != Names {
			b.Fatalf("tier %s", tier)
		}
	}
}

func BenchmarkName(b *testing.B) {
	for b.Loop() {
		_ = Name("bank", "transfer")
		_ = Name("my.srv", "café")
	}
}

func BenchmarkSanitize(b *testing.B) {
	s := "Transfer money between two accounts of the same customer. \u202Eevil\u200B 検索 💸"
	for b.Loop() {
		_ = Sanitize(s)
	}
}

// BenchmarkSanitizeSchema sanitizes the input schemas of a 1,000-tool
// server once, as a toolset does when it builds its tool map (never per
// call): the schemas of bigServer, every tenth with hidden characters in a
// description, a default and an example to strip.
func BenchmarkSanitizeSchema(b *testing.B) {
	src := schemaBench()
	b.ReportAllocs()
	for b.Loop() {
		for _, t := range src {
			_ = SanitizeSchema(t.InputSchema)
		}
	}
}

// BenchmarkHiddenBindings looks for hidden binding strings in the schemas
// of BenchmarkSanitizeSchema (a toolset does both when it builds its map).
func BenchmarkHiddenBindings(b *testing.B) {
	src := schemaBench()
	b.ReportAllocs()
	for b.Loop() {
		for _, t := range src {
			if HiddenBindings(t.InputSchema) != nil {
				b.Fatal("hidden bindings")
			}
		}
	}
}

func schemaBench() []Tool {
	src := bigServer(1000)
	for i := range src {
		if i%10 == 0 {
			p := src[i].InputSchema["properties"].(map[string]any)["param_01"].(map[string]any)
			p["description"] = "Pick one. \u202Eevil\u200B 検索 💸"
			p["default"] = "alpha\U000E0069\U000E0067"
			p["examples"] = []any{"beta\u200B"}
		}
	}
	return src
}
