package anthropic_test

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	anthropic "github.com/gatehouse-dev/gatehouse/adapters/anthropic"
	"github.com/gatehouse-dev/gatehouse/adapters/anthropic/anthropictest"
	"github.com/gatehouse-dev/gatehouse/adapters/internal/agentcrash"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// crashAgent is the agent of the crash test, the same in the child and
// in the resume: loop.Run over Model, at the wire server env.ModelURL,
// streaming its turns to OnDelta when the URL ends in "#stream".
func crashAgent(ctx context.Context, env *agentcrash.Env) error {
	return crashAgentDeltas(ctx, env, &deltas{})
}

func crashAgentDeltas(ctx context.Context, env *agentcrash.Env, d *deltas) error {
	base, stream := strings.CutSuffix(env.ModelURL, "#stream")
	client := sdk.NewClient(option.WithBaseURL(base), option.WithAPIKey("test-key"),
		option.WithMaxRetries(0), option.WithoutOpenTelemetry())
	opts := loop.Options{RunID: env.RunID, Journal: env.Journal, Tools: env.Tools, Prompt: "Charge 1.",
		Model: &anthropic.Model{Client: &client, Params: sdk.MessageNewParams{Model: "claude-test"}}}
	if stream {
		opts.OnDelta = d.add
	}
	_, err := loop.Run(ctx, opts)
	return err
}

// TestCrashAndResume: the agent's child process is SIGKILLed after the
// MCP server charged and before the outcome was recorded. The resume (same
// store) sends the charge nowhere again: the server counts one effect, the
// model is not asked the turn it answered (one request from the child,
// one from the resume), and the model reads the in-doubt call as an
// is_error tool_result under the tool_use ID it gave. In "stream" the
// agent streams its turns (loop.Options.OnDelta): the resume streams turn
// 1 only.
func TestCrashAndResume(t *testing.T) {
	for _, mode := range []string{"plain", "stream"} {
		t.Run(mode, func(t *testing.T) { testCrashAndResume(t, mode == "stream") })
	}
}

func testCrashAndResume(t *testing.T, stream bool) {
	srv := anthropictest.NewServer(
		anthropictest.Reply{Text: "Charging.", Calls: []anthropictest.Call{{ID: "toolu_crash1", Name: agentcrash.Tool, Args: `{"amount":1}`}}},
		anthropictest.Reply{Text: "I could not confirm the charge."},
	)
	defer srv.Close()
	url := srv.URL
	if stream {
		url += "#stream"
	}
	h := agentcrash.Crash(t, url)
	if h.Effects() != 1 || srv.Requests() != 1 {
		t.Fatalf("at the crash: %d effects, %d requests", h.Effects(), srv.Requests())
	}
	var d deltas
	if err := crashAgentDeltas(ctxT(t), h.Env(t), &d); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < srv.Requests(); i++ {
		if request(t, srv, i).Stream != stream {
			t.Fatalf("request %d (0: the child's, 1: the resume's): stream %v", i, !stream)
		}
	}
	if stream {
		_, _, _, n0 := d.turn(0)
		text1, _, _, n1 := d.turn(1)
		if n0 != 0 || text1 != "I could not confirm the charge." || n1 < 2 {
			t.Fatalf("the resume streamed %d deltas of the replayed turn 0, turn 1 as %q in %d", n0, text1, n1)
		}
	} else if len(d.ds) != 0 {
		t.Fatalf("deltas without streaming: %+v", d.ds)
	}
	if h.Effects() != 1 || h.Keys()[agentcrash.RunID+":toolu_crash1"] != 1 {
		t.Fatalf("after the resume: effects %v", h.Keys())
	}
	if srv.Requests() != 2 {
		t.Fatalf("%d requests, want 2: the resume asked a turn it had answered", srv.Requests())
	}
	got := lastResults(t, request(t, srv, 1))
	if len(got) != 1 || got[0].ToolUseID != "toolu_crash1" || !got[0].IsError || !strings.HasPrefix(got[0].Content, "[in_doubt]") {
		t.Fatalf("resume's tool_results %+v", got)
	}
}
