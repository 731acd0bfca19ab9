package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// searchServers serves a mail and a tracker server (real go-sdk servers
// over streamable HTTP on 127.0.0.1) and writes a config in front of
// them, with extra lines.
func searchServers(t *testing.T, extra string) string {
	t.Helper()
	urls := map[string]string{}
	for name, tools := range map[string][][2]string{
		"mail":    {{"send_email", "Send an email message to a recipient."}, {"delete_email", "Delete an email message for good."}},
		"tracker": {{"create_issue", "Open a new issue in a project."}, {"close_issue", "Close an issue that is done."}},
	} {
		s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
		for _, tl := range tools {
			s.AddTool(&mcp.Tool{Name: tl[0], Description: tl[1], InputSchema: map[string]any{"type": "object",
				"properties": map[string]any{"project": map[string]any{"type": "string", "description": "The project."}}}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{}, nil
				})
		}
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
		t.Cleanup(hs.Close)
		urls[name] = hs.URL + "/mcp"
	}
	cfg := filepath.Join(t.TempDir(), "gatehouse.yaml")
	yml := fmt.Sprintf("servers:\n  mail: {type: streamable-http, url: %q}\n  tracker: {type: streamable-http, url: %q}\n%s", urls["mail"], urls["tracker"], extra)
	if err := os.WriteFile(cfg, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GATEHOUSE_STORE", "")
	return cfg
}

type searchAnswer struct {
	Tools []struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"inputSchema"`
		Score       float64        `json:"score"`
	} `json:"tools"`
}

// `gatehouse tools --search` prints what gatehouse__search_tools would
// answer: the structured content with --json (and nothing else on
// stdout), the text otherwise; tools.block is applied, search.limit is the
// default and --limit overrides it; a bad query or limit is a usage error
// that says why, before anything is connected.
func TestToolsSearch(t *testing.T) {
	cfg := searchServers(t, "tools: {block: [mail__delete_email]}\nsearch: {limit: 3}\n")

	code, out, errOut := run(t, "tools", "--config", cfg, "--search", "open a new issue in a project", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var ans searchAnswer
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ans); err != nil {
		t.Fatalf("stdout is not the answer alone: %v\n%s", err, out)
	}
	if len(ans.Tools) == 0 || len(ans.Tools) > 3 || ans.Tools[0].Name != "tracker__create_issue" ||
		ans.Tools[0].Description != "Open a new issue in a project." || ans.Tools[0].InputSchema["properties"] == nil {
		t.Fatalf("answer: %+v", ans)
	}
	for _, h := range ans.Tools {
		// Rounded: the nearest float64 to a number of hundredths (4.85 times
		// 100 is 484.99999999999994 in floating point, not 485).
		if math.Abs(h.Score*100-math.Round(h.Score*100)) > 1e-9 || h.Score <= 0 {
			t.Errorf("score %v is not rounded to 2 decimals", h.Score)
		}
	}

	code, out, _ = run(t, "tools", "--config", cfg, "--search", "delete an email message", "--limit", "50", "--json")
	if code != 0 || strings.Contains(out, "mail__delete_email") || !strings.Contains(out, "mail__send_email") {
		t.Errorf("the blocked tool: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, "tools", "--config", cfg, "--search", "issue", "--limit", "1", "--json")
	if err := json.Unmarshal([]byte(out), &ans); code != 0 || err != nil || len(ans.Tools) != 1 {
		t.Errorf("--limit 1: exit %d: %s", code, out)
	}
	code, out, _ = run(t, "tools", "--config", cfg, "--search", "close the issue")
	if code != 0 || !strings.Contains(out, "1. tracker__close_issue (score ") || !strings.Contains(out, `input schema: {"properties":{"project"`) {
		t.Errorf("text: exit %d\n%s", code, out)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--search", "what is the"}, "--search: has no words to search"},
		{[]string{"--search", ""}, "--search: is empty"},
		{[]string{"--search", "issue", "--limit", "0"}, "--limit: must be a whole number from 1 to 50"},
		{[]string{"--search", "issue", "--limit", "51"}, "--limit: must be a whole number from 1 to 50"},
		{[]string{"--limit", "3"}, "--limit needs --search"},
	} {
		code, out, errOut := run(t, append([]string{"tools", "--config", cfg}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
}
