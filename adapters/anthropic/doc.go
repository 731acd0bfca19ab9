// Package anthropic connects Gatehouse tools and the durable run loop to
// the Anthropic Go SDK (github.com/anthropics/anthropic-sdk-go/v2): an
// agent on Claude whose tool calls run once, and which resumes after a
// crash without asking the model again what it already answered.
//
//	import (
//		sdk "github.com/anthropics/anthropic-sdk-go/v2"
//		ghanthropic "github.com/gatehouse-dev/gatehouse/adapters/anthropic"
//		"github.com/gatehouse-dev/gatehouse/durable"
//		"github.com/gatehouse-dev/gatehouse/durable/loop"
//		"github.com/gatehouse-dev/gatehouse/store/sqlite"
//		"github.com/gatehouse-dev/gatehouse/toolset"
//	)
//
//	func agent(ctx context.Context, servers []toolset.Server) error {
//		ts, err := toolset.Open(ctx, servers, nil) // MCP servers, names projected, descriptions sanitized
//		if err != nil {
//			return err
//		}
//		defer ts.Close()
//		tools, err := loop.ToolsetTools(ctx, ts)
//		if err != nil {
//			return err
//		}
//		st, err := sqlite.Open(ctx, "gatehouse.db", nil)
//		if err != nil {
//			return err
//		}
//		defer st.Close()
//		journal, err := durable.NewJournal(st, &durable.JournalOptions{Approvals: st})
//		if err != nil {
//			return err
//		}
//		defer journal.Close() // its executor stopped in the store
//		client := sdk.NewClient() // ANTHROPIC_API_KEY
//		res, err := loop.Run(ctx, loop.Options{
//			RunID: "ticket-123", Journal: journal, Tools: tools, Prompt: "Refund order 42.",
//			Model: &ghanthropic.Model{Client: &client, Params: sdk.MessageNewParams{Model: sdk.ModelClaudeSonnet5_5}},
//		})
//		if err != nil {
//			return err // after a crash, the same call resumes the run
//		}
//		if res.Paused {
//			// an operator decides res.ApprovalIDs; then loop.Run again
//		}
//		fmt.Println(res.Text)
//		return nil
//	}
//
// # Three ways in
//
// Model is a loop.Model over the Messages API: loop.Run journals each of
// its turns and each tool call, so a resumed run replays the recorded
// turns (same text, same tool_use IDs) and makes no call twice. This is
// the durable way: use it unless you drive the API yourself.
//
// An agent that drives the Messages API itself makes the model's calls
// with ToolResults through a loop.Executor: tool definitions from
// ToolParams(ex.Tools()), then for each reply one user message of
// tool_result blocks, in the reply's order. Each call is journaled under
// the Executor's run ID and the tool_use block's ID ("toolu_..."), and the
// MCP server gets _meta.idempotencyKey "runID:toolu_...": the same reply
// handled again (by a resumed agent that kept its conversation) replays.
// The model's turns are the agent's to keep.
//
// RunnerTools gives the SDK's own tool runner (BetaToolRunner) the tools
// as anthropic.BetaTool values, with the same journal, run ID and tool_use
// IDs. The runner asks the model again when it is started again, so only
// the tool calls are durable there.
//
// # What the model reads
//
// A tool's result is a tool_result of its text. A tool's failure and a
// refusal (denied, approval_required, in_doubt, quarantined, rate_limited,
// ...) are tool_results with is_error: "error: ..." or "[code] message",
// and for a refusal (through ToolResults and RunnerTools) a second text
// block with the refusal's structured content as JSON — the Messages API
// has no structured field in a tool_result — carrying "approvalId" for
// approval_required. None of them is a Go error: only run_busy (another
// process drives the run) and a journal that cannot record are. Through
// loop.Run, a call needing approval pauses the run (Result.Paused).
//
// After a restart: the journal (on a SQLite file, or PostgreSQL with
// durable.JournalOptions.StoreDSN) takes the dead process's executor
// instance of the store, so a call the dead process left at the server is
// in_doubt at once, never sent twice; run_busy then means another copy of
// the agent still holds a call of the run: retry it with backoff
// (Example_restart).
//
// # Names and schemas
//
// Client tool names must match ^[a-zA-Z0-9_-]{1,64}$; a toolset's projected
// names do. ToolParams refuses any other name (ErrInvalidTool) rather than
// renaming it, and carries each input schema whole: sent as it is, every
// keyword ($defs, oneOf, additionalProperties, nested objects, ...), with
// "type":"object". The exception is a top-level oneOf, anyOf or allOf,
// which the API refuses: it is merged into one object schema
// (toolset.ProviderSchema) and the alternatives are described after the
// tool's description; the tool still gets the model's arguments as they
// are.
//
// # Streaming
//
// Model is a loop.StreamModel: with loop.Options.OnDelta set, each turn is
// one streamed request (the SDK's NewStreaming and Message.Accumulate) and
// OnDelta gets each text_delta and each tool_use block's ID, name and
// input_json_delta pieces as they arrive. The turn is journaled only once
// message_stop is in, with the same record a non-streamed turn writes; a
// stream that fails, is cut, or ends before message_stop (ErrIncomplete)
// records no response, and the resume asks again.
//
// The package anthropictest is a local Messages API (POST /v1/messages,
// streamed as server-sent events for "stream": true, or not) for tests
// and examples.
package anthropic
