package anthropic_test

import (
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	anthropic "github.com/gatehouse-dev/gatehouse/adapters/anthropic"
	"github.com/gatehouse-dev/gatehouse/adapters/anthropic/anthropictest"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

func runnerScript() []anthropictest.Reply {
	return []anthropictest.Reply{
		{Calls: []anthropictest.Call{
			{ID: "toolu_r1", Name: "effects__charge", Args: `{"amount":7}`},
			{ID: "toolu_r2", Name: "effects__charge", Args: `{"amount":7}`}, // the same call twice
			{ID: "toolu_r3", Name: "effects__fail_result", Args: `{"amount":1}`},
			// the runner hands Execute the input re-encoded (compacted, HTML
			// escaped): it must still find its tool_use block
			{ID: "toolu_r4", Name: "effects__echo", Args: `{ "amount": 1, "note": "a<b & c>d \u2028" }`},
		}},
		{Text: "Charged twice."},
	}
}

// runWithRunner drives the SDK's own tool runner (no message thread: the
// local server reads the whole history) with Gatehouse tools and returns
// the final message.
func runWithRunner(t *testing.T, client *sdk.Client, ex *loop.Executor, bind bool) (*sdk.BetaMessage, *anthropic.RunnerTools) {
	t.Helper()
	rt, err := anthropic.NewRunnerTools(ex)
	if err != nil {
		t.Fatal(err)
	}
	runner := client.Beta.Messages.NewToolRunner(rt.Tools(), sdk.BetaToolRunnerParams{
		BetaMessageNewParams: sdk.BetaMessageNewParams{Model: "claude-test", MaxTokens: 256,
			Messages: []sdk.BetaMessageParam{sdk.NewBetaUserMessage(sdk.NewBetaTextBlock("Charge 7, twice."))}},
		DisableThread: true,
	})
	if bind {
		rt.Bind(runner)
	}
	msg, err := runner.RunToCompletion(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return msg, rt
}

// TestRunnerToolsDurable: the SDK's BetaToolRunner runs Gatehouse tools
// through the Executor: each tool_use once under runID:toolu_id (the same
// call made twice in one reply runs twice, once per ID), a tool error an
// is_error tool_result. A second process running the same conversation
// (the runner asks the model again; the script answers the same IDs)
// replays every call: no effect runs again and the results are the
// recorded ones.
func TestRunnerToolsDurable(t *testing.T) {
	tools, file := effects(t)
	srv, client := wire(t, runnerScript()...)
	dbPath := filepath.Join(t.TempDir(), "gh.db")
	var first []anthropictest.Block
	for round := range 2 {
		ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "run-tr", Journal: newJournal(t, openStore(t, dbPath)), Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		msg, rt := runWithRunner(t, client, ex, true)
		if err := rt.Err(); err != nil {
			t.Fatal(err)
		}
		if msg.Content[0].Text != "Charged twice." {
			t.Fatalf("round %d: final %+v", round, msg.Content)
		}
		got := lastResults(t, request(t, srv, 2*round+1))
		if len(got) != 4 || got[0].ToolUseID != "toolu_r1" || got[1].ToolUseID != "toolu_r2" || got[2].ToolUseID != "toolu_r3" || got[3].ToolUseID != "toolu_r4" {
			t.Fatalf("round %d: tool_results %+v", round, got)
		}
		keys := got[0].Content + got[1].Content
		if got[0].IsError || got[1].IsError || !strings.Contains(keys, "run-tr:toolu_r1") || !strings.Contains(keys, "run-tr:toolu_r2") {
			t.Fatalf("round %d: results %+v", round, got[:2])
		}
		if !got[2].IsError || !strings.Contains(got[2].Content, "insufficient funds for run-tr:toolu_r3") {
			t.Fatalf("round %d: tool error %+v", round, got[2])
		}
		if got[3].IsError || !strings.Contains(got[3].Content, `"note":"a\u003cb \u0026 c\u003ed`) {
			t.Fatalf("round %d: echo %+v", round, got[3])
		}
		if round == 0 {
			first = got
		} else {
			// The two same calls may trade IDs (the runner hands a tool
			// its input, not its ID); each result is a recorded one.
			same := got[0].Content == first[0].Content && got[1].Content == first[1].Content ||
				got[0].Content == first[1].Content && got[1].Content == first[0].Content
			if !same || got[2].Content != first[2].Content || got[3].Content != first[3].Content {
				t.Errorf("replayed results %+v, first %+v", got, first)
			}
		}
	}
	if n := effectCount(t, file); n["run-tr:toolu_r1"] != 1 || n["run-tr:toolu_r2"] != 1 || len(n) != 2 {
		t.Fatalf("effects %v, want one per tool_use ID", n)
	}
}

// TestRunnerToolsUnboundRunNothing: tools whose runner was not bound
// cannot name a call in the journal: every call is an is_error result
// saying so, and no effect runs.
func TestRunnerToolsUnboundRunNothing(t *testing.T) {
	tools, file := effects(t)
	srv, client := wire(t, runnerScript()...)
	ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "run-u", Journal: newJournal(t, openStore(t, filepath.Join(t.TempDir(), "db"))), Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	runWithRunner(t, client, ex, false)
	for _, r := range lastResults(t, request(t, srv, 1)) {
		if !r.IsError || !strings.Contains(r.Content, "bind the runner") {
			t.Errorf("unbound result %+v", r)
		}
	}
	if n := effectCount(t, file); len(n) != 0 {
		t.Fatalf("effects %v", n)
	}
}
