package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeSkillsPlugin writes a plugin "handbook" without servers whose skill
// "incident" has a body and a reference, and returns its directory.
func writeSkillsPlugin(t *testing.T, dir string) string {
	t.Helper()
	root := filepath.Join(dir, "handbook")
	for name, body := range map[string]string{
		"plugin.json": `{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "handbook", "version": "1.0.0", "description": "The on-call handbook."}`,
		"skills/incident/SKILL.md": "---\nname: incident\ndescription: Run an incident by the handbook.\n---\n\n# Incident\n\n" +
			"Open references/checklist.md and work through it in order.\n",
		"skills/incident/references/checklist.md": "# Checklist\n\n1. Page the owner.\n2. Write the timeline.\n",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// tsSkillsRun is what skills-client.mjs printed.
type tsSkillsRun struct {
	Capabilities map[string]any `json:"capabilities"`
	Resources    []struct {
		URI, Name, Description, MimeType string
	} `json:"resources"`
	Prompts []struct {
		Name, Description string
	} `json:"prompts"`
	Body, File struct {
		Contents []struct {
			URI, MimeType, Text string
		} `json:"contents"`
		Error string `json:"error"`
		Code  int    `json:"code"`
	}
	Prompt struct {
		Messages []struct {
			Role    string
			Content struct{ Type, Text string }
		} `json:"messages"`
		Error string `json:"error"`
		Code  int    `json:"code"`
	}
	Error string `json:"error"`
}

// runTSSkills runs skills-client.mjs against url with token; it reads the
// skill's body and fileURI.
func runTSSkills(t *testing.T, dir, url, token, fileURI string) tsSkillsRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "skills-client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+url, "TOKEN="+token,
		"BODY_URI=skill://handbook/incident/SKILL.md", "FILE_URI="+fileURI,
		"PROMPT=handbook__incident")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var run tsSkillsRun
	if jerr := json.Unmarshal(out, &run); jerr != nil {
		t.Fatalf("skills-client.mjs printed no result (%v, %v):\nstdout: %s\nstderr: %s", err, jerr, out, stderr.String())
	}
	if err != nil || run.Error != "" {
		t.Fatalf("skills-client.mjs failed (%v): %s\n%s", err, run.Error, stderr.String())
	}
	return run
}

// TestTypeScriptClientSkills: the official TypeScript SDK client reads a
// plugin's skill through `gatehouse serve` as a resource (its body as
// text/markdown, its reference) and as a prompt (the body), beside the
// fixture server's tools. A token whose scopes have no skill scope lists
// neither and reads neither: the read answers as for a skill that does not
// exist, and the prompt as an unknown prompt.
func TestTypeScriptClientSkills(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	js := tsClientDir(t)
	plug := writeSkillsPlugin(t, dir)
	writeConfig(t, dir, fmt.Sprintf(`plugins: [%s]
servers:
%sauth:
  tokens:
    - {sha256: %s, subject: reader, scopes: ["tool:*", "skill:handbook__incident"]}
    - {sha256: %s, subject: tools-only, scopes: ["tool:*"]}
`, plug, fixtureServer("fx", "-tools", "echo"), sha("reader-token"), sha("tools-token")))
	g := startGateway(t, dir)

	run := runTSSkills(t, js, g.url, "reader-token", "skill://handbook/incident/references/checklist.md")
	if run.Capabilities["resources"] == nil || run.Capabilities["prompts"] == nil {
		t.Errorf("the gateway advertised %v: no resources or prompts", run.Capabilities)
	}
	var uris []string
	for _, r := range run.Resources {
		uris = append(uris, r.URI)
		if r.URI == "skill://handbook/incident/SKILL.md" && (r.Name != "incident" || r.Description != "Run an incident by the handbook." || r.MimeType != "text/markdown") {
			t.Errorf("the skill's body is listed as %+v", r)
		}
	}
	if strings.Join(uris, " ") != "skill://handbook/incident/SKILL.md skill://handbook/incident/references/checklist.md" {
		t.Errorf("resources/list = %q", uris)
	}
	if len(run.Prompts) != 1 || run.Prompts[0].Name != "handbook__incident" || run.Prompts[0].Description != "Run an incident by the handbook." {
		t.Errorf("prompts/list = %+v", run.Prompts)
	}
	if b := run.Body; b.Error != "" || len(b.Contents) != 1 || b.Contents[0].MimeType != "text/markdown" ||
		!strings.Contains(b.Contents[0].Text, "work through it in order") {
		t.Errorf("the skill's body read as %+v", b)
	}
	if f := run.File; f.Error != "" || len(f.Contents) != 1 || f.Contents[0].Text != "# Checklist\n\n1. Page the owner.\n2. Write the timeline.\n" {
		t.Errorf("the skill's reference read as %+v", f)
	}
	if p := run.Prompt; p.Error != "" || len(p.Messages) != 1 || p.Messages[0].Role != "user" ||
		!strings.Contains(p.Messages[0].Content.Text, "work through it in order") {
		t.Errorf("the skill's prompt got %+v", p)
	}

	// The hidden skill's body, and (as "file") a skill that does not exist.
	hidden := runTSSkills(t, js, g.url, "tools-token", "skill://handbook/nosuch/SKILL.md")
	if len(hidden.Resources) != 0 || len(hidden.Prompts) != 0 {
		t.Errorf("a token without the skill's scope lists resources %+v and prompts %+v", hidden.Resources, hidden.Prompts)
	}
	if hidden.Body.Error == "" || hidden.Body.Error != hidden.File.Error || hidden.Body.Code != hidden.File.Code || len(hidden.Body.Contents) != 0 {
		t.Errorf("a token without the skill's scope reads it as %+v, an unknown skill as %+v", hidden.Body, hidden.File)
	}
	if hidden.Prompt.Code != -32602 || !strings.Contains(hidden.Prompt.Error, `unknown prompt "handbook__incident"`) {
		t.Errorf("a token without the skill's scope gets its prompt: %+v", hidden.Prompt)
	}
}
