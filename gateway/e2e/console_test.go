package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// consoleAddr is the console's address the gateway logged at start.
func (g *gw) consoleAddr(t *testing.T) string {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, l := range g.logs {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "gatehouse: serving the console" {
			return m["addr"].(string)
		}
	}
	t.Fatal("the gateway did not log its console address")
	return ""
}

// TestConsoleServed: `gatehouse serve` with console: serves the console on
// its own listener over the gateway's store: a request without a login is
// sent to the login page, the operator's token logs in, the pending
// approval of a real call and the servers' health are shown, the approval
// is decided under the operator's name (read back with `gatehouse
// approvals list`), and SIGTERM stops it all with an open live-update
// stream.
func TestConsoleServed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	effects := filepath.Join(dir, "effects")
	writeConfig(t, dir, fmt.Sprintf("servers:\n%stools:\n  requireApproval: [fx__count]\nconsole:\n  listen: 127.0.0.1:0\n  admins: [{name: carol, sha256: %s}]\n",
		fixtureServer("fx", "-tools", "echo,count", "-effects", effects), sha("carol-token")))
	g := startGateway(t, dir)
	base := "http://" + g.consoleAddr(t)
	if strings.HasSuffix(g.url, g.consoleAddr(t)+"/mcp") {
		t.Fatal("the console shares the MCP listener")
	}
	cs := connect(t, g.url, "")
	id := wantRefusal(t, mustCall(t, cs, "fx__count", map[string]any{"n": 7}, key("c-1")), "approval_required")["approvalId"].(string)

	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) (int, string) {
		t.Helper()
		res, err := hc.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	post := func(path string, form url.Values) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		return res.StatusCode, res.Header.Get("Location")
	}
	if code, body := get("/approvals"); code != http.StatusSeeOther || strings.Contains(body, id) {
		t.Fatalf("unauthenticated: %d %q", code, body)
	}
	if code, loc := post("/login", url.Values{"token": {"carol-token"}}); code != http.StatusSeeOther || loc != "/approvals" {
		t.Fatalf("login: %d %s", code, loc)
	}
	code, body := get("/approvals")
	if code != 200 || !strings.Contains(body, id) || !strings.Contains(body, "fx__count") || !strings.Contains(body, "&#34;n&#34;: 7") {
		t.Fatalf("approvals page: %d %s", code, body)
	}
	csrf := body[strings.Index(body, `name="csrf" value="`)+len(`name="csrf" value="`):]
	csrf = csrf[:strings.IndexByte(csrf, '"')]
	if code, body := get("/servers"); code != 200 || !strings.Contains(body, `<tr class="health connected"><td>fx</td>`) {
		t.Fatalf("servers page: %d %s", code, body)
	}
	if code, loc := post("/approvals/decide", url.Values{"id": {id}, "verdict": {"approve"}, "csrf": {csrf}}); code != http.StatusSeeOther || loc != "/approvals" {
		t.Fatalf("decide: %d %s", code, loc)
	}
	out, errOut, exit := cli(t, dir, "approvals", "list", "--all", "--json", "--config", filepath.Join(dir, "gatehouse.yaml"))
	if exit != 0 || !strings.Contains(out, `"decidedBy": "carol"`) || !strings.Contains(out, `"state": "approved"`) {
		t.Fatalf("approvals list: %d %s%s", exit, out, errOut)
	}
	mustCall(t, cs, "fx__count", map[string]any{"n": 7}, key("c-1"))
	if n := len(lines(t, effects)); n != 1 {
		t.Fatalf("effects %d, want 1", n)
	}

	// An open live-update stream does not hold the shutdown.
	res, err := hc.Get(base + "/events")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("events: %v %v", res, err)
	}
	defer res.Body.Close()
	if err := g.stop(syscall.SIGTERM); err != nil { // stop fails the test if serve is still up after 30s
		t.Fatalf("serve exited with %v:\n%s", err, g.logText())
	}
}
