// Package openai puts Gatehouse tools and the durable run loop on the
// OpenAI API, through the official Go SDK (github.com/openai/openai-go/v3):
// the Responses API and Chat Completions.
//
//	import (
//		oai "github.com/openai/openai-go/v3"
//		"github.com/gatehouse-dev/gatehouse/adapters/openai"
//	)
//
//	ts, err := toolset.Open(ctx, servers, nil)              // MCP servers, projected and guarded
//	tools, err := loop.ToolsetTools(ctx, ts)                // or loop.SessionTools for a gateway session
//	st, err := sqlite.Open(ctx, "agent.db", nil)
//	journal, err := durable.NewJournal(st, &durable.JournalOptions{Approvals: st})
//	defer journal.Close()
//	model := openai.NewResponsesModel(oai.NewClient(), "gpt-5") // OPENAI_API_KEY; or NewChatModel
//	res, err := loop.Run(ctx, loop.Options{RunID: "ticket-42", Journal: journal,
//		Model: model, Tools: tools, Prompt: "Refund order 42."})
//	// killed mid-run? The same loop.Run resumes: recorded turns are not
//	// asked again, recorded calls not sent again, and a call the killed
//	// process left at the server is in_doubt at once (the journal takes
//	// its executor instance of the store), never sent twice.
//
// run_busy, the one refusal returned as an error, means another copy of
// the agent still holds a call of the run: retry it with backoff
// (Example_restart shows the loop); in_doubt is for someone to decide.
//
// # What it gives
//
// Tool definitions: ResponsesTools and ChatTools turn the loop's tools
// (loop.ToolDef, e.g. loop.Executor.Tools) into the SDK's function tools,
// names as the toolset projected them (OpenAI's ^[a-zA-Z0-9_-]{1,64}$)
// and input schemas whole: $defs, $ref, oneOf and nested objects are
// sent as they are, numbers exactly, and a schema without a top-level
// "type" gets "type": "object", which the API requires. A top-level
// oneOf, anyOf, allOf, enum or not, which the API refuses, is merged into
// one object schema (toolset.ProviderSchema) and the alternatives are
// described after the tool's description; the tool still gets the model's
// arguments as they are. Strict mode is off (ToolOptions.Strict turns it
// on): MCP schemas rarely fit its subset, and they are not rewritten for
// it.
//
// Deferred loading: the Responses API can keep functions out of the
// model's context until its tool search loads them (defer_loading and a
// {"type": "tool_search"} tool). DeferredToolsetTools uses it in place of
// the toolset's disclosure tiers: the tools of a server over the toolset's
// budget get their full schemas back and are deferred, and
// mcp__describe_tool is left out. Chat Completions has no such thing: it
// gets the toolset's tiers and mcp__describe_tool, as loop.ToolsetTools
// gives them.
//
// Calls: CallResponses (a response's function_call items in,
// function_call_output items out) and CallChat (an assistant message's
// tool_calls in, tool messages out) make the model's calls through a
// loop.Executor: in parallel, each through the journal and the guard
// under the run's ID and the provider's call ID, so the MCP server sees
// _meta.idempotencyKey "runID:callID" and a call made again is replayed
// from the journal, not sent. Refusals (approval_required, denied,
// in_doubt, quarantined, rate_limited, ...) and tool errors become
// results the model reads: the text ("[code] message", "error: ...") and,
// when the result carries structured content (a refusal's code,
// retryable and approvalId; a tool's structuredContent), that content as
// JSON in a second text part. Only run_busy and a journal that cannot
// record are Go errors. An approval_required outcome carries its
// ApprovalID: decide it (gatehouse approvals approve), then execute the
// same output again and the call runs once.
//
// Models: ResponsesModel and ChatModel are loop.Models. Each turn sends
// the whole conversation (no previous_response_id: what a resumed run
// sends is exactly what its journal holds), and the calls' IDs are the
// API's call_id / tool call id, recorded with the turn, so a resume sends
// the same IDs and the results that go with them. Reasoning items are not
// carried between turns; the function calls are sent back without their
// item IDs, which the API accepts.
//
// Streaming: both models are loop.StreamModels. With loop.Options.OnDelta
// set, each turn is one streamed request (the SDK's NewStreaming parses
// the server-sent events) and OnDelta gets the text and each function
// call's name, ID and argument fragments as they arrive; the turn is
// journaled only when the stream has delivered the whole response (a
// finish reason; response.completed), exactly as a non-streamed turn. A
// stream that fails or is cut is an error (ErrIncomplete when it ended
// cleanly too early) and records no response: the resume asks again.
//
// Package openaitest is a local server speaking both wire formats,
// streamed (server-sent events) or not, for tests and for running an
// agent without a key.
package openai
