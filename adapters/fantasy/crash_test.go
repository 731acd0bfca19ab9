package fantasy_test

import (
	"context"
	"strings"
	"testing"

	ghfantasy "github.com/gatehouse-dev/gatehouse/adapters/fantasy"
	"github.com/gatehouse-dev/gatehouse/adapters/fantasy/fantasytest"
	"github.com/gatehouse-dev/gatehouse/adapters/internal/agentcrash"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// crashAgent is the agent of the crash test, in the child and in the
// resume: loop.Run over fantasy's OpenAI provider at env.ModelURL.
func crashAgent(ctx context.Context, env *agentcrash.Env) error {
	lm, err := newLanguageModel(ctx, env.ModelURL)
	if err != nil {
		return err
	}
	_, err = loop.Run(ctx, loop.Options{RunID: env.RunID, Journal: env.Journal, Model: ghfantasy.NewModel(lm, nil),
		Tools: env.Tools, Prompt: "Charge 1."})
	return err
}

// TestCrashAndResume: the agent (loop.Run over a fantasy language model)
// is killed with SIGKILL after the MCP server charged and before the
// charge was recorded. The resume on the same store performs no second
// charge (the call is in doubt, and the model reads so under its call ID)
// and asks the model only the turn it had not answered.
func TestCrashAndResume(t *testing.T) {
	srv := wireServer(t,
		fantasytest.Reply{Calls: []fantasytest.Call{{ID: "call_fx1", Name: agentcrash.Tool, Args: `{"amount":1}`}}},
		fantasytest.Reply{Text: "Could not confirm the charge."},
	)
	h := agentcrash.Crash(t, srv.URL)
	if h.Effects() != 1 || srv.Requests() != 1 {
		t.Fatalf("at the crash: %d effects, %d requests", h.Effects(), srv.Requests())
	}
	if err := crashAgent(agentcrash.Ctx(t), h.Env(t)); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if h.Effects() != 1 || h.Keys()[agentcrash.RunID+":call_fx1"] != 1 {
		t.Fatalf("after the resume: effects %v", h.Keys())
	}
	if srv.Requests() != 2 {
		t.Fatalf("the model was asked %d times, want 2 (turn 0 before the crash, turn 1 after)", srv.Requests())
	}
	r := request(t, srv, 1)
	if r.Turn() != 1 || len(r.Messages) != 3 || r.Messages[2].ToolCallID != "call_fx1" ||
		!strings.HasPrefix(r.Messages[2].Text(), "[in_doubt]") {
		t.Fatalf("the resume's request: %+v", r.Messages)
	}
}
