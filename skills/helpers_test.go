package skills_test

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/plugin"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// writeFiles writes files (slash-separated path → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// skillMD is a SKILL.md with the given name, description and body.
func skillMD(name, description, body string) string {
	return "---\nname: " + name + "\ndescription: " + description + "\n---\n" + body
}

// newPlugin writes a plugin named name with files under a fresh directory
// and loads it with plugin.Load (the real loader).
func newPlugin(t *testing.T, name string, files map[string]string) *plugin.Plugin {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	writeFiles(t, dir, map[string]string{
		"plugin.json": `{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "` + name + `", "version": "1.0.0"}`,
	})
	writeFiles(t, dir, files)
	return load(t, dir)
}

func load(t *testing.T, dir string) *plugin.Plugin {
	t.Helper()
	res := plugin.Load(dir)
	if !res.OK() {
		t.Fatalf("plugin.Load(%s): %v", dir, res.Diagnostics)
	}
	return res.Plugin
}

func writeFileF(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}
