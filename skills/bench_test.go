package skills_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/skills"
)

// benchPlugin writes a plugin of 20 skills with 10 references of 4 KiB each.
func benchPlugin(b *testing.B) *plugin.Plugin {
	dir := b.TempDir() + "/bench"
	writeFileF(b, dir+"/plugin.json", `{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "bench"}`)
	for i := range 20 {
		name := fmt.Sprintf("skill-%02d", i)
		writeFileF(b, dir+"/skills/"+name+"/SKILL.md", skillMD(name, "Does task "+name+".", strings.Repeat("Step.\n", 200)))
		for j := range 10 {
			writeFileF(b, fmt.Sprintf("%s/skills/%s/references/ref-%d.md", dir, name, j), strings.Repeat("x", 4096))
		}
	}
	res := plugin.Load(dir)
	if !res.OK() {
		b.Fatal(res.Diagnostics)
	}
	return res.Plugin
}

// BenchmarkNew: building the catalog of 20 skills and 200 files (4 KiB each):
// every file resolved, opened through an os.Root and hashed.
func BenchmarkNew(b *testing.B) {
	p := benchPlugin(b)
	for b.Loop() {
		if cat, _ := skills.New([]*plugin.Plugin{p}, nil); cat.Len() != 20 {
			b.Fatal(cat.Len())
		}
	}
}

// BenchmarkReadFile: one skills__read_file call (re-resolve, os.Root open,
// size check, read, hash check, sanitize) of a 4 KiB reference.
func BenchmarkReadFile(b *testing.B) {
	cat, _ := skills.New([]*plugin.Plugin{benchPlugin(b)}, nil)
	args := json.RawMessage(`{"skill": "bench/skill-07", "path": "references/ref-3.md"}`)
	ctx := context.Background()
	for b.Loop() {
		if res, err := cat.Call(ctx, skills.ReadFileToolName, args); err != nil || res.IsError {
			b.Fatal(res, err)
		}
	}
}
