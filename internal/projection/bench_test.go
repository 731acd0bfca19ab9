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
