package openai_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/adapters/openai"
	"github.com/gatehouse-dev/gatehouse/adapters/openai/openaitest"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
)

// apis are the two APIs a loop.Model speaks.
var apis = []string{"responses", "chat"}

func newModel(api string, srv *openaitest.Server) loop.Model {
	if api == "chat" {
		return openai.NewChatModel(client(srv), "gpt-test")
	}
	return openai.NewResponsesModel(client(srv), "gpt-test")
}

// wireCall is a call or a tool result as a request body carries it.
type wireCall struct {
	ID, Name, Args string
}

// conversation reads a request body of either API: the model's calls, in
// order, and the tool results by call ID (their text parts).
func conversation(t *testing.T, api string, b []byte) ([]wireCall, map[string][]string) {
	t.Helper()
	var calls []wireCall
	outputs := map[string][]string{}
	switch api {
	case "chat":
		msgs, err := openaitest.ChatMessages(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			for _, c := range m.ToolCalls {
				calls = append(calls, wireCall{c.ID, c.Function.Name, c.Function.Arguments})
			}
			if m.Role == "tool" {
				outputs[m.ToolCallID] = openaitest.Parts(m.Content)
			}
		}
	default:
		items, err := openaitest.ResponsesInput(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			switch it.Type {
			case "function_call":
				calls = append(calls, wireCall{it.CallID, it.Name, it.Arguments})
			case "function_call_output":
				outputs[it.CallID] = openaitest.Parts(it.Output)
			}
		}
	}
	return calls, outputs
}

// denyCharge is a guard that denies pay__charge and allows the rest.
var denyCharge = policy.GuardFunc(func(_ context.Context, c policy.Call) (policy.Decision, error) {
	if c.Tool == "pay__charge" {
		return policy.Denied(refusal.Denied, "charges need a ticket"), nil
	}
	return policy.Allowed(), nil
})

// TestRunOverBothAPIs drives loop.Run through each API's loop.Model with
// the real SDK against the wire server, the tools of a real MCP server (a
// stdio subprocess through a toolset) and a journal on a SQLite file: one
// turn of four parallel calls (an effect, a tool error, a JSON-RPC error,
// a denied call), then the model's answer. It checks the effects at the
// server, the tool definitions and the call IDs and results the SDK sent.
func TestRunOverBothAPIs(t *testing.T) {
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			ts, file := openEffects(t, nil)
			srv := openaitest.NewServer(
				openaitest.Reply{Calls: []openaitest.Call{
					{ID: "call_a", Name: "pay__charge_once", Args: `{"amount":5}`},
					{ID: "call_b", Name: "pay__fail_result", Args: `{"amount":1}`},
					{ID: "call_c", Name: "pay__reject", Args: `{"amount":2}`},
					{ID: "call_d", Name: "pay__charge", Args: `{"amount":7}`},
				}},
				openaitest.Reply{Text: "done"},
			)
			defer srv.Close()
			res, err := loop.Run(ctxT(t), loop.Options{RunID: "run-" + api, Journal: newJournal(t, sqliteStore(t, "")),
				Model: newModel(api, srv), Tools: toolsetTools(t, ts), Guard: denyCharge,
				System: "You are a cashier.", Prompt: "Charge 5."})
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != "done" || res.Turns != 2 {
				t.Fatalf("text %q turns %d", res.Text, res.Turns)
			}
			if got := effects(t, file); len(got) != 1 || got["run-"+api+":call_a"] != 1 {
				t.Fatalf("effects at the server %v, want one for run-%s:call_a", got, api)
			}
			if srv.Requests() != 2 {
				t.Fatalf("%d requests, want 2", srv.Requests())
			}
			bodies := srv.Bodies()
			names := toolNames(t, bodies[0])
			for _, n := range names {
				if !legalName.MatchString(n) {
					t.Errorf("tool name %q is not legal for OpenAI", n)
				}
			}
			if !slices.Contains(names, "pay__charge_once") || !slices.Contains(names, "pay__reject") {
				t.Fatalf("tools sent %v", names)
			}
			calls, outputs := conversation(t, api, bodies[1])
			want := []wireCall{{"call_a", "pay__charge_once", `{"amount":5}`}, {"call_b", "pay__fail_result", `{"amount":1}`},
				{"call_c", "pay__reject", `{"amount":2}`}, {"call_d", "pay__charge", `{"amount":7}`}}
			if !slices.Equal(calls, want) {
				t.Fatalf("calls sent back %v, want %v", calls, want)
			}
			checks := map[string]func(string) bool{
				"call_a": func(s string) bool { return strings.Contains(s, "charged 5 for run-"+api+":call_a") },
				"call_b": func(s string) bool { return strings.Contains(s, "insufficient funds for run-"+api+":call_b") },
				"call_c": func(s string) bool { return strings.HasPrefix(s, "error: ") && strings.Contains(s, "card declined") },
				"call_d": func(s string) bool { return strings.HasPrefix(s, "[denied] ") },
			}
			for id, ok := range checks {
				if len(outputs[id]) == 0 || !ok(outputs[id][0]) {
					t.Errorf("result of %s sent as %q", id, outputs[id])
				}
			}
			b0 := body(t, bodies[0])
			switch api {
			case "chat":
				if m := b0["messages"].([]any)[0].(map[string]any); m["role"] != "system" || m["content"] != "You are a cashier." {
					t.Errorf("first message %v", m)
				}
			default:
				if b0["instructions"] != "You are a cashier." {
					t.Errorf("instructions %v", b0["instructions"])
				}
			}
		})
	}
}

// TestRunPausesForApproval: a call needing approval pauses the run after
// its sibling ran; once approved, the same loop.Run resumes: turn 0 is
// replayed without a request, the charge runs once, and the model reads
// its result in turn 1 under the same call_id.
func TestRunPausesForApproval(t *testing.T) {
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			ctx := ctxT(t)
			ts, file := openEffects(t, nil)
			st := sqliteStore(t, "")
			srv := openaitest.NewServer(
				openaitest.Reply{Calls: []openaitest.Call{
					{ID: "call_big", Name: "pay__charge", Args: `{"amount":900}`},
					{ID: "call_small", Name: "pay__charge_once", Args: `{"amount":1}`},
				}},
				openaitest.Reply{Text: "both charged"},
			)
			defer srv.Close()
			opts := loop.Options{RunID: "run-ap", Journal: newJournal(t, st), Model: newModel(api, srv),
				Tools: toolsetTools(t, ts), Guard: approveCharges, Prompt: "Charge 900 and 1."}
			res, err := loop.Run(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Paused || len(res.ApprovalIDs) != 1 {
				t.Fatalf("paused %v, approvals %v", res.Paused, res.ApprovalIDs)
			}
			if got := effects(t, file); len(got) != 1 || got["run-ap:call_small"] != 1 {
				t.Fatalf("effects while paused %v", got)
			}
			if _, err := st.DecideApproval(ctx, res.ApprovalIDs[0], true, "ops", time.Now()); err != nil {
				t.Fatal(err)
			}
			res, err = loop.Run(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Paused || res.Text != "both charged" || res.ReplayedTurns != 1 {
				t.Fatalf("resumed: %+v", res)
			}
			if got := effects(t, file); len(got) != 2 || got["run-ap:call_big"] != 1 || got["run-ap:call_small"] != 1 {
				t.Fatalf("effects after approval %v", got)
			}
			if r := srv.Requests(); r != 2 {
				t.Fatalf("%d model requests, want 2", r)
			}
			_, outputs := conversation(t, api, srv.Bodies()[1])
			if !strings.Contains(outputs["call_big"][0], "charged 900 for run-ap:call_big") {
				t.Fatalf("call_big sent as %q", outputs["call_big"])
			}
		})
	}
}
