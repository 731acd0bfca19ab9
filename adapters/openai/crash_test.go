package openai_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/adapters/internal/agentcrash"
	"github.com/gatehouse-dev/gatehouse/adapters/openai"
	"github.com/gatehouse-dev/gatehouse/adapters/openai/openaitest"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// crashAgent is the agent of the crash test, the same in the child and in
// the resume: loop.Run with this package's model for the API named after
// the "#" of env.ModelURL, streaming its turns to OnDelta when the name
// ends in "+stream".
func crashAgent(ctx context.Context, env *agentcrash.Env) (*loop.Result, error) {
	return crashAgentDeltas(ctx, env, nil)
}

func crashAgentDeltas(ctx context.Context, env *agentcrash.Env, d *deltas) (*loop.Result, error) {
	base, api, _ := strings.Cut(env.ModelURL, "#")
	api, stream := strings.CutSuffix(api, "+stream")
	var onDelta func(loop.Delta)
	if stream {
		if d == nil {
			d = &deltas{}
		}
		onDelta = d.add
	}
	var m loop.Model
	switch api {
	case "chat":
		m = openai.NewChatModel(clientAt(base), "gpt-test")
	case "responses":
		m = openai.NewResponsesModel(clientAt(base), "gpt-test")
	default:
		return nil, errors.New("crash agent: no API in the model URL")
	}
	return loop.Run(ctx, loop.Options{RunID: env.RunID, Journal: env.Journal, Model: m, Tools: env.Tools,
		System: "You charge cards.", Prompt: "Charge 1.", OnDelta: onDelta})
}

// TestCrashAndResume kills the agent (a child process running loop.Run
// over this package's model, against the wire server and the effect
// server over stdio) after the server's effect and before its recording,
// then resumes the run on the same SQLite store: the server performed the
// effect once, the resume replayed turn 0 without asking the model, told
// the model the call is in doubt and asked only turn 1. The "+stream"
// runs stream their turns (loop.Options.OnDelta): the resume streams turn
// 1 only.
func TestCrashAndResume(t *testing.T) {
	for _, api := range []string{"responses", "chat", "responses+stream", "chat+stream"} {
		t.Run(api, func(t *testing.T) {
			srv := openaitest.NewServer(
				openaitest.Reply{Calls: []openaitest.Call{{ID: "call_crash", Name: agentcrash.Tool, Args: `{"amount":1}`}}},
				openaitest.Reply{Text: "charged, or not: ask the bank"},
			)
			defer srv.Close()
			h := agentcrash.Crash(t, srv.URL+"#"+api)
			if n, r := h.Effects(), srv.Requests(); n != 1 || r != 1 {
				t.Fatalf("at the crash: %d effects, %d model requests; want 1 and 1", n, r)
			}
			var d deltas
			res, err := crashAgentDeltas(ctxT(t), h.Env(t), &d)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(api, "+stream") {
				text0, _, _, n0 := d.turn(0)
				text1, _, _, n1 := d.turn(1)
				if n0 != 0 || text1 != res.Text || n1 < 2 {
					t.Fatalf("the resume streamed %d deltas of the replayed turn 0 (%q), turn 1 as %q in %d", n0, text0, text1, n1)
				}
				for i, b := range srv.Bodies() {
					if !strings.Contains(string(b), `"stream":true`) {
						t.Fatalf("request %d (0: the child's, 1: the resume's) did not stream: %s", i, b)
					}
				}
			} else if len(d.ds) != 0 {
				t.Fatalf("deltas without streaming: %+v", d.ds)
			}
			if res.Text != "charged, or not: ask the bank" || res.Turns != 2 || res.ReplayedTurns != 1 {
				t.Fatalf("resume: text %q, turns %d, replayed %d", res.Text, res.Turns, res.ReplayedTurns)
			}
			if n := h.Effects(); n != 1 {
				t.Fatalf("%d effects after the resume, want 1", n)
			}
			if k := h.Keys(); k[agentcrash.RunID+":call_crash"] != 1 {
				t.Fatalf("keys at the server %v", k)
			}
			if r := srv.Requests(); r != 2 {
				t.Fatalf("%d model requests in all, want 2 (turn 0 by the child, turn 1 by the resume)", r)
			}
			calls, outputs := conversation(t, strings.TrimSuffix(api, "+stream"), srv.Bodies()[1])
			if len(calls) != 1 || calls[0].ID != "call_crash" || len(outputs["call_crash"]) == 0 ||
				!strings.HasPrefix(outputs["call_crash"][0], "[in_doubt]") {
				t.Fatalf("the resume sent calls %v, results %v", calls, outputs)
			}
		})
	}
}
