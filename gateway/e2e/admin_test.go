package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestApprovalFlowThroughCLI: a requireApproval call pauses with an
// approval ID; `gatehouse approvals approve` (a separate process on the
// same store) lets the same call with the same key run once, at once;
// deny answers approval_denied; runs list and purge see the subject's rows.
func TestApprovalFlowThroughCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	effects := filepath.Join(dir, "effects")
	writeConfig(t, dir, authConfig(effects, "tools:\n  requireApproval: [fx__count]\n"))
	g := startGateway(t, dir)
	alice := connect(t, g.url, aliceToken)
	cfg := filepath.Join(dir, "gatehouse.yaml")

	pending := wantRefusal(t, mustCall(t, alice, "fx__count", nil, key("a1")), "approval_required")
	id, _ := pending["approvalId"].(string)
	if id == "" || pending["retryable"] != true {
		t.Fatalf("approval_required without an ID or not retryable: %v", pending)
	}
	// Asking again names the same approval; nothing ran.
	if again := wantRefusal(t, mustCall(t, alice, "fx__count", nil, key("a1")), "approval_required"); again["approvalId"] != id {
		t.Errorf("second ask: approval %v, want %s", again["approvalId"], id)
	}
	if n := len(lines(t, effects)); n != 0 {
		t.Fatalf("an unapproved call ran (%d effects)", n)
	}
	// Without a key the call cannot be approved later: refused outright.
	wantRefusal(t, mustCall(t, alice, "fx__count", nil, nil), "denied")

	out, errOut, code := cli(t, dir, "approvals", "list", "--json", "--config", cfg)
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, `"subject": "alice"`) {
		t.Fatalf("approvals list: code %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := cli(t, dir, "approvals", "approve", id, "--config", cfg); code != 0 {
		t.Fatalf("approve: code %d\n%s%s", code, out, errOut)
	}
	// No restart, no wait: the next call reads the decision from the store.
	if r := mustCall(t, alice, "fx__count", nil, key("a1")); r.IsError || text(r) != "1" {
		t.Fatalf("approved call: %q %v", text(r), r.StructuredContent)
	}
	if r := mustCall(t, alice, "fx__count", nil, key("a1")); text(r) != "1" {
		t.Errorf("repeat of the approved call: %q, want the replay 1", text(r))
	}
	if n := len(lines(t, effects)); n != 1 {
		t.Errorf("effects %d, want 1", n)
	}

	denied := wantRefusal(t, mustCall(t, alice, "fx__count", nil, key("a2")), "approval_required")
	if _, errOut, code := cli(t, dir, "approvals", "deny", denied["approvalId"].(string), "--config", cfg); code != 0 {
		t.Fatalf("deny: %s", errOut)
	}
	wantRefusal(t, mustCall(t, alice, "fx__count", nil, key("a2")), "approval_denied")
	if n := len(lines(t, effects)); n != 1 {
		t.Errorf("effects %d after a denial, want 1", n)
	}

	// runs list / purge while serving.
	out, _, code = cli(t, dir, "runs", "list", "--json", "--subject", "alice", "--config", cfg)
	var runs struct {
		Runs []struct {
			Subject   string `json:"subject"`
			Succeeded int64  `json:"succeeded"`
		} `json:"runs"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &runs) != nil || len(runs.Runs) != 1 || runs.Runs[0].Succeeded != 1 {
		t.Fatalf("runs list: code %d %s", code, out)
	}
	out, _, code = cli(t, dir, "runs", "purge", "--subject", "alice", "--config", cfg)
	if code != 0 || !strings.Contains(out, "purged") {
		t.Fatalf("purge: %d %s", code, out)
	}
	// The purge took the record and the approval: the key asks again.
	wantRefusal(t, mustCall(t, alice, "fx__count", nil, key("a1")), "approval_required")
}

// TestRateLimitSharedAcrossReplicas: two gateways on one SQLite file share
// the subject's window.
func TestRateLimitSharedAcrossReplicas(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// 5: the two sessions' initializes spend two of the window's calls.
	writeConfig(t, dir, authConfig(filepath.Join(dir, "effects"), "rateLimit: {maxCalls: 5, window: 1h}\n"))
	a := startGateway(t, dir)
	b := startGateway(t, dir)
	ca, cb := connect(t, a.url, aliceToken), connect(t, b.url, aliceToken)
	for i, c := range []*mcp.ClientSession{ca, ca, cb} {
		if r := mustCall(t, c, "fx__echo", map[string]any{"text": fmt.Sprint(i)}, nil); r.IsError {
			t.Fatalf("call %d refused: %q", i, text(r))
		}
	}
	m := wantRefusal(t, mustCall(t, cb, "fx__echo", map[string]any{"text": "4"}, nil), "rate_limited")
	if ms, _ := m["retryAfterMs"].(float64); ms <= 0 || m["retryable"] != true {
		t.Errorf("rate_limited without retryAfterMs: %v", m)
	}
	// Bob has his own window.
	if r := mustCall(t, connect(t, a.url, bobToken), "fx__echo", map[string]any{"text": "b"}, nil); r.IsError {
		t.Errorf("bob limited by alice's calls: %q", text(r))
	}
	waitLogs(t, b, 2)
	found := false
	for _, l := range b.callLogs() {
		found = found || l["outcome"] == "rate_limited"
	}
	if !found {
		t.Errorf("no rate_limited call log:\n%s", b.logText())
	}
}

// TestCallLimitPerRun: firewall.maxCallsPerRun caps calls of a tool per run:
// the MCP session, or _meta.runId across sessions.
func TestCallLimitPerRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, authConfig(filepath.Join(dir, "effects"), "firewall: {maxCallsPerRun: 2}\n"))
	g := startGateway(t, dir)
	s1 := connect(t, g.url, aliceToken)
	echo := map[string]any{"text": "x"}
	mustCall(t, s1, "fx__echo", echo, nil)
	mustCall(t, s1, "fx__echo", echo, nil)
	wantRefusal(t, mustCall(t, s1, "fx__echo", echo, nil), "call_limit")
	// Another session is another run.
	s2 := connect(t, g.url, aliceToken)
	if r := mustCall(t, s2, "fx__echo", echo, nil); r.IsError {
		t.Fatalf("a new session was limited: %q", text(r))
	}
	// One runId spans sessions; keyed calls count once each, replays not at all.
	run := func(k string) map[string]any { return map[string]any{"runId": "job-7", "idempotencyKey": k} }
	mustCall(t, s1, "fx__echo", echo, run("e1"))
	mustCall(t, s2, "fx__echo", echo, run("e1")) // replay: not counted
	mustCall(t, s2, "fx__echo", echo, run("e2"))
	wantRefusal(t, mustCall(t, s1, "fx__echo", echo, run("e3")), "call_limit")
	// Bob's run of the same name is his own.
	if r := mustCall(t, connect(t, g.url, bobToken), "fx__echo", echo, run("e3")); r.IsError {
		t.Errorf("bob limited by alice's run: %q", text(r))
	}
}
