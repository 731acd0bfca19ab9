package openai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/gatehouse-dev/gatehouse/adapters/openai"
	"github.com/gatehouse-dev/gatehouse/adapters/openai/openaitest"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
)

// approveCharges is a guard: pay__charge needs an operator's approval,
// pay__reject is denied, the rest is allowed.
var approveCharges = policy.GuardFunc(func(_ context.Context, c policy.Call) (policy.Decision, error) {
	switch c.Tool {
	case "pay__charge":
		return policy.NeedsApproval("a human approves charges"), nil
	case "pay__reject":
		return policy.Denied(refusal.Denied, "rejects are off"), nil
	}
	return policy.Allowed(), nil
})

// structured decodes the second part of a tool result: the structured
// content as JSON.
func structured(t *testing.T, parts []string) map[string]any {
	t.Helper()
	if len(parts) != 2 {
		t.Fatalf("result parts %q, want the text and the structured content", parts)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(parts[1]), &m); err != nil {
		t.Fatalf("structured part %q: %v", parts[1], err)
	}
	return m
}

// TestCallResponsesRefusalsAndApproval drives the Responses API by hand
// (the SDK's own loop: previous_response_id and the outputs as input)
// with CallResponses: one response of three parallel calls, one needing
// approval, one denied, one allowed. The refusals reach the wire as
// function_call_output items with the text "[code] message" and the
// structured content (approvalId included); the charge runs only once
// approved, exactly once however often the same output is executed.
func TestCallResponsesRefusalsAndApproval(t *testing.T) {
	ctx := ctxT(t)
	ts, file := openEffects(t, nil)
	st := sqliteStore(t, "")
	ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "run-x", Journal: newJournal(t, st),
		Tools: toolsetTools(t, ts), Guard: approveCharges})
	if err != nil {
		t.Fatal(err)
	}
	srv := openaitest.NewServer(
		openaitest.Reply{Calls: []openaitest.Call{
			{ID: "call_1", Name: "pay__charge", Args: `{"amount":9}`},
			{ID: "call_2", Name: "pay__reject", Args: `{"amount":1}`},
			{ID: "call_3", Name: "pay__echo", Args: `{"x":1}`},
		}},
		openaitest.Reply{Text: "ok"},
	)
	defer srv.Close()
	c := client(srv)
	tools, err := openai.ResponsesTools(ex.Tools(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-test", Tools: tools,
		Input: responses.ResponseNewParamsInputUnion{OfString: oai.String("Pay 9.")}})
	if err != nil {
		t.Fatal(err)
	}
	items, outs, err := openai.CallResponses(ctx, ex, resp.Output)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 3 || outs[0].Code != refusal.ApprovalRequired || outs[0].ApprovalID == "" ||
		outs[1].Code != refusal.Denied || outs[2].Code != "" || !strings.Contains(outs[2].Message.Content, `"x":1`) {
		t.Fatalf("outcomes %+v", outs)
	}
	if got := effects(t, file); len(got) != 0 {
		t.Fatalf("effects before approval: %v", got)
	}
	resp2, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-test", Tools: tools, PreviousResponseID: oai.String(resp.ID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: items}})
	if err != nil {
		t.Fatal(err)
	}
	if resp2.OutputText() != "ok" {
		t.Fatalf("second answer %q", resp2.OutputText())
	}
	_, outputs := conversation(t, "responses", srv.Bodies()[1])
	if p := outputs["call_1"]; !strings.HasPrefix(p[0], "[approval_required] ") {
		t.Fatalf("call_1 sent as %q", p)
	}
	if sc := structured(t, outputs["call_1"]); sc["code"] != "approval_required" || sc["approvalId"] != outs[0].ApprovalID {
		t.Fatalf("call_1's structured content %v, approval %s", sc, outs[0].ApprovalID)
	}
	if p := outputs["call_2"]; !strings.HasPrefix(p[0], "[denied] ") || structured(t, p)["code"] != "denied" {
		t.Fatalf("call_2 sent as %q", p)
	}
	if p := outputs["call_3"]; len(p) != 1 || !strings.Contains(p[0], `"x":1`) {
		t.Fatalf("call_3 sent as %q", p)
	}

	if _, err := st.DecideApproval(ctx, outs[0].ApprovalID, true, "ops", time.Now()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		_, outs, err = openai.CallResponses(ctx, ex, resp.Output)
		if err != nil {
			t.Fatal(err)
		}
		if outs[0].Code != "" || !strings.Contains(outs[0].Message.Content, "charged 9 for run-x:call_1") || outs[1].Code != refusal.Denied {
			t.Fatalf("after approval: %+v", outs)
		}
	}
	if got := effects(t, file); len(got) != 1 || got["run-x:call_1"] != 1 {
		t.Fatalf("effects after approval %v, want one for run-x:call_1", got)
	}
}

// TestCallChatRefusals drives Chat Completions by hand with CallChat: a
// read-only guard denies all but pay__echo; a denied call, an unknown tool
// and a call with broken arguments come back as tool messages the API
// accepts (every tool_call_id answered, text and structured content).
func TestCallChatRefusals(t *testing.T) {
	ctx := ctxT(t)
	ts, file := openEffects(t, nil)
	ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "run-c", Journal: newJournal(t, sqliteStore(t, "")),
		Tools: toolsetTools(t, ts), Guard: policy.ReadOnly("pay__echo")})
	if err != nil {
		t.Fatal(err)
	}
	srv := openaitest.NewServer(
		openaitest.Reply{Calls: []openaitest.Call{
			{ID: "call_1", Name: "pay__charge_once", Args: `{"amount":3}`},
			{ID: "call_2", Name: "pay__echo", Args: `{"y":2}`},
			{ID: "call_3", Name: "nosuch__tool", Args: `{}`},
			{ID: "call_4", Name: "pay__echo", Args: `{"y":`},
		}},
		openaitest.Reply{Text: "ok"},
	)
	defer srv.Close()
	c := client(srv)
	tools, err := openai.ChatTools(ex.Tools(), nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := []oai.ChatCompletionMessageParamUnion{oai.UserMessage("Pay 3.")}
	resp, err := c.Chat.Completions.New(ctx, oai.ChatCompletionNewParams{Model: "gpt-test", Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	toolMsgs, outs, err := openai.CallChat(ctx, ex, resp.Choices[0].Message)
	if err != nil {
		t.Fatal(err)
	}
	if len(toolMsgs) != 4 || outs[0].Code != refusal.Denied || outs[1].Code != "" {
		t.Fatalf("outcomes %+v", outs)
	}
	msgs = append(msgs, resp.Choices[0].Message.ToParam())
	msgs = append(msgs, toolMsgs...)
	resp2, err := c.Chat.Completions.New(ctx, oai.ChatCompletionNewParams{Model: "gpt-test", Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if resp2.Choices[0].Message.Content != "ok" {
		t.Fatalf("second answer %q", resp2.Choices[0].Message.Content)
	}
	_, outputs := conversation(t, "chat", srv.Bodies()[1])
	if p := outputs["call_1"]; !strings.HasPrefix(p[0], "[denied] ") || structured(t, p)["code"] != "denied" {
		t.Fatalf("call_1 sent as %q", p)
	}
	if p := outputs["call_2"]; len(p) != 1 || !strings.Contains(p[0], `"y":2`) {
		t.Fatalf("call_2 sent as %q", p)
	}
	if p := outputs["call_3"]; len(p) != 1 || !strings.Contains(p[0], `unknown tool "nosuch__tool"`) {
		t.Fatalf("call_3 sent as %q", p)
	}
	if p := outputs["call_4"]; len(p) != 1 || !strings.Contains(p[0], "not a JSON object") {
		t.Fatalf("call_4 sent as %q", p)
	}
	if got := effects(t, file); len(got) != 0 {
		t.Fatalf("effects %v, want none", got)
	}
}
