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
// resume: loop.Run over fantasy's OpenAI provider at env.ModelURL,
// streaming its turns to OnDelta when the URL ends in "#stream".
func crashAgent(ctx context.Context, env *agentcrash.Env) error {
	return crashAgentDeltas(ctx, env, &agentcrash.Deltas{})
}

func crashAgentDeltas(ctx context.Context, env *agentcrash.Env, d *agentcrash.Deltas) error {
	base, stream := strings.CutSuffix(env.ModelURL, "#stream")
	lm, err := newLanguageModel(ctx, base)
	if err != nil {
		return err
	}
	opts := loop.Options{RunID: env.RunID, Journal: env.Journal, Model: ghfantasy.NewModel(lm, nil), Tools: env.Tools, Prompt: "Charge 1."}
	if stream {
		opts.OnDelta = d.Add
	}
	_, err = loop.Run(ctx, opts)
	return err
}

// TestCrashAndResume: the agent (loop.Run over a fantasy language model)
// is killed with SIGKILL after the MCP server charged and before the
// charge was recorded. The resume on the same store performs no second
// charge (the call is in doubt, and the model reads so under its call ID)
// and asks the model only the turn it had not answered. In "stream" the
// agent streams its turns (loop.Options.OnDelta): the resume streams turn
// 1 only.
func TestCrashAndResume(t *testing.T) {
	for _, mode := range []string{"plain", "stream"} {
		t.Run(mode, func(t *testing.T) { testCrashAndResume(t, mode == "stream") })
	}
}

func testCrashAndResume(t *testing.T, stream bool) {
	srv := wireServer(t,
		fantasytest.Reply{Calls: []fantasytest.Call{{ID: "call_fx1", Name: agentcrash.Tool, Args: `{"amount":1}`}}},
		fantasytest.Reply{Text: "Could not confirm the charge."},
	)
	url := srv.URL
	if stream {
		url += "#stream"
	}
	h := agentcrash.Crash(t, url)
	if h.Effects() != 1 || srv.Requests() != 1 {
		t.Fatalf("at the crash: %d effects, %d requests", h.Effects(), srv.Requests())
	}
	var d agentcrash.Deltas
	if err := crashAgentDeltas(agentcrash.Ctx(t), h.Env(t), &d); err != nil {
		t.Fatalf("resume: %v", err)
	}
	for i := 0; i < srv.Requests(); i++ {
		if request(t, srv, i).Stream != stream {
			t.Fatalf("request %d (0: the child's, 1: the resume's): stream %v", i, !stream)
		}
	}
	if _, _, _, n0 := d.Turn(0); n0 != 0 {
		t.Fatalf("the replayed turn 0 streamed %d deltas", n0)
	}
	if text1, _, _, _ := d.Turn(1); stream && text1 != "Could not confirm the charge." {
		t.Fatalf("the resume streamed turn 1 as %q", text1)
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
