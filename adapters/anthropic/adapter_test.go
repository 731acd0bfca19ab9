package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	anthropic "github.com/gatehouse-dev/gatehouse/adapters/anthropic"
	"github.com/gatehouse-dev/gatehouse/adapters/anthropic/anthropictest"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
)

var legalName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// request parses the i-th request body the wire server got.
func request(t *testing.T, srv *anthropictest.Server, i int) *anthropictest.Request {
	t.Helper()
	bodies := srv.Bodies()
	if i >= len(bodies) {
		t.Fatalf("request %d: only %d requests", i, len(bodies))
	}
	req, err := anthropictest.ParseRequest(bodies[i])
	if err != nil {
		t.Fatalf("request %d: %v", i, err)
	}
	return req
}

// lastResults returns the tool_result blocks of a request's last message.
func lastResults(t *testing.T, req *anthropictest.Request) []anthropictest.Block {
	t.Helper()
	last := req.Messages[len(req.Messages)-1]
	if last.Role != "user" {
		t.Fatalf("last message is %q", last.Role)
	}
	var out []anthropictest.Block
	for _, b := range last.Blocks {
		if b.Type == "tool_result" {
			out = append(out, b)
		}
	}
	return out
}

func approveOnce() policy.Guard {
	return policy.GuardFunc(func(_ context.Context, c policy.Call) (policy.Decision, error) {
		if c.Tool == "effects__charge_once" {
			return policy.NeedsApproval("charges over the limit need an operator"), nil
		}
		return policy.Allowed(), nil
	})
}

// TestToolResultsAnswerParallelToolUse: an agent driving the Messages API
// itself with the real SDK. Five tool_use blocks in one reply run through
// the Executor, and the next request carries one user message of five
// tool_result blocks in the reply's order, with the API's IDs: a result,
// a tool error, a JSON-RPC error, an approval refusal (is_error, the text
// "[approval_required] ..." and the approval ID in the structured content
// beside it) and an unknown tool. The effect ran once, under runID:toolu_id;
// a fresh process making the same calls replays them.
func TestToolResultsAnswerParallelToolUse(t *testing.T) {
	ctx := ctxT(t)
	tools, file := effects(t)
	srv, client := wire(t,
		anthropictest.Reply{Text: "On it.", Calls: []anthropictest.Call{
			{ID: "toolu_01", Name: "effects__charge", Args: `{"amount":5}`},
			{ID: "toolu_02", Name: "effects__fail_result", Args: `{"amount":1}`},
			{ID: "toolu_03", Name: "effects__reject", Args: `{"amount":1}`},
			{ID: "toolu_04", Name: "effects__charge_once", Args: `{"amount":900}`},
			{ID: "toolu_05", Name: "effects__nope"},
		}},
		anthropictest.Reply{Text: "Done."},
	)
	dbPath := filepath.Join(t.TempDir(), "gh.db")
	st := openStore(t, dbPath)
	ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "run-1", Journal: newJournal(t, st), Tools: tools, Guard: approveOnce()})
	if err != nil {
		t.Fatal(err)
	}
	toolParams, err := anthropic.ToolParams(ex.Tools())
	if err != nil {
		t.Fatal(err)
	}
	params := sdk.MessageNewParams{Model: "claude-test", MaxTokens: 1024, Tools: toolParams,
		Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("Pay the bills."))}}
	msg, err := client.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	results, outs, ok, err := anthropic.ToolResults(ctx, ex, msg)
	if err != nil || !ok || len(outs) != 5 {
		t.Fatalf("ToolResults: ok %v, %d outcomes, %v", ok, len(outs), err)
	}
	params.Messages = append(params.Messages, msg.ToParam(), results)
	final, err := client.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if final.Content[0].Text != "Done." || srv.Requests() != 2 {
		t.Fatalf("final %+v after %d requests", final.Content, srv.Requests())
	}

	got := lastResults(t, request(t, srv, 1))
	want := []struct {
		id      string
		isError bool
		text    string
	}{
		{"toolu_01", false, "charged 5 for run-1:toolu_01"},
		{"toolu_02", true, "insufficient funds for run-1:toolu_02"},
		{"toolu_03", true, "card declined for run-1:toolu_03"},
		{"toolu_04", true, "[approval_required]"},
		{"toolu_05", true, `unknown tool "effects__nope"`},
	}
	if len(got) != len(want) {
		t.Fatalf("%d tool_result blocks, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].ToolUseID != w.id || got[i].IsError != w.isError || !strings.Contains(got[i].Content, w.text) {
			t.Errorf("tool_result %d: %+v, want id %s is_error %v with %q", i, got[i], w.id, w.isError, w.text)
		}
	}
	if outs[3].Code != refusal.ApprovalRequired || outs[3].ApprovalID == "" {
		t.Fatalf("approval outcome: %+v", outs[3])
	}
	if texts := got[3].Texts; len(texts) != 2 || !strings.HasPrefix(texts[0], "[approval_required]") {
		t.Fatalf("approval tool_result texts %q", texts)
	} else {
		var sc map[string]any
		if err := json.Unmarshal([]byte(texts[1]), &sc); err != nil || sc["code"] != "approval_required" || sc["approvalId"] != outs[3].ApprovalID {
			t.Fatalf("structured content %q (%v), want approvalId %s", texts[1], err, outs[3].ApprovalID)
		}
	}

	// A resumed agent (a fresh process: a new store handle, journal and
	// executor) making the same calls gets the same results and runs
	// nothing again.
	ex2, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "run-1", Journal: newJournal(t, openStore(t, dbPath)), Tools: tools, Guard: approveOnce()})
	if err != nil {
		t.Fatal(err)
	}
	_, outs2, _, err := anthropic.ToolResults(ctx, ex2, msg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range outs {
		if i == 3 {
			continue // a new pending approval request is the same refusal
		}
		if outs2[i].Message.Content != outs[i].Message.Content {
			t.Errorf("replay %d: %q, first %q", i, outs2[i].Message.Content, outs[i].Message.Content)
		}
	}
	if n := effectCount(t, file); n["run-1:toolu_01"] != 1 || len(n) != 1 {
		t.Fatalf("effects %v, want run-1:toolu_01 once", n)
	}
}

// TestModelRunResumesWithoutAskingAgain: loop.Run over Model and the real
// SDK. Parallel tool use, then a tool error, then the answer. The requests
// at the wire carry the API's tool_use IDs and their tool_results. A run
// cut after its first turn and run again asks the model only for the
// turns it had not answered; a run done and run again asks nothing and
// repeats no effect. On SQLite and on PostgreSQL.
func TestModelRunResumesWithoutAskingAgain(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) { testModelRunResumes(t, storeOpener(t, kind)) })
	}
}

func testModelRunResumes(t *testing.T, open func(t *testing.T) store.Store) {
	tools, file := effects(t)
	srv, client := wire(t,
		anthropictest.Reply{Calls: []anthropictest.Call{
			{ID: "toolu_a", Name: "effects__charge", Args: `{"amount":1}`},
			{ID: "toolu_b", Name: "effects__charge", Args: `{"amount":2}`},
		}},
		anthropictest.Reply{Text: "One more.", Calls: []anthropictest.Call{{ID: "toolu_c", Name: "effects__fail_result", Args: `{"amount":3}`}}},
		anthropictest.Reply{Text: "All done."},
	)
	model := &anthropic.Model{Client: client, Params: sdk.MessageNewParams{Model: "claude-test", MaxTokens: 512}}
	opts := loop.Options{RunID: "run-m", Journal: newJournal(t, open(t)), Model: model, Tools: tools,
		System: "You pay bills.", Prompt: "Pay two bills.", MaxTurns: 1}
	if _, err := loop.Run(ctxT(t), opts); !errors.Is(err, loop.ErrMaxTurns) {
		t.Fatalf("first turn only: %v", err)
	}
	if srv.Requests() != 1 {
		t.Fatalf("%d requests after one turn", srv.Requests())
	}
	opts.MaxTurns = 0
	opts.Journal = newJournal(t, open(t))
	res, err := loop.Run(ctxT(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "All done." || res.ReplayedTurns != 1 || srv.Requests() != 3 {
		t.Fatalf("text %q, replayed %d, requests %d; want the first turn replayed, two asked", res.Text, res.ReplayedTurns, srv.Requests())
	}
	first := request(t, srv, 0)
	if first.System != "You pay bills." || first.MaxTokens != 512 || len(first.Tools) != len(tools) {
		t.Fatalf("first request: system %q, max_tokens %d, %d tools", first.System, first.MaxTokens, len(first.Tools))
	}
	second := request(t, srv, 1)
	var uses []string
	for _, b := range second.Messages[1].Blocks {
		if b.Type == "tool_use" {
			uses = append(uses, b.ID)
		}
	}
	got := lastResults(t, second)
	if strings.Join(uses, ",") != "toolu_a,toolu_b" || len(got) != 2 || got[0].ToolUseID != "toolu_a" || got[1].ToolUseID != "toolu_b" ||
		!strings.Contains(got[0].Content, "run-m:toolu_a") || !strings.Contains(got[1].Content, "run-m:toolu_b") {
		t.Fatalf("turn 1 request: tool_use %v, results %+v", uses, got)
	}
	third := lastResults(t, request(t, srv, 2))
	if len(third) != 1 || third[0].ToolUseID != "toolu_c" || !third[0].IsError || !strings.Contains(third[0].Content, "insufficient funds") {
		t.Fatalf("turn 2 results %+v", third)
	}

	opts.Journal = newJournal(t, open(t))
	res, err = loop.Run(ctxT(t), opts)
	if err != nil || res.Text != "All done." || res.ReplayedTurns != 3 || srv.Requests() != 3 {
		t.Fatalf("rerun: %+v, %v, requests %d", res, err, srv.Requests())
	}
	if n := effectCount(t, file); n["run-m:toolu_a"] != 1 || n["run-m:toolu_b"] != 1 || len(n) != 2 {
		t.Fatalf("effects %v", n)
	}
}

// TestModelRefusals: through loop.Run, a call denied by a read-only guard
// is an is_error tool_result "[denied] ..." the model reads, and a call
// needing approval pauses the run; approved, it runs once and the model
// reads its result beside the denial, under the same tool_use IDs.
func TestModelRefusals(t *testing.T) {
	tools, file := effects(t)
	srv, client := wire(t,
		anthropictest.Reply{Calls: []anthropictest.Call{
			{ID: "toolu_deny", Name: "effects__charge", Args: `{"amount":1}`},
			{ID: "toolu_ask", Name: "effects__charge_once", Args: `{"amount":900}`},
		}},
		anthropictest.Reply{Text: "Understood."},
	)
	dbPath := filepath.Join(t.TempDir(), "gh.db")
	st := openStore(t, dbPath)
	guard := policy.GuardFunc(func(ctx context.Context, c policy.Call) (policy.Decision, error) {
		if c.Tool == "effects__charge_once" {
			return policy.NeedsApproval("large charge"), nil
		}
		return policy.ReadOnly("effects__echo").Check(ctx, c)
	})
	opts := loop.Options{RunID: "run-g", Journal: newJournal(t, st), Tools: tools, Guard: guard, Prompt: "charge",
		Model: &anthropic.Model{Client: client, Params: sdk.MessageNewParams{Model: "claude-test"}}}
	res, err := loop.Run(ctxT(t), opts)
	if err != nil || !res.Paused || len(res.ApprovalIDs) != 1 || srv.Requests() != 1 {
		t.Fatalf("want a pause: %+v, %v, %d requests", res, err, srv.Requests())
	}
	if _, err := st.DecideApproval(ctxT(t), res.ApprovalIDs[0], true, "operator", time.Now()); err != nil {
		t.Fatal(err)
	}
	res, err = loop.Run(ctxT(t), opts)
	if err != nil || res.Text != "Understood." || srv.Requests() != 2 {
		t.Fatalf("after approval: %+v, %v, %d requests", res, err, srv.Requests())
	}
	got := lastResults(t, request(t, srv, 1))
	if len(got) != 2 || got[0].ToolUseID != "toolu_deny" || !got[0].IsError || !strings.HasPrefix(got[0].Content, "[denied]") ||
		got[1].ToolUseID != "toolu_ask" || got[1].IsError || !strings.Contains(got[1].Content, "run-g:toolu_ask") {
		t.Fatalf("tool_results %+v", got)
	}
	if n := effectCount(t, file); n["run-g:toolu_ask"] != 1 || len(n) != 1 {
		t.Fatalf("effects %v", n)
	}
}

// TestNamesAndSchemasAtTheWire: tools from a toolset over a real server
// whose names no provider takes as they are reach the API under names
// matching ^[a-zA-Z0-9_-]{1,64}$, with their schema whole ($defs, oneOf,
// nested objects, additionalProperties).
func TestNamesAndSchemasAtTheWire(t *testing.T) {
	tools := oddServer(t)
	srv, client := wire(t, anthropictest.Reply{Text: "Nothing to do."})
	ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "r", Journal: newJournal(t, openStore(t, filepath.Join(t.TempDir(), "db"))), Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	params, err := anthropic.ToolParams(ex.Tools())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Messages.New(ctxT(t), sdk.MessageNewParams{Model: "claude-test", MaxTokens: 16, Tools: params,
		Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hi"))}}); err != nil {
		t.Fatal(err)
	}
	req := request(t, srv, 0)
	if len(req.Tools) != 4 {
		t.Fatalf("%d tools at the wire", len(req.Tools))
	}
	for _, tool := range req.Tools {
		if !legalName.MatchString(tool.Name) {
			t.Errorf("illegal name %q", tool.Name)
		}
		var s struct {
			Type string `json:"type"`
			Defs map[string]struct {
				Properties map[string]struct {
					Required []string `json:"required"`
				} `json:"properties"`
			} `json:"$defs"`
			Properties struct {
				Unit struct {
					OneOf []map[string]string `json:"oneOf"`
				} `json:"unit"`
				Where map[string]string `json:"where"`
			} `json:"properties"`
			Required   []string `json:"required"`
			Additional *bool    `json:"additionalProperties"`
		}
		if err := json.Unmarshal(tool.InputSchema, &s); err != nil {
			t.Fatal(err)
		}
		if s.Type != "object" || len(s.Properties.Unit.OneOf) != 2 || s.Properties.Where["$ref"] != "#/$defs/place" ||
			strings.Join(s.Defs["place"].Properties["geo"].Required, ",") != "lat,lon" ||
			strings.Join(s.Required, ",") != "where" || s.Additional == nil || *s.Additional {
			t.Errorf("tool %q: schema not whole: %s", tool.Name, tool.InputSchema)
		}
	}
}

// TestToolParamsRefuses: every way a tool definition can be one the API
// refuses is an error naming it, never a tool renamed or a schema cut.
func TestToolParamsRefuses(t *testing.T) {
	for _, c := range []struct {
		name, schema, want string
	}{
		{"", `{"type":"object"}`, "name"},
		{strings.Repeat("x", 65), `{"type":"object"}`, "name"},
		{"a.b", `{"type":"object"}`, "name"},
		{"ok", `[1]`, "not a JSON object"},
		{"ok", `null`, "null"},
		{"ok", `{"type":"string"}`, "type"},
		{"ok", `{"type":"object","properties":[1]}`, "properties"},
		{"ok", `{"type":"object","required":"a"}`, "required is not an array"},
		{"ok", `{"type":"object","required":[1]}`, "required[0]"},
		{"ok", `{"type":`, "not a JSON object"},
	} {
		_, err := anthropic.ToolParams([]loop.ToolDef{{Name: c.name, InputSchema: json.RawMessage(c.schema)}})
		if !errors.Is(err, anthropic.ErrInvalidTool) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("name %q schema %s: %v, want ErrInvalidTool with %q", c.name, c.schema, err, c.want)
		}
	}
	p, err := anthropic.ToolParams([]loop.ToolDef{{Name: "bare"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p[0])
	var sent struct {
		InputSchema map[string]any `json:"input_schema"`
	}
	if err := json.Unmarshal(b, &sent); err != nil || sent.InputSchema["type"] != "object" {
		t.Fatalf("no object schema: %s", b)
	}
}

// TestMessagesRefuses: a conversation the API would refuse is an error
// before anything is sent.
func TestMessagesRefuses(t *testing.T) {
	for _, msgs := range [][]loop.Message{
		{{Role: loop.RoleUser, Content: "hi"}, {Role: loop.RoleTool, ToolCallID: "x", Content: "r"}},
		{{Role: loop.RoleUser, Content: "hi"}, {Role: loop.RoleAssistant, ToolCalls: []loop.ToolCall{{ID: "a", Name: "t"}}},
			{Role: loop.RoleTool, ToolCallID: "a"}, {Role: loop.RoleTool, ToolCallID: "a"}},
		{{Role: "system", Content: "hi"}},
	} {
		if _, err := anthropic.Messages(msgs); !errors.Is(err, anthropic.ErrConversation) {
			t.Errorf("%+v: %v", msgs, err)
		}
	}
}

// TestResponseByStopReason: tool calls are taken only from a reply that
// stopped for tool use; one cut short with tool_use blocks or paused is an
// error (loop.Run records nothing and a resume asks again), never calls
// with a truncated input.
func TestResponseByStopReason(t *testing.T) {
	reply := func(stop string) *sdk.Message {
		var m sdk.Message
		raw := `{"id":"msg","type":"message","role":"assistant","model":"m","stop_reason":"` + stop + `","content":[` +
			`{"type":"text","text":"a"},{"type":"tool_use","id":"toolu_1","name":"t","input":{"x":1}},{"type":"text","text":"b"}]}`
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatal(err)
		}
		return &m
	}
	r, err := anthropic.Response(reply("tool_use"))
	if err != nil || r.Text != "ab" || len(r.ToolCalls) != 1 || r.ToolCalls[0].ID != "toolu_1" || string(r.ToolCalls[0].Args) != `{"x":1}` {
		t.Fatalf("tool_use: %+v, %v", r, err)
	}
	for _, stop := range []string{"end_turn", "refusal", "stop_sequence"} {
		if r, err := anthropic.Response(reply(stop)); err != nil || len(r.ToolCalls) != 0 || r.Text != "ab" {
			t.Errorf("%s: %+v, %v", stop, r, err)
		}
	}
	for _, stop := range []string{"max_tokens", "model_context_window_exceeded", "pause_turn"} {
		if _, err := anthropic.Response(reply(stop)); !errors.Is(err, anthropic.ErrReply) {
			t.Errorf("%s: %v, want ErrReply", stop, err)
		}
	}
}
