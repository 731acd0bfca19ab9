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
// in the resume: loop.Run over Model, at the wire server env.ModelURL.
func crashAgent(ctx context.Context, env *agentcrash.Env) error {
	client := sdk.NewClient(option.WithBaseURL(env.ModelURL), option.WithAPIKey("test-key"),
		option.WithMaxRetries(0), option.WithoutOpenTelemetry())
	_, err := loop.Run(ctx, loop.Options{RunID: env.RunID, Journal: env.Journal, Tools: env.Tools, Prompt: "Charge 1.",
		Model: &anthropic.Model{Client: &client, Params: sdk.MessageNewParams{Model: "claude-test"}}})
	return err
}

// TestCrashAndResume: the agent's child process is SIGKILLed after the
// MCP server charged and before the outcome was recorded. The resume (same
// store) sends the charge nowhere again: the server counts one effect, the
// model is not asked the turn it answered (one request from the child,
// one from the resume), and the model reads the in-doubt call as an
// is_error tool_result under the tool_use ID it gave.
func TestCrashAndResume(t *testing.T) {
	srv := anthropictest.NewServer(
		anthropictest.Reply{Text: "Charging.", Calls: []anthropictest.Call{{ID: "toolu_crash1", Name: agentcrash.Tool, Args: `{"amount":1}`}}},
		anthropictest.Reply{Text: "I could not confirm the charge."},
	)
	defer srv.Close()
	h := agentcrash.Crash(t, srv.URL)
	if h.Effects() != 1 || srv.Requests() != 1 {
		t.Fatalf("at the crash: %d effects, %d requests", h.Effects(), srv.Requests())
	}
	if err := crashAgent(ctxT(t), h.Env(t)); err != nil {
		t.Fatal(err)
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
