package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

func readyz(t *testing.T, g *gw) gateway.Readiness {
	t.Helper()
	resp, err := http.Get("http://" + g.addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r gateway.Readiness
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if (resp.StatusCode == http.StatusOK) != r.Ready {
		t.Errorf("readyz status %d with ready=%v", resp.StatusCode, r.Ready)
	}
	return r
}

// TestHTTPUpstreamHealthAndRejectedPlugin: an HTTP upstream served with
// prefix "", a rejected plugin logged and reported by /readyz while the
// rest is served, /healthz.
func TestHTTPUpstreamHealthAndRejectedPlugin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fx := exec.CommandContext(ctx, bins.fixture, "-http", "127.0.0.1:0", "-tools", "echo,whoami")
	out, _ := fx.StdoutPipe()
	if err := fx.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = fx.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url := strings.TrimSpace(strings.TrimPrefix(line, "listening ")) + "/mcp"
	if err := os.Mkdir(filepath.Join(dir, "broken"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, dir, fmt.Sprintf("plugins: [./broken]\nservers:\n  web:\n    type: streamable-http\n    url: %s\n    prefix: \"\"\n  gone:\n    type: streamable-http\n    url: http://127.0.0.1:1/mcp\n\n", url))
	g := startGateway(t, dir)
	if !strings.Contains(g.logText(), "plugin rejected") {
		t.Errorf("the rejected plugin was not logged:\n%s", g.logText())
	}
	cs := connect(t, g.url, "")
	if r := mustCall(t, cs, "echo", map[string]any{"text": "over http"}, nil); text(r) != "over http" {
		t.Errorf("echo = %q", text(r))
	}
	r := readyz(t, g)
	states := map[string]string{}
	for _, s := range r.Servers {
		states[s.Name] = s.State
	}
	if !r.Ready || r.Store != "ok" || states["web"] != "connected" || states["gone"] != "skipped" ||
		len(r.Plugins) != 1 || r.Plugins[0].Loaded {
		t.Errorf("readyz = %+v", r)
	}
	resp, err := http.Get("http://" + g.addr + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", err, resp)
	}
	resp.Body.Close()
}

// TestStdioMode: `serve --stdio` speaks MCP on stdin/stdout.
func TestStdioMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, "servers:\n"+fixtureServer("fx", "-tools", "echo"))
	cmd := exec.Command(bins.gatehouse, "serve", "--stdio", "--config", filepath.Join(dir, "gatehouse.yaml"))
	cmd.Dir, cmd.Env = dir, env()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": "stdio"}})
	if err != nil || text(res) != "stdio" {
		t.Fatalf("stdio echo: %v %v", err, res)
	}
	if !strings.HasPrefix(cs.InitializeResult().Instructions, "Gatehouse gateway: ") {
		t.Errorf("instructions %q", cs.InitializeResult().Instructions)
	}
}

// TestConfigAndRuntimeErrors: config mistakes exit 2 naming the file, the
// field and the fix; a store that cannot be reached exits 1.
func TestConfigAndRuntimeErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		name, yaml string
		args       []string
		code       int
		want       []string
	}{
		{"unknown field", "listne: 1\n", nil, 2, []string{"gatehouse.yaml", "listne", "fix:"}},
		{"open listen without auth", "listen: 0.0.0.0:8080\n", nil, 2, []string{"gatehouse.yaml: listen:", "loopback", "fix: configure auth.tokens"}},
		{"--listen without auth", "", []string{"--listen", "0.0.0.0:0"}, 2, []string{"listen", "fix:"}},
		{"bad inline server", "servers: {x: {type: stdio, command: 'a b'}}\n", nil, 2, []string{"servers.x", "fix:"}},
		{"bad log format", "", []string{"--log-format", "xml"}, 2, []string{"--log-format"}},
		{"store unreachable", "store: postgres://nobody@127.0.0.1:1/none?connect_timeout=2\n", nil, 1, []string{"store"}},
	}
	for _, tc := range cases {
		p := writeConfigNamed(t, dir, tc.name, tc.yaml)
		_, stderr, code := cli(t, dir, append([]string{"serve", "--config", p}, tc.args...)...)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d\n%s", tc.name, code, tc.code, stderr)
		}
		for _, w := range tc.want {
			w = strings.ReplaceAll(w, "gatehouse.yaml", filepath.Base(p))
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", tc.name, w, stderr)
			}
		}
	}
	// No config outside a checkout: a clear usage error.
	_, stderr, code := cli(t, dir, "serve")
	if code != 2 || !strings.Contains(stderr, "examples/plugins/hello") || !strings.Contains(stderr, "--config") {
		t.Errorf("serve without config outside a checkout: %d %s", code, stderr)
	}
}

func writeConfigNamed(t *testing.T, dir, name, yaml string) string {
	t.Helper()
	p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
