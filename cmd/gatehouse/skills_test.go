package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSkillsExamplePlugin(t *testing.T) {
	code, out, errOut := run(t, "skills", "--plugin", examplePlugin(t))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"SKILL        FILES  DESCRIPTION\nhello/greet  1      Greet someone by name",
		"files of hello/greet:\n  references/style.md  reference  ",
		"index (appended to a model's system prompt, ",
		"  | ## Skills from plugins\n  |\n  | Skills are instructions",
		"  | - hello/greet: Greet someone by name with the greeter server's greet tool, or add two numbers with its add tool.\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "diagnostics:") {
		t.Errorf("the example plugin has diagnostics:\n%s", out)
	}
}

// TestSkillsJSON: the --json report of a hostile plugin: what an agent or
// client would see and why the rest is left out; the same catalog as
// package skills builds (URIs, fingerprint), every file's hash.
func TestSkillsJSON(t *testing.T) {
	root := writeTree(t, map[string]string{
		"acme/plugin.json":                        goodManifest,
		"acme/skills/greet/SKILL.md":              "---\nname: greet\ndescription: \"Greets\u200b people.\"\n---\nSay hello.\n",
		"acme/skills/greet/references/a b.md":     "# A\n",
		"acme/skills/greet/scripts/run.sh":        "#!/bin/sh\n",
		"acme/skills/greet/references/r\u202e.md": "hidden name\n",
		"secret.txt":         "SECRET\n",
		"broken/plugin.json": "{",
	})
	if err := os.Symlink(filepath.Join(root, "secret.txt"), filepath.Join(root, "acme/skills/greet/references/leak.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "acme/skills/greet/assets"), 0o755); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(filepath.Join(root, "acme/skills/greet/assets/big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(50 << 20); err != nil {
		t.Fatal(err)
	}
	big.Close()
	code, out, errOut := run(t, "skills", "--json", "--plugin", filepath.Join(root, "acme"), "--plugin", filepath.Join(root, "broken"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep skillsReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Skills) != 1 {
		t.Fatalf("skills: %+v", rep.Skills)
	}
	s := rep.Skills[0]
	if s.Plugin != "acme" || s.Name != "greet" || s.Description != "Greets people." || s.URI != "skill://acme/greet/SKILL.md" || len(s.Fingerprint) != 64 {
		t.Fatalf("skill: %+v", s)
	}
	var files []string
	for _, f := range s.Files {
		files = append(files, f.Path+"|"+f.Kind+"|"+f.URI)
		if (f.SHA256 == "") != (f.Path == "assets/big.bin") {
			t.Errorf("file %+v: hash", f)
		}
	}
	want := "assets/big.bin|asset|skill://acme/greet/assets/big.bin," +
		"references/a b.md|reference|skill://acme/greet/references/a%20b.md," +
		"scripts/run.sh|script|skill://acme/greet/scripts/run.sh"
	if strings.Join(files, ",") != want {
		t.Fatalf("files:\n%s\nwant\n%s", strings.Join(files, ","), want)
	}
	if !strings.HasPrefix(rep.Index, "## Skills from plugins") || !strings.Contains(rep.Index, "- acme/greet: Greets people.\n") {
		t.Fatalf("index: %q", rep.Index)
	}
	var rules []string
	for _, d := range rep.Diagnostics {
		rules = append(rules, string(d.Rule)+" "+d.Origin)
	}
	joined := strings.Join(rules, "\n")
	for _, w := range []string{"manifest-invalid plugin.json", "path-escapes-plugin-root skills/greet/references/leak.md", "invalid-skill skills/greet/references/r.md"} {
		if !strings.Contains(joined, w) {
			t.Errorf("diagnostics lack %q:\n%s", w, joined)
		}
	}
	if strings.Contains(out, "SECRET") || strings.Contains(out, "\u202e") || strings.Contains(out, "\u200b") {
		t.Fatalf("the report carries the secret or a hidden character:\n%s", out)
	}
}

func TestSkillsConfigAndUsage(t *testing.T) {
	if code, _, errOut := run(t, "skills"); code != 2 || !strings.Contains(errOut, "skills needs --plugin DIR or --config FILE") {
		t.Fatalf("no plugins: exit %d: %s", code, errOut)
	}
	if code, _, _ := run(t, "skills", "extra"); code != 2 {
		t.Fatalf("an argument: exit %d", code)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gatehouse.yaml")
	if err := os.WriteFile(cfg, []byte("plugins: ["+examplePlugin(t)+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "skills", "--config", cfg, "--json")
	if code != 0 || !strings.Contains(out, `"uri": "skill://hello/greet/references/style.md"`) {
		t.Fatalf("config: exit %d: %s\n%s", code, out, errOut)
	}
	empty := writeTree(t, map[string]string{"plugin.json": strings.Replace(goodManifest, `,"surprise":1`, "", 1)})
	code, out, _ = run(t, "skills", "--plugin", empty)
	if code != 0 || !strings.Contains(out, "(no skills)") || strings.Contains(out, "index (") {
		t.Fatalf("a plugin without skills: exit %d:\n%s", code, out)
	}
}
