package fantasy_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/adapters/internal/agentcrash"

	"charm.land/fantasy"

	ghfantasy "github.com/gatehouse-dev/gatehouse/adapters/fantasy"
	"github.com/gatehouse-dev/gatehouse/adapters/fantasy/fantasytest"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/store"
)

// TestRunOverFantasyModel: loop.Run drives fantasy's OpenAI provider (real
// HTTP, the Chat Completions wire format) and the effect server's tools
// (a stdio MCP server through a toolset). One turn makes four calls in
// parallel: an effect, a tool error result, a JSON-RPC error and
// arguments that are not JSON; the next request carries the four tool
// results under the model's call IDs (the wire server refuses a request
// that leaves one unanswered). A resume in a fresh process asks the model
// nothing and repeats no effect.
func TestRunOverFantasyModel(t *testing.T) {
	ts, file := agentcrash.OpenToolset(t)
	tools := agentcrash.Tools(t, ts)
	srv := wireServer(t,
		fantasytest.Reply{Text: "Paying.", Calls: []fantasytest.Call{
			{ID: "call_charge", Name: "pay__charge", Args: `{"amount":5}`},
			{ID: "call_fail", Name: "pay__fail_result", Args: `{"amount":1}`},
			{ID: "call_reject", Name: "pay__reject", Args: `{"amount":2}`},
			{ID: "call_bad", Name: "pay__charge", Args: `{"amount":`},
		}},
		fantasytest.Reply{Text: "All done."},
	)
	path := t.TempDir() + "/gatehouse.db"
	opts := loop.Options{RunID: "run-1", Journal: agentcrash.NewJournal(t, agentcrash.OpenStore(t, path)), Model: ghfantasy.NewModel(languageModel(t, srv), nil),
		Tools: tools, System: "You pay bills.", Prompt: "Pay the bill."}
	res, err := loop.Run(agentcrash.Ctx(t), opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Text != "All done." || srv.Requests() != 2 {
		t.Fatalf("text %q after %d requests", res.Text, srv.Requests())
	}
	if e := agentcrash.EffectsOf(t, file); e["run-1:call_charge"] != 1 || agentcrash.Total(e) != 1 {
		t.Fatalf("effects %v, want one under run-1:call_charge", e)
	}

	r0 := request(t, srv, 0)
	if len(r0.Messages) != 2 || r0.Messages[0].Role != "system" || r0.Messages[0].Text() != "You pay bills." ||
		r0.Messages[1].Role != "user" || r0.Messages[1].Text() != "Pay the bill." {
		t.Fatalf("first request's messages: %+v", r0.Messages)
	}
	if len(r0.Tools) != len(tools) {
		t.Fatalf("%d tools on the wire, %d in the toolset", len(r0.Tools), len(tools))
	}
	for i, wt := range r0.Tools {
		if wt.Function.Name != tools[i].Name || !agentcrash.LegalName.MatchString(wt.Function.Name) || wt.Function.Description != tools[i].Description {
			t.Errorf("tool %d on the wire: %+v, want %s", i, wt.Function, tools[i].Name)
		}
		if !sameJSON(t, wt.Function.Parameters, tools[i].InputSchema) {
			t.Errorf("tool %s: parameters %s, want %s", wt.Function.Name, wt.Function.Parameters, tools[i].InputSchema)
		}
	}

	r1 := request(t, srv, 1)
	if len(r1.Messages) != 7 {
		t.Fatalf("second request: %d messages: %+v", len(r1.Messages), r1.Messages)
	}
	a := r1.Messages[2]
	if a.Role != "assistant" || a.Text() != "Paying." || len(a.ToolCalls) != 4 {
		t.Fatalf("assistant message %+v", a)
	}
	want := []struct{ id, text string }{
		{"call_charge", "charged 5 for run-1:call_charge: rcpt_"},
		{"call_fail", "insufficient funds for run-1:call_fail"},
		{"call_reject", "card declined for run-1:call_reject"},
		{"call_bad", "not a JSON object"},
	}
	for i, w := range want {
		if a.ToolCalls[i].ID != w.id || a.ToolCalls[i].Type != "function" {
			t.Errorf("assistant call %d: %+v, want ID %s", i, a.ToolCalls[i], w.id)
		}
		m := r1.Messages[3+i]
		if m.Role != "tool" || m.ToolCallID != w.id || !strings.Contains(m.Text(), w.text) {
			t.Errorf("tool message %d: %+v (%q), want %s answering %s", i, m, m.Text(), w.text, w.id)
		}
	}

	opts.Journal = agentcrash.NewJournal(t, agentcrash.OpenStore(t, path))
	res, err = loop.Run(agentcrash.Ctx(t), opts)
	if err != nil || res.Text != "All done." || res.ReplayedTurns != 2 {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	if srv.Requests() != 2 || agentcrash.Total(agentcrash.EffectsOf(t, file)) != 1 {
		t.Fatalf("resume asked the model %d times in all, effects %v", srv.Requests(), agentcrash.EffectsOf(t, file))
	}
}

// agentRun runs a fantasy agent with the adapter's tools over an executor
// for runID on s, and returns the request that carried the tool results.
func agentRun(t *testing.T, srv *fantasytest.Server, ex *loop.Executor, prompt string) (*fantasy.AgentResult, fantasytest.Request) {
	t.Helper()
	n := srv.Requests()
	tools, err := ghfantasy.Tools(ex)
	if err != nil {
		t.Fatal(err)
	}
	agent := fantasy.NewAgent(languageModel(t, srv), fantasy.WithTools(tools...))
	res, err := agent.Generate(agentcrash.Ctx(t), fantasy.AgentCall{Prompt: prompt})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if srv.Requests() != n+2 {
		t.Fatalf("%d requests, want 2", srv.Requests()-n)
	}
	return res, request(t, srv, n+1)
}

// TestAgentToolsAreDurable: fantasy's own agent with the adapter's tools.
// The call IDs are fantasy's ToolCall.ID, so the server sees
// runID:callID; a second agent process on the same store and run asks the
// model again (fantasy's agent does not journal its turns) but replays the
// calls: the model reads the same receipt and the effect ran once.
func TestAgentToolsAreDurable(t *testing.T) {
	ts, file := agentcrash.OpenToolset(t)
	tools := agentcrash.Tools(t, ts)
	srv := wireServer(t,
		fantasytest.Reply{Calls: []fantasytest.Call{
			{ID: "call_a", Name: "pay__charge", Args: `{"amount":7}`},
			{ID: "call_b", Name: "pay__echo", Args: `{"amount":8}`},
		}},
		fantasytest.Reply{Text: "Charged 7."},
	)
	path := t.TempDir() + "/gatehouse.db"
	var reqs []fantasytest.Request
	for round := range 2 {
		ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "agent-1", Journal: agentcrash.NewJournal(t, agentcrash.OpenStore(t, path)), Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		res, r := agentRun(t, srv, ex, "Charge 7.")
		if res.Response.Content.Text() != "Charged 7." {
			t.Fatalf("round %d: %+v", round, res.Response)
		}
		reqs = append(reqs, r)
	}
	if e := agentcrash.EffectsOf(t, file); e["agent-1:call_a"] != 1 || agentcrash.Total(e) != 1 {
		t.Fatalf("effects %v, want one under agent-1:call_a", e)
	}
	for i, id := range []string{"call_a", "call_b"} {
		m1, m2 := reqs[0].Messages[2+i], reqs[1].Messages[2+i]
		if m1.ToolCallID != id || m2.ToolCallID != id || m1.Text() != m2.Text() {
			t.Fatalf("call %s: first %q, second %q", id, m1.Text(), m2.Text())
		}
	}
	if !strings.Contains(reqs[0].Messages[2].Text(), "charged 7 for agent-1:call_a: rcpt_") ||
		!strings.Contains(reqs[0].Messages[3].Text(), `"amount":8`) {
		t.Fatalf("tool messages: %q, %q", reqs[0].Messages[2].Text(), reqs[0].Messages[3].Text())
	}
}

// TestRefusalsAreToolResults: a guard that needs approval for charges and
// allows only some tools. In fantasy's agent the refusals are error tool
// results the model reads — "[code] message" and the structured content
// (code, approval ID) as JSON — and the structured content is the
// result's client metadata; the agent goes on, nothing runs. Approved,
// the same call runs once; the denied one stays denied.
func TestRefusalsAreToolResults(t *testing.T) {
	ts, file := agentcrash.OpenToolset(t)
	tools := agentcrash.Tools(t, ts)
	srv := wireServer(t,
		fantasytest.Reply{Calls: []fantasytest.Call{
			{ID: "c1", Name: "pay__charge", Args: `{"amount":100}`},
			{ID: "c2", Name: "pay__charge_once", Args: `{"amount":3}`},
			{ID: "c3", Name: "pay__echo", Args: `{"amount":4}`},
		}},
		fantasytest.Reply{Text: "Waiting for approval."},
	)
	guard := policy.Compose(
		policy.GuardFunc(func(_ context.Context, c policy.Call) (policy.Decision, error) {
			if c.Tool == "pay__charge" {
				return policy.NeedsApproval("charges over 50 need an operator"), nil
			}
			return policy.Allowed(), nil
		}),
		policy.ReadOnly("pay__charge", "pay__echo"),
	)
	s := agentcrash.OpenStore(t, t.TempDir()+"/gatehouse.db")
	newEx := func() *loop.Executor {
		ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "ref-1", Journal: agentcrash.NewJournal(t, s), Tools: tools, Guard: guard})
		if err != nil {
			t.Fatal(err)
		}
		return ex
	}
	res, r := agentRun(t, srv, newEx(), "Pay 100.")
	m1, m2, m3 := r.Messages[2], r.Messages[3], r.Messages[4]
	text, sc := splitRefusal(t, m1.Text())
	if m1.ToolCallID != "c1" || !strings.HasPrefix(text, "[approval_required] ") ||
		!strings.Contains(text, "charges over 50 need an operator") || sc["code"] != "approval_required" || sc["approvalId"] == nil {
		t.Fatalf("c1: %q", m1.Text())
	}
	text2, sc2 := splitRefusal(t, m2.Text())
	if m2.ToolCallID != "c2" || !strings.HasPrefix(text2, "[denied]") || sc2["code"] != "denied" {
		t.Fatalf("c2: %q", m2.Text())
	}
	if m3.ToolCallID != "c3" || !strings.Contains(m3.Text(), `"amount":4`) {
		t.Fatalf("c3: %q", m3.Text())
	}
	results := res.Steps[0].Content.ToolResults()
	var meta map[string]any
	if len(results) != 3 || json.Unmarshal([]byte(results[0].ClientMetadata), &meta) != nil || meta["approvalId"] != sc["approvalId"] {
		t.Fatalf("the approval's structured content as client metadata: %+v", results)
	}
	if _, isErr := results[0].Result.(fantasy.ToolResultOutputContentError); !isErr {
		t.Fatalf("c1's result is not an error result: %+v", results[0].Result)
	}
	if agentcrash.Total(agentcrash.EffectsOf(t, file)) != 0 {
		t.Fatalf("effects before approval: %v", agentcrash.EffectsOf(t, file))
	}
	id := sc["approvalId"].(string)
	if a, err := s.GetApproval(agentcrash.Ctx(t), id); err != nil || a.State != store.ApprovalPending {
		t.Fatalf("approval %s: %+v, %v", id, a, err)
	}
	if _, err := s.DecideApproval(agentcrash.Ctx(t), id, true, "operator", time.Now()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		_, r = agentRun(t, srv, newEx(), "Pay 100.")
		if m := r.Messages[2]; !strings.Contains(m.Text(), "charged 100 for ref-1:c1") {
			t.Fatalf("c1 after approval: %q", m.Text())
		}
		if m := r.Messages[3]; !strings.HasPrefix(m.Text(), "[denied]") {
			t.Fatalf("c2 after approval: %q", m.Text())
		}
	}
	if e := agentcrash.EffectsOf(t, file); e["ref-1:c1"] != 1 || agentcrash.Total(e) != 1 {
		t.Fatalf("effects %v, want one under ref-1:c1", e)
	}
}

func splitRefusal(t *testing.T, s string) (string, map[string]any) {
	t.Helper()
	text, js, ok := strings.Cut(s, "\n")
	var sc map[string]any
	if !ok || json.Unmarshal([]byte(js), &sc) != nil {
		t.Fatalf("no structured content after the text: %q", s)
	}
	return text, sc
}

func sameJSON(t testing.TB, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return mustJSON(t, x) == mustJSON(t, y)
}
