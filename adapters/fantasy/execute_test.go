package fantasy_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/adapters/internal/agentcrash"

	"charm.land/fantasy"

	ghfantasy "github.com/gatehouse-dev/gatehouse/adapters/fantasy"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
)

// TestExecuteResponse: Execute makes a response's client-executed calls
// outside an agent, in parallel, and returns one tool message with a
// result part per call in call order, errors and refusals as error
// outputs with the structured content as client metadata; a
// provider-executed call is left to the provider. Again on a fresh
// executor, it replays.
func TestExecuteResponse(t *testing.T) {
	ts, file := agentcrash.OpenToolset(t)
	tools := agentcrash.Tools(t, ts)
	guard := policy.GuardFunc(func(_ context.Context, c policy.Call) (policy.Decision, error) {
		if c.Tool == "pay__charge_once" {
			return policy.NeedsApproval("needs a human"), nil
		}
		return policy.Allowed(), nil
	})
	content := fantasy.ResponseContent{
		fantasy.TextContent{Text: "Paying."},
		fantasy.ToolCallContent{ToolCallID: "x1", ToolName: "pay__charge", Input: `{"amount":2}`},
		fantasy.ToolCallContent{ToolCallID: "web", ToolName: "web_search", Input: `{}`, ProviderExecuted: true},
		fantasy.ToolCallContent{ToolCallID: "x2", ToolName: "pay__charge_once", Input: `{"amount":3}`},
		fantasy.ToolCallContent{ToolCallID: "x3", ToolName: "pay__fail_result", Input: `{"amount":4}`},
	}
	s := agentcrash.OpenStore(t, t.TempDir()+"/g.db")
	var first string
	for round := range 2 {
		ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "ex-1", Journal: agentcrash.NewJournal(t, s), Tools: tools, Guard: guard})
		if err != nil {
			t.Fatal(err)
		}
		msg, outs, err := ghfantasy.Execute(agentcrash.Ctx(t), ex, content)
		if err != nil || msg.Role != fantasy.MessageRoleTool || len(msg.Content) != 3 || len(outs) != 3 {
			t.Fatalf("round %d: %+v, %v", round, msg, err)
		}
		var parts []fantasy.ToolResultPart
		for i, id := range []string{"x1", "x2", "x3"} {
			p, ok := msg.Content[i].(fantasy.ToolResultPart)
			if !ok || p.ToolCallID != id {
				t.Fatalf("round %d part %d: %+v", round, i, msg.Content[i])
			}
			parts = append(parts, p)
		}
		ok0, isText := parts[0].Output.(fantasy.ToolResultOutputContentText)
		if !isText || !strings.Contains(ok0.Text, "charged 2 for ex-1:x1") {
			t.Fatalf("round %d x1: %+v", round, parts[0].Output)
		}
		e1, isErr := parts[1].Output.(fantasy.ToolResultOutputContentError)
		var meta map[string]any
		if !isErr || outs[1].Code != refusal.ApprovalRequired || !strings.Contains(e1.Error.Error(), outs[1].ApprovalID) ||
			json.Unmarshal([]byte(parts[1].ClientMetadata), &meta) != nil || meta["approvalId"] != outs[1].ApprovalID {
			t.Fatalf("round %d x2: %+v %+v", round, parts[1], outs[1])
		}
		e2, isErr := parts[2].Output.(fantasy.ToolResultOutputContentError)
		if !isErr || !strings.Contains(e2.Error.Error(), "insufficient funds for ex-1:x3") {
			t.Fatalf("round %d x3: %+v", round, parts[2].Output)
		}
		if round == 0 {
			first = ok0.Text
		} else if ok0.Text != first {
			t.Fatalf("the replay differs: %q, %q", ok0.Text, first)
		}
	}
	if e := agentcrash.EffectsOf(t, file); e["ex-1:x1"] != 1 || agentcrash.Total(e) != 1 {
		t.Fatalf("effects %v", e)
	}
}
