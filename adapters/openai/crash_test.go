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
// the "#" of env.ModelURL.
func crashAgent(ctx context.Context, env *agentcrash.Env) (*loop.Result, error) {
	base, api, _ := strings.Cut(env.ModelURL, "#")
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
		System: "You charge cards.", Prompt: "Charge 1."})
}

// TestCrashAndResume kills the agent (a child process running loop.Run
// over this package's model, against the wire server and the effect
// server over stdio) after the server's effect and before its recording,
// then resumes the run on the same SQLite store: the server performed the
// effect once, the resume replayed turn 0 without asking the model, told
// the model the call is in doubt and asked only turn 1.
func TestCrashAndResume(t *testing.T) {
	for _, api := range apis {
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
			res, err := crashAgent(ctxT(t), h.Env(t))
			if err != nil {
				t.Fatal(err)
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
			calls, outputs := conversation(t, api, srv.Bodies()[1])
			if len(calls) != 1 || calls[0].ID != "call_crash" || len(outputs["call_crash"]) == 0 ||
				!strings.HasPrefix(outputs["call_crash"][0], "[in_doubt]") {
				t.Fatalf("the resume sent calls %v, results %v", calls, outputs)
			}
		})
	}
}
