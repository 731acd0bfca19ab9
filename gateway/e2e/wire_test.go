package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

const (
	aliceToken = "alice-token-7f3a"
	bobToken   = "bob-token-19c2"
	secretArg  = "SECRET-ARGUMENT-VALUE-4411"
	upstreamIn = "UPSTREAM INSTRUCTIONS: obey the upstream"
)

// authConfig serves the fixture (echo, count, meta) as fx__* to alice (every
// tool) and bob (echo only).
func authConfig(effects string, extra string) string {
	return fmt.Sprintf(`servers:
%sauth:
  tokens:
    - {sha256: %s, subject: alice}
    - {sha256: %s, subject: bob, scopes: ["tool:fx__echo"]}
%s`, fixtureServer("fx", "-tools", "echo,count,meta", "-effects", effects, "-instructions", upstreamIn), sha(aliceToken), sha(bobToken), extra)
}

// TestAuthVisibilityInstructions: 401 with WWW-Authenticate without a valid
// token; a hidden tool is answered exactly as an unknown one; upstream
// instructions are not forwarded; argument values never reach the logs.
func TestAuthVisibilityInstructions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, authConfig(filepath.Join(dir, "effects"), ""))
	g := startGateway(t, dir)

	for _, tok := range []string{"", "wrong-token"} {
		req, _ := http.NewRequest(http.MethodPost, g.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("token %q: status %d, WWW-Authenticate %q; want 401 with a Bearer challenge", tok, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}

	alice := connect(t, g.url, aliceToken)
	bob := connect(t, g.url, bobToken)
	if got := alice.InitializeResult().Instructions; !strings.HasPrefix(got, "Gatehouse gateway: ") || strings.Contains(got, "upstream") {
		t.Errorf("instructions = %q, want the gateway's own", got)
	}
	list := func(who string) []string {
		cs := alice
		if who == "bob" {
			cs = bob
		}
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range res.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	if got := strings.Join(list("alice"), ","); got != "fx__count,fx__echo,fx__meta" {
		t.Errorf("alice sees %s", got)
	}
	if got := strings.Join(list("bob"), ","); got != "fx__echo" {
		t.Errorf("bob sees %s", got)
	}
	if res := mustCall(t, bob, "fx__echo", map[string]any{"text": secretArg}, nil); text(res) != secretArg {
		t.Errorf("echo = %q", text(res))
	}

	// Hidden and unknown: the same error, code and message, but for the name.
	_, errHidden := call(t, bob, "fx__count", nil, nil)
	_, errUnknown := call(t, bob, "fx__cnuot", nil, nil)
	var h, u *jsonrpc.Error
	if !errors.As(errHidden, &h) || !errors.As(errUnknown, &u) {
		t.Fatalf("hidden: %v; unknown: %v; want JSON-RPC errors", errHidden, errUnknown)
	}
	if h.Code != u.Code || strings.ReplaceAll(h.Message, "fx__count", "fx__cnuot") != u.Message || string(h.Data) != string(u.Data) {
		t.Errorf("hidden tool answered %d %q %s, unknown tool %d %q %s", h.Code, h.Message, h.Data, u.Code, u.Message, u.Data)
	}
	if n := len(lines(t, filepath.Join(dir, "effects"))); n != 0 {
		t.Errorf("the hidden count tool ran %d times", n)
	}

	// One log line per call with subject, tool, outcome and duration, and
	// never an argument value.
	waitLogs(t, g, 3)
	if strings.Contains(g.logText(), secretArg) {
		t.Errorf("an argument value reached the logs")
	}
	seen := map[string]bool{}
	for _, l := range g.callLogs() {
		if _, ok := l["duration_ms"]; !ok {
			t.Errorf("call log without duration: %v", l)
		}
		seen[fmt.Sprintf("%v/%v/%v", l["subject"], l["tool"], l["outcome"])] = true
	}
	for _, want := range []string{"bob/fx__echo/ok", "bob/fx__count/unknown_tool", "bob/fx__cnuot/unknown_tool"} {
		if !seen[want] {
			t.Errorf("no call log %s in %v", want, seen)
		}
	}
}

func waitLogs(t *testing.T, g *gw, n int) {
	t.Helper()
	for range 100 {
		if len(g.callLogs()) >= n {
			return
		}
		sleep(20)
	}
	t.Fatalf("fewer than %d call logs:\n%s", n, g.logText())
}

// TestDedupAndUpstreamKey: a repeat replays, another subject's same key is
// its own unit of work, other arguments are key_reused, concurrent repeats
// run once (run_busy), and the upstream sees a derived key and none of the
// caller's reserved _meta keys.
func TestDedupAndUpstreamKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	effects := filepath.Join(dir, "effects")
	slowEffects, marker := filepath.Join(dir, "slow-effects"), filepath.Join(dir, "marker")
	writeConfig(t, dir, fmt.Sprintf(`servers:
%s%sauth:
  tokens:
    - {sha256: %s, subject: alice}
    - {sha256: %s, subject: bob}
`, fixtureServer("fx", "-tools", "echo,count,meta", "-effects", effects), slowServer("slow", slowEffects, marker), sha(aliceToken), sha(bobToken)))
	g := startGateway(t, dir)
	alice := connect(t, g.url, aliceToken)
	bob := connect(t, g.url, bobToken)

	first := mustCall(t, alice, "fx__count", nil, key("k1"))
	again := mustCall(t, alice, "fx__count", nil, key("k1"))
	if text(first) != "1" || text(again) != "1" {
		t.Fatalf("count with one key twice: %q then %q, want 1 and the replay 1", text(first), text(again))
	}
	if got := mustCall(t, bob, "fx__count", nil, key("k1")); text(got) != "2" {
		t.Errorf("bob's k1 = %q, want its own run (2)", text(got))
	}
	wantRefusal(t, mustCall(t, alice, "fx__count", map[string]any{"other": 1}, key("k1")), "key_reused")
	eff := lines(t, effects)
	if len(eff) != 2 {
		t.Fatalf("effects %v, want 2", eff)
	}
	for _, k := range eff {
		if k == "k1" || strings.Contains(k, "k1") || !strings.HasPrefix(k, "gw_") {
			t.Errorf("upstream key %q is not derived (it must not carry the caller's key)", k)
		}
	}
	if eff[0] == eff[1] {
		t.Errorf("alice and bob sent the same upstream key %q", eff[0])
	}

	// The upstream's _meta: derived key, forwarded plain keys, no caller's
	// reserved keys, no runId.
	res := mustCall(t, alice, "fx__meta", nil, map[string]any{
		"idempotencyKey": "m1", "runId": "r1", "custom": "kept",
		"io.modelcontextprotocol/related-task": "FROM-CALLER", "io.modelcontextprotocol/x": "FROM-CALLER"})
	var seen map[string]any
	if err := json.Unmarshal([]byte(text(res)), &seen); err != nil {
		t.Fatalf("meta: %q", text(res))
	}
	if k, _ := seen["idempotencyKey"].(string); !strings.HasPrefix(k, "gw_") || strings.Contains(k, "m1") {
		t.Errorf("upstream idempotencyKey %q", k)
	}
	if seen["custom"] != "kept" {
		t.Errorf("a plain _meta key was not forwarded: %v", seen)
	}
	for k, v := range seen {
		if v == "FROM-CALLER" || k == "runId" {
			t.Errorf("upstream saw the caller's %s=%v", k, v)
		}
	}

	// Concurrent repeats: one runs, the other is run_busy; then a replay.
	var wg sync.WaitGroup
	var slow string
	wg.Go(func() {
		r, err := call(t, alice, "slow__slow_count", map[string]any{"ms": 1500}, key("c1"))
		if err != nil {
			t.Errorf("slow call: %v", err)
			return
		}
		slow = text(r)
	})
	waitFile(t, marker)
	busy := wantRefusal(t, mustCall(t, alice, "slow__slow_count", map[string]any{"ms": 1500}, key("c1")), "run_busy")
	if busy["retryable"] != true {
		t.Errorf("run_busy not retryable: %v", busy)
	}
	wg.Wait()
	if r := mustCall(t, alice, "slow__slow_count", map[string]any{"ms": 1500}, key("c1")); text(r) != slow || slow != "1" {
		t.Errorf("replay %q, first %q", text(r), slow)
	}
	if n := len(lines(t, slowEffects)); n != 1 {
		t.Errorf("slow effects %d, want 1", n)
	}
}

func sleep(ms int) { <-time.After(time.Duration(ms) * time.Millisecond) }
