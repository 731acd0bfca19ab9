package gateway

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// yamlBlock is one ```yaml block of a Markdown page and the heading it sits
// under.
type yamlBlock struct {
	heading string
	line    int // of the opening fence, 1-based
	text    string
}

// yamlBlocks returns every ```yaml block of a Markdown page, each with the
// nearest heading above it. An unclosed block is returned too (so it fails
// to parse rather than vanish).
func yamlBlocks(t *testing.T, md []byte) []yamlBlock {
	t.Helper()
	var (
		out     []yamlBlock
		heading = "(before any heading)"
		cur     *yamlBlock
		body    strings.Builder
		inOther bool // inside a fenced block of another language
	)
	sc := bufio.NewScanner(bytes.NewReader(md))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trim := strings.TrimSpace(line)
		switch {
		case cur != nil && trim == "```":
			cur.text = body.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(line)
			body.WriteByte('\n')
		case inOther && strings.HasPrefix(trim, "```"):
			inOther = false
		case inOther:
		case trim == "```yaml" || trim == "```yml":
			cur = &yamlBlock{heading: heading, line: n}
			body.Reset()
		case strings.HasPrefix(trim, "```"):
			inOther = true
		case strings.HasPrefix(line, "#"):
			heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		cur.text = body.String()
		out = append(out, *cur)
	}
	return out
}

// TestDocsOAuthConfigsParse keeps docs/oauth.md honest: every ```yaml block
// in it is a complete gateway config that ParseConfig accepts and that makes
// the gateway an OAuth resource server (auth.resource and auth.oauth.issuer
// set), and there is one for each provider the guide covers.
func TestDocsOAuthConfigsParse(t *testing.T) {
	md, err := os.ReadFile(filepath.Join("..", "docs", "oauth.md"))
	if err != nil {
		t.Fatalf("the OAuth guide: %v", err)
	}
	blocks := yamlBlocks(t, md)
	providers := []string{"Keycloak", "Microsoft Entra ID", "Okta", "Auth0", "Dex"}
	covered := map[string]bool{}
	for _, b := range blocks {
		dir := t.TempDir()
		cfg, err := ParseConfig([]byte(b.text), filepath.Join(dir, "gatehouse.yaml"), dir)
		if err != nil {
			t.Errorf("docs/oauth.md line %d, the yaml block under %q does not parse: %v", b.line, b.heading, err)
			continue
		}
		if cfg.Auth == nil || cfg.Auth.OAuth == nil || cfg.Auth.Resource == "" || cfg.Auth.OAuth.Issuer == "" {
			t.Errorf("docs/oauth.md line %d, the yaml block under %q configures no OAuth (auth.resource and auth.oauth.issuer)", b.line, b.heading)
			continue
		}
		for _, p := range providers {
			if strings.Contains(b.heading, p) {
				covered[p] = true
			}
		}
	}
	for _, p := range providers {
		if !covered[p] {
			t.Errorf("docs/oauth.md has no parsing yaml block under a heading naming %s", p)
		}
	}
}

// TestYAMLBlocks checks the extractor the guide's test relies on, so that
// test cannot pass by finding nothing.
func TestYAMLBlocks(t *testing.T) {
	md := "# A\n```yaml\nlisten: x\n```\n## B\n```sh\n# not a heading\n```\n```yaml\na: 1\nb: 2\n```\n### C\n```yaml\nopen: 1\n"
	got := yamlBlocks(t, []byte(md))
	want := []yamlBlock{
		{heading: "A", line: 2, text: "listen: x\n"},
		{heading: "B", line: 9, text: "a: 1\nb: 2\n"},
		{heading: "C", line: 14, text: "open: 1\n"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d blocks %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
