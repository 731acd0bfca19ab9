package eino_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/adapters/internal/agentcrash"

	"github.com/cloudwego/eino/schema"

	gheino "github.com/gatehouse-dev/gatehouse/adapters/eino"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
)

// TestExecuteAssistantMessage: Execute makes an assistant message's calls
// outside a ToolsNode, in parallel, and returns tool messages in call
// order under the model's IDs, with the outcomes (the approval's ID);
// again on a fresh executor, it replays. A Tool run outside a ToolsNode
// without WithCallID has no ID and runs nothing.
func TestExecuteAssistantMessage(t *testing.T) {
	ts, file := agentcrash.OpenToolset(t)
	tools := agentcrash.Tools(t, ts)
	guard := policy.GuardFunc(func(_ context.Context, c policy.Call) (policy.Decision, error) {
		if c.Tool == "pay__charge_once" {
			return policy.NeedsApproval("needs a human"), nil
		}
		return policy.Allowed(), nil
	})
	msg := schema.AssistantMessage("", []schema.ToolCall{
		{ID: "x1", Type: "function", Function: schema.FunctionCall{Name: "pay__charge", Arguments: `{"amount":2}`}},
		{ID: "x2", Type: "function", Function: schema.FunctionCall{Name: "pay__charge_once", Arguments: `{"amount":3}`}},
		{ID: "x3", Type: "function", Function: schema.FunctionCall{Name: "pay__nope", Arguments: `{}`}},
	})
	s := agentcrash.OpenStore(t, t.TempDir()+"/g.db")
	var first []*schema.Message
	for round := range 2 {
		ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "ex-1", Journal: agentcrash.NewJournal(t, s), Tools: tools, Guard: guard})
		if err != nil {
			t.Fatal(err)
		}
		msgs, outs, err := gheino.Execute(agentcrash.Ctx(t), ex, msg)
		if err != nil || len(msgs) != 3 || len(outs) != 3 {
			t.Fatalf("round %d: %v, %v", round, msgs, err)
		}
		for i, id := range []string{"x1", "x2", "x3"} {
			if msgs[i].Role != schema.Tool || msgs[i].ToolCallID != id || msgs[i].ToolName != msg.ToolCalls[i].Function.Name {
				t.Fatalf("round %d message %d: %+v", round, i, msgs[i])
			}
		}
		if !strings.Contains(msgs[0].Content, "charged 2 for ex-1:x1") || outs[1].Code != refusal.ApprovalRequired ||
			!strings.Contains(msgs[1].Content, outs[1].ApprovalID) || !strings.Contains(msgs[2].Content, `unknown tool "pay__nope"`) {
			t.Fatalf("round %d: %q %+v %q", round, msgs[0].Content, outs[1], msgs[2].Content)
		}
		if round == 0 {
			first = msgs
		} else if msgs[0].Content != first[0].Content {
			t.Fatalf("the replay differs: %q, %q", msgs[0].Content, first[0].Content)
		}
		etools, _ := gheino.Tools(ex)
		text, err := etools[0].(*gheino.Tool).InvokableRun(agentcrash.Ctx(t), `{"amount":9}`)
		if err != nil || !strings.Contains(text, "has no ID") {
			t.Fatalf("a call without an ID: %q, %v", text, err)
		}
	}
	if e := agentcrash.EffectsOf(t, file); e["ex-1:x1"] != 1 || agentcrash.Total(e) != 1 {
		t.Fatalf("effects %v", e)
	}
}
