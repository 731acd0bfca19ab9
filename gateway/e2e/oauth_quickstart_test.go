package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// quickStart is the section of docs/oauth.md that TestOAuthQuickStart runs.
const quickStart = "Try it locally in five minutes"

// fence is one fenced block of a Markdown page.
type fence struct {
	lang, text string
}

// section returns the text of the "## heading" section of md.
func section(t *testing.T, md, heading string) string {
	t.Helper()
	start := strings.Index(md, "\n## "+heading+"\n")
	if start < 0 {
		t.Fatalf("docs/oauth.md has no section %q", heading)
	}
	body := md[start+len(heading)+5:]
	if end := strings.Index(body, "\n## "); end >= 0 {
		body = body[:end]
	}
	return body
}

// sectionFences returns the fenced blocks of the "## heading" section of
// md, in order.
func sectionFences(t *testing.T, md, heading string) []fence {
	t.Helper()
	body := section(t, md, heading)
	var out []fence
	var cur *fence
	var text strings.Builder
	for line := range strings.Lines(body) {
		trim := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trim, "```"):
			cur = &fence{lang: strings.TrimPrefix(trim, "```")}
			text.Reset()
		case cur != nil && trim == "```":
			cur.text = text.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			text.WriteString(line)
		}
	}
	if cur != nil {
		t.Fatalf("docs/oauth.md, section %q: a ```%s block is not closed", heading, cur.lang)
	}
	return out
}

// quickStartDoc is what the quick start shows: its commands, config and
// script.
type quickStartDoc struct {
	text     string // the whole section
	commands string // every ```sh block, joined
	config   string // the ```yaml block
	script   string // the ```js block: quickstart.mjs
}

func readQuickStart(t *testing.T) quickStartDoc {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "oauth.md"))
	if err != nil {
		t.Fatal(err)
	}
	d := quickStartDoc{text: section(t, string(b), quickStart)}
	for _, f := range sectionFences(t, string(b), quickStart) {
		switch f.lang {
		case "sh":
			d.commands += f.text
		case "yaml":
			if d.config != "" {
				t.Fatal("the quick start has two ```yaml blocks: which is gatehouse.yaml?")
			}
			d.config = f.text
		case "js":
			if d.script != "" {
				t.Fatal("the quick start has two ```js blocks: which is quickstart.mjs?")
			}
			d.script = f.text
		}
	}
	if d.config == "" || d.script == "" {
		t.Fatalf("the quick start lacks its config or its script: %+v", d)
	}
	return d
}

// authServerProc is a running examples/authserver: its banner and its
// output after it.
type authServerProc struct {
	mu     sync.Mutex
	out    []string
	banner chan struct{}
	done   chan struct{}
}

func (p *authServerProc) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.out, "\n")
}

// startAuthServer builds and runs examples/authserver with args until the
// test ends, and waits for its banner (the gateway's auth block).
func startAuthServer(t *testing.T, args ...string) *authServerProc {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(t.TempDir(), "authserver")
	build := exec.Command("go", "build", "-o", bin, "./examples/authserver")
	build.Dir = filepath.Join(filepath.Dir(file), "..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building examples/authserver: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &authServerProc{banner: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		seen := false
		for sc.Scan() {
			p.mu.Lock()
			p.out = append(p.out, sc.Text())
			p.mu.Unlock()
			if !seen && strings.Contains(sc.Text(), "oauth: {issuer:") {
				seen = true
				close(p.banner)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
			t.Errorf("examples/authserver did not stop on SIGINT")
		}
	})
	select {
	case <-p.banner:
	case <-p.done:
		t.Fatalf("examples/authserver exited before it was ready:\n%s\n%s", p.text(), stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("examples/authserver printed no auth block in time:\n%s", p.text())
	}
	return p
}

// exportLine reads the variables of the banner's "export ..." line.
func exportLine(t *testing.T, banner string) map[string]string {
	t.Helper()
	for line := range strings.Lines(banner) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "export "); ok {
			vars := map[string]string{}
			for _, kv := range strings.Fields(rest) {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					t.Fatalf("the export line has %q, not NAME=VALUE", kv)
				}
				vars[k] = v
			}
			return vars
		}
	}
	t.Fatalf("the authorization server printed no export line:\n%s", banner)
	return nil
}

// TestOAuthQuickStart runs docs/oauth.md's quick start as written: the
// example authorization server as a process, `gatehouse serve` as a
// process with the page's config (its ports, and the plugin's path made
// absolute, being the only changes), and the official TypeScript SDK
// running the page's quickstart.mjs with the variables the authorization
// server printed: client credentials, then authorization code with PKCE,
// each calling greeter__greet through the gateway as its own caller. The
// auth block the server prints must be the page's, and the page's commands
// must be the ones run here.
func TestOAuthQuickStart(t *testing.T) {
	t.Parallel()
	doc := readQuickStart(t)
	for _, c := range []string{"go run ./examples/authserver", "go run ./cmd/gatehouse serve --config gatehouse.yaml",
		"npm install @modelcontextprotocol/sdk@" + pinnedSDK(t), "node quickstart.mjs client-credentials", "node quickstart.mjs authorization-code"} {
		if !strings.Contains(doc.commands, c) {
			t.Errorf("the quick start's commands do not say %q (the test runs it):\n%s", c, doc.commands)
		}
	}
	js := tsClientDir(t)

	// The page's ports and paths, replaced by the test's.
	const docIssuer, docGateway, docPlugin = "127.0.0.1:9400", "127.0.0.1:8080", "./examples/plugins/hello"
	for _, s := range []string{docIssuer, docGateway, docPlugin} {
		if !strings.Contains(doc.config, s) {
			t.Fatalf("the quick start's config no longer says %s: update this test with it\n%s", s, doc.config)
		}
	}
	_, file, _, _ := runtime.Caller(0)
	plugin, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", "examples", "plugins", "hello"))
	if err != nil {
		t.Fatal(err)
	}
	asAddr := fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t))
	gwAddr := fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t))
	ours := strings.NewReplacer(docIssuer, asAddr, docGateway, gwAddr, docPlugin, plugin)

	// Step 1: the authorization server, told the gateway's URL.
	as := startAuthServer(t, "-listen", asAddr, "-gateway", "http://"+gwAddr+"/mcp")
	banner := as.text()
	authBlock := banner[strings.Index(banner, "auth:\n"):]
	if want := ours.Replace(doc.config); !strings.Contains(want, strings.TrimSpace(authBlock)) {
		t.Errorf("the auth block the server prints is not the page's:\nprinted:\n%s\npage (ports replaced):\n%s", authBlock, want)
	}
	vars := exportLine(t, banner)
	if vars["GATEWAY_URL"] != "http://"+gwAddr+"/mcp" || vars["ISSUER"] != "http://"+asAddr || vars["CLIENT_SECRET"] == "" {
		t.Fatalf("the export line = %v", vars)
	}

	// Step 2: the gateway with the page's config.
	dir := t.TempDir()
	writeConfig(t, dir, ours.Replace(doc.config))
	g := startGateway(t, dir, "--listen", gwAddr)
	if g.url != vars["GATEWAY_URL"] {
		t.Fatalf("the gateway serves %s, the client is told %s", g.url, vars["GATEWAY_URL"])
	}

	// Step 3: the page's script, with the printed variables, both grants.
	if err := os.WriteFile(filepath.Join(js, "quickstart.mjs"), []byte(doc.script), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, grant := range []string{"client-credentials", "authorization-code"} {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		cmd := exec.CommandContext(ctx, "node", "quickstart.mjs", grant)
		cmd.Dir = js
		cmd.Env = os.Environ()
		for k, v := range vars {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		cancel()
		if err != nil {
			t.Fatalf("node quickstart.mjs %s: %v\nstdout:\n%s\nstderr:\n%s\ngateway:\n%s\nauthorization server:\n%s",
				grant, err, out, stderr.String(), g.logText(), as.text())
		}
		want := "tools: greeter__add greeter__greet\ngreeter__greet: Hello, " + grant + "!\n"
		for _, line := range []string{"`tools: greeter__add greeter__greet`", "`greeter__greet: Hello, <grant>!`"} {
			if !strings.Contains(doc.text, line) {
				t.Errorf("the quick start no longer says the script prints %s", line)
			}
		}
		if string(out) != want {
			t.Errorf("node quickstart.mjs %s printed\n%s\nwant (as the page says)\n%s", grant, out, want)
		}
	}

	// Each grant was its own caller at the gateway, and only the
	// authorization code went through a login.
	issuer := vars["ISSUER"]
	subjects := map[string]string{}
	for range 100 { // the call lines reach the log within its flush interval (100 ms)
		for _, l := range g.callLogs() {
			if l["tool"] == "greeter__greet" {
				subjects[fmt.Sprint(l["subject"])] = fmt.Sprint(l["outcome"])
			}
		}
		if subjects[issuer+"#mcp-agent"] == "ok" && subjects[issuer+"#alice"] == "ok" {
			break
		}
		sleep(20)
	}
	for _, sub := range []string{issuer + "#mcp-agent", issuer + "#alice"} {
		if subjects[sub] != "ok" {
			t.Errorf("no successful greeter__greet by %s at the gateway: %v", sub, subjects)
		}
	}
	if len(subjects) != 2 {
		t.Errorf("callers of greeter__greet = %v, want the two grants' only", subjects)
	}
	logins := regexp.MustCompile(`(?m)^approved an authorization request of mcp-cli as alice`).FindAllString(as.text(), -1)
	if len(logins) != 1 {
		t.Errorf("the authorization server approved %d logins, want 1:\n%s", len(logins), as.text())
	}
	if logs := g.logText(); strings.Contains(logs, "eyJ") || strings.Contains(logs, vars["CLIENT_SECRET"]) {
		t.Errorf("a token or the client secret reached the gateway's logs:\n%s", logs)
	}
}

// pinnedSDK is the TypeScript SDK version testdata/tsclient pins (the
// version the quick start tells users to install).
func pinnedSDK(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "testdata", "tsclient", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	v := pkg.Dependencies["@modelcontextprotocol/sdk"]
	if v == "" {
		t.Fatal("testdata/tsclient/package.json pins no @modelcontextprotocol/sdk")
	}
	return v
}
