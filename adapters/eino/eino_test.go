package eino_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/adapters/internal/agentcrash"

	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"

	gheino "github.com/gatehouse-dev/gatehouse/adapters/eino"
	"github.com/gatehouse-dev/gatehouse/adapters/eino/einotest"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/store"
)

// TestRunOverEinoModel: loop.Run drives eino-ext's OpenAI chat model (real
// HTTP, the Chat Completions wire format) and the effect server's tools
// (a stdio MCP server through a toolset). One turn makes four calls in
// parallel: an effect, a tool error result, a JSON-RPC error and
// arguments that are not JSON; the next request carries the four tool
// results under the model's call IDs (the wire server refuses a request
// that leaves one unanswered). A resume in a fresh process asks the model
// nothing and repeats no effect.
func TestRunOverEinoModel(t *testing.T) {
	ts, file := agentcrash.OpenToolset(t)
	tools := agentcrash.Tools(t, ts)
	srv := wireServer(t,
		einotest.Reply{Text: "Paying.", Calls: []einotest.Call{
			{ID: "call_charge", Name: "pay__charge", Args: `{"amount":5}`},
			{ID: "call_fail", Name: "pay__fail_result", Args: `{"amount":1}`},
			{ID: "call_reject", Name: "pay__reject", Args: `{"amount":2}`},
			{ID: "call_bad", Name: "pay__charge", Args: `{"amount":`},
		}},
		einotest.Reply{Text: "All done."},
	)
	path := t.TempDir() + "/gatehouse.db"
	opts := loop.Options{RunID: "run-1", Journal: agentcrash.NewJournal(t, agentcrash.OpenStore(t, path)), Model: gheino.NewModel(chatModel(t, srv)),
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

	// The first request: the system prompt, the prompt, and every tool
	// with a provider-legal name and its schema as the toolset gives it.
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

	// The second: the assistant's calls with their IDs, then one tool
	// message per call, in call order, with what the model should read.
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

	// Resumed in a fresh process: everything replays.
	opts.Journal = agentcrash.NewJournal(t, agentcrash.OpenStore(t, path))
	res, err = loop.Run(agentcrash.Ctx(t), opts)
	if err != nil || res.Text != "All done." || res.ReplayedTurns != 2 {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	if srv.Requests() != 2 || agentcrash.Total(agentcrash.EffectsOf(t, file)) != 1 {
		t.Fatalf("resume asked the model %d times in all, effects %v", srv.Requests(), agentcrash.EffectsOf(t, file))
	}
}

// TestReactAgentToolsAreDurable: eino's own ReAct agent (its ToolsNode)
// with the adapter's tools. The call IDs come from the ToolsNode's context
// (compose.GetToolCallID), so the server sees runID:callID; a second agent
// process on the same store and run asks the model again (a ReAct agent
// does not journal its turns) but replays the calls: the model reads the
// same receipt and the effect ran once.
func TestReactAgentToolsAreDurable(t *testing.T) {
	ts, file := agentcrash.OpenToolset(t)
	tools := agentcrash.Tools(t, ts)
	srv := wireServer(t,
		einotest.Reply{Calls: []einotest.Call{
			{ID: "call_a", Name: "pay__charge", Args: `{"amount":7}`},
			{ID: "call_b", Name: "pay__echo", Args: `{"amount":8}`},
		}},
		einotest.Reply{Text: "Charged 7."},
	)
	path := t.TempDir() + "/gatehouse.db"
	agentRun := func() (*schema.Message, error) {
		ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "react-1", Journal: agentcrash.NewJournal(t, agentcrash.OpenStore(t, path)), Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		etools, err := gheino.Tools(ex)
		if err != nil {
			t.Fatal(err)
		}
		agent, err := react.NewAgent(agentcrash.Ctx(t), &react.AgentConfig{ToolCallingModel: chatModel(t, srv),
			ToolsConfig: compose.ToolsNodeConfig{Tools: etools}})
		if err != nil {
			t.Fatal(err)
		}
		return agent.Generate(agentcrash.Ctx(t), []*schema.Message{schema.UserMessage("Charge 7.")})
	}
	for round := range 2 {
		out, err := agentRun()
		if err != nil || out.Content != "Charged 7." {
			t.Fatalf("round %d: %+v, %v", round, out, err)
		}
	}
	if srv.Requests() != 4 {
		t.Fatalf("%d requests, want 2 per agent run", srv.Requests())
	}
	if e := agentcrash.EffectsOf(t, file); e["react-1:call_a"] != 1 || agentcrash.Total(e) != 1 {
		t.Fatalf("effects %v, want one under react-1:call_a", e)
	}
	first, second := request(t, srv, 1), request(t, srv, 3)
	for i, id := range []string{"call_a", "call_b"} {
		m1, m2 := first.Messages[2+i], second.Messages[2+i]
		if m1.ToolCallID != id || m2.ToolCallID != id || m1.Text() != m2.Text() {
			t.Fatalf("call %s: first %q, second %q", id, m1.Text(), m2.Text())
		}
	}
	if !strings.Contains(first.Messages[2].Text(), "charged 7 for react-1:call_a: rcpt_") ||
		!strings.Contains(first.Messages[3].Text(), `"amount":8`) {
		t.Fatalf("tool messages: %q, %q", first.Messages[2].Text(), first.Messages[3].Text())
	}
}

// TestRefusalsAreToolMessages: a guard that needs approval for charges and
// allows only some tools. Through a ToolsNode, the refusals are tool
// messages the model reads — "[code] message" and the refusal's
// structured content (code, approval ID) as JSON — not errors that stop
// the agent; nothing runs. Approved, the same call (same run, same call
// ID) runs once; the denied one stays denied.
func TestRefusalsAreToolMessages(t *testing.T) {
	ts, file := agentcrash.OpenToolset(t)
	tools := agentcrash.Tools(t, ts)
	srv := wireServer(t,
		einotest.Reply{Calls: []einotest.Call{
			{ID: "c1", Name: "pay__charge", Args: `{"amount":100}`},
			{ID: "c2", Name: "pay__charge_once", Args: `{"amount":3}`},
			{ID: "c3", Name: "pay__echo", Args: `{"amount":4}`},
		}},
		einotest.Reply{Text: "Waiting for approval."},
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
	path := t.TempDir() + "/gatehouse.db"
	s := agentcrash.OpenStore(t, path)
	agentRun := func() einotest.Request {
		n := srv.Requests()
		ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "ref-1", Journal: agentcrash.NewJournal(t, s), Tools: tools, Guard: guard})
		if err != nil {
			t.Fatal(err)
		}
		etools, err := gheino.Tools(ex)
		if err != nil {
			t.Fatal(err)
		}
		agent, err := react.NewAgent(agentcrash.Ctx(t), &react.AgentConfig{ToolCallingModel: chatModel(t, srv),
			ToolsConfig: compose.ToolsNodeConfig{Tools: etools}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := agent.Generate(agentcrash.Ctx(t), []*schema.Message{schema.UserMessage("Pay 100.")}); err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if srv.Requests() != n+2 {
			t.Fatalf("%d requests, want 2", srv.Requests()-n)
		}
		return request(t, srv, n+1)
	}
	r := agentRun()
	m1, m2, m3 := r.Messages[2], r.Messages[3], r.Messages[4]
	text, sc := splitRefusal(t, m1.Text())
	if m1.ToolCallID != "c1" || !strings.HasPrefix(text, "[approval_required] ") ||
		!strings.Contains(text, "charges over 50 need an operator") ||
		sc["code"] != "approval_required" || sc["approvalId"] == nil {
		t.Fatalf("c1: %q", m1.Text())
	}
	text2, sc2 := splitRefusal(t, m2.Text())
	if m2.ToolCallID != "c2" || !strings.HasPrefix(text2, "[denied]") || sc2["code"] != "denied" {
		t.Fatalf("c2: %q", m2.Text())
	}
	if m3.ToolCallID != "c3" || !strings.Contains(m3.Text(), `"amount":4`) {
		t.Fatalf("c3: %q", m3.Text())
	}
	if agentcrash.Total(agentcrash.EffectsOf(t, file)) != 0 {
		t.Fatalf("effects before approval: %v", agentcrash.EffectsOf(t, file))
	}
	id := sc["approvalId"].(string)
	a, err := s.GetApproval(agentcrash.Ctx(t), id)
	if err != nil || a.State != store.ApprovalPending {
		t.Fatalf("approval %s: %+v, %v", id, a, err)
	}
	if _, err := s.DecideApproval(agentcrash.Ctx(t), id, true, "operator", time.Now()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r = agentRun()
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

// splitRefusal splits a refusal's text from its structured content on
// the next line.
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
