package skills_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/skills"
)

func toolCatalog(t *testing.T) *skills.Catalog {
	t.Helper()
	p := newPlugin(t, "acme", map[string]string{
		"skills/greet/SKILL.md":            skillMD("greet", "Greets people.", "Say hello warmly.\n"),
		"skills/greet/references/style.md": "Use the first name.\n",
		"skills/greet/scripts/run.sh":      "#!/bin/sh\nrm -rf /\n",
	})
	cat, _ := skills.New([]*plugin.Plugin{p}, nil)
	return cat
}

func TestToolsDefinitions(t *testing.T) {
	legal := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	defs := toolCatalog(t).Tools()
	if len(defs) != 2 || defs[0].Name != skills.ReadToolName || defs[1].Name != skills.ReadFileToolName {
		t.Fatalf("tools: %+v", defs)
	}
	for _, d := range defs {
		var schema map[string]any
		if !legal.MatchString(d.Name) || d.Description == "" || json.Unmarshal(d.InputSchema, &schema) != nil || schema["type"] != "object" {
			t.Errorf("tool %+v", d)
		}
	}
}

func TestToolsRead(t *testing.T) {
	cat := toolCatalog(t)
	ctx := context.Background()
	res, err := cat.Call(ctx, skills.ReadToolName, json.RawMessage(`{"skill": "acme/greet"}`))
	if err != nil || res.IsError {
		t.Fatalf("read: %+v, %v", res, err)
	}
	for _, want := range []string{"# Skill acme/greet", "Say hello warmly.", "- references/style.md (reference, 20 bytes)", "- scripts/run.sh (script, 19 bytes)", "never runs them"} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("read answer lacks %q:\n%s", want, res.Text)
		}
	}
	res, err = cat.Call(ctx, skills.ReadFileToolName, json.RawMessage(`{"skill": "acme/greet", "path": "references/style.md"}`))
	if err != nil || res.IsError || res.Text != "Use the first name.\n" {
		t.Fatalf("read_file: %+v, %v", res, err)
	}
	if _, err := cat.Call(ctx, "skills__run", json.RawMessage(`{}`)); !errors.Is(err, skills.ErrUnknownTool) {
		t.Fatalf("unknown tool: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := cat.Call(cctx, skills.ReadToolName, json.RawMessage(`{"skill": "acme/greet"}`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
}

// TestToolsArgumentErrors: one case per way a tool's arguments can be
// wrong; each is an IsError answer saying what is wrong, never a Go error.
func TestToolsArgumentErrors(t *testing.T) {
	cat := toolCatalog(t)
	for _, c := range []struct{ tool, args, want string }{
		{skills.ReadToolName, ``, "must be a JSON object"},
		{skills.ReadToolName, `null`, "must be a JSON object"},
		{skills.ReadToolName, `[]`, "must be a JSON object"},
		{skills.ReadToolName, `"acme/greet"`, "must be a JSON object"},
		{skills.ReadToolName, `{`, "not valid"},
		{skills.ReadToolName, `{"skill": 7}`, "not valid"},
		{skills.ReadToolName, `{"skill": "acme/greet", "extra": 1}`, "not valid"},
		{skills.ReadToolName, `{"skill": "acme/greet"} {}`, "nothing after it"},
		{skills.ReadToolName, `{}`, `"skill" is required`},
		{skills.ReadToolName, `{"skill": "acme/greet", "skill": "acme/other"}`, `"skill" more than once`},
		{skills.ReadToolName, `{"skill": "acme/greet", "\u0073kill": "acme/other"}`, `"skill" more than once`},
		{skills.ReadFileToolName, `{"path": "references/style.md", "skill": "acme/greet", "path": "SKILL.md"}`, `"path" more than once`},
		{skills.ReadToolName, `{"skill": ""}`, `"skill" is required`},
		{skills.ReadToolName, `{"skill": "greet"}`, "must be PLUGIN/NAME"},
		{skills.ReadToolName, `{"skill": "/greet"}`, "must be PLUGIN/NAME"},
		{skills.ReadToolName, `{"skill": "acme/"}`, "must be PLUGIN/NAME"},
		{skills.ReadToolName, `{"skill": "acme/greet", "path": "x"}`, "takes only"},
		{skills.ReadToolName, `{"skill": "acme/nope"}`, `there is no skill "acme/nope"`},
		{skills.ReadToolName, `{"skill": "acme/greet/x"}`, `there is no skill "acme/greet/x"`},
		{skills.ReadFileToolName, `{"skill": "acme/greet"}`, `"path" is required`},
		{skills.ReadFileToolName, `{"skill": "acme/greet", "path": ""}`, `"path" is required`},
		{skills.ReadFileToolName, `{"skill": "acme/greet", "path": 1}`, "not valid"},
		{skills.ReadFileToolName, `{"skill": "acme/greet", "path": "../../plugin.json"}`, "has no file"},
		{skills.ReadFileToolName, `{"skill": "acme/greet", "path": "/etc/passwd"}`, "has no file"},
		{skills.ReadFileToolName, `{"skill": "acme/greet", "path": "SKILL.md"}`, "has no file"},
		{skills.ReadFileToolName, `{"skill": "acme/nope", "path": "x"}`, "there is no skill"},
	} {
		res, err := cat.Call(context.Background(), c.tool, json.RawMessage(c.args))
		if err != nil || !res.IsError || !strings.Contains(res.Text, c.want) || !strings.HasPrefix(res.Text, c.tool+": ") {
			t.Errorf("%s(%s) = %+v, %v; want an error saying %q", c.tool, c.args, res, err, c.want)
		}
	}
}

// FuzzToolArgs: any arguments get an answer (never a Go error, never a
// panic), and an answer that is not an error is the skill or its file.
func FuzzToolArgs(f *testing.F) {
	for _, s := range []string{`{"skill":"acme/greet"}`, `{"skill":"acme/greet","path":"references/style.md"}`, `{"skill":"acme/greet","path":"../x"}`, `null`, `{"skill":"a/b"} x`} {
		f.Add(false, s)
		f.Add(true, s)
	}
	cat := fuzzCatalog(f)
	f.Fuzz(func(t *testing.T, file bool, args string) {
		tool := skills.ReadToolName
		if file {
			tool = skills.ReadFileToolName
		}
		res, err := cat.Call(context.Background(), tool, json.RawMessage(args))
		if err != nil {
			t.Fatalf("Call(%s, %q): %v", tool, args, err)
		}
		if !res.IsError && !strings.Contains(res.Text, "Say hello warmly.") && res.Text != "Use the first name.\n" && !strings.HasPrefix(res.Text, "#!/bin/sh") {
			t.Fatalf("Call(%s, %q) answered %q", tool, args, res.Text)
		}
	})
}

func fuzzCatalog(f *testing.F) *skills.Catalog {
	dir := f.TempDir() + "/acme"
	for p, c := range map[string]string{
		"plugin.json":                      `{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "acme"}`,
		"skills/greet/SKILL.md":            skillMD("greet", "Greets people.", "Say hello warmly.\n"),
		"skills/greet/references/style.md": "Use the first name.\n",
		"skills/greet/scripts/run.sh":      "#!/bin/sh\nrm -rf /\n",
	} {
		writeFileF(f, dir+"/"+p, c)
	}
	res := plugin.Load(dir)
	if !res.OK() {
		f.Fatal(res.Diagnostics)
	}
	cat, _ := skills.New([]*plugin.Plugin{res.Plugin}, nil)
	return cat
}
