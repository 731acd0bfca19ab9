// Package fantasy connects Gatehouse's durable tool calls and run loop to
// fantasy (charm.land/fantasy): Gatehouse tools as fantasy agent tools, and
// any fantasy language model as the model of a durable run.
//
//	import ghfantasy "github.com/gatehouse-dev/gatehouse/adapters/fantasy"
//
//	ts, err := toolset.Open(ctx, servers, nil) // the agent's MCP servers
//	tools, err := loop.ToolsetTools(ctx, ts)
//	st, err := sqlite.Open(ctx, "agent.db", nil)
//	journal, err := durable.NewJournal(st, &durable.JournalOptions{Approvals: st})
//	defer journal.Close()
//	provider, err := openai.New(openai.WithAPIKey(key)) // charm.land/fantasy/providers/openai
//	lm, err := provider.LanguageModel(ctx, "gpt-4.1")
//
//	// The durable loop drives the fantasy model: after a crash, the same
//	// call resumes the run, asks the model nothing it answered, repeats no
//	// effect (a call the dead process left at the server is in_doubt at
//	// once).
//	res, err := loop.Run(ctx, loop.Options{RunID: "ticket-7", Journal: journal,
//		Model: ghfantasy.NewModel(lm, nil), Tools: tools, Prompt: "Refund order 42."})
//
//	// Or fantasy's agent drives and Gatehouse makes the tool calls durably.
//	ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "ticket-7", Journal: journal, Tools: tools})
//	agentTools, err := ghfantasy.Tools(ex)
//	result, err := fantasy.NewAgent(lm, fantasy.WithTools(agentTools...)).
//		Generate(ctx, fantasy.AgentCall{Prompt: "Refund order 42."})
//
// # Tools
//
// Tools returns one AgentTool (a fantasy.AgentTool) per tool of a
// loop.Executor. Every call goes through the executor: the journal and the
// guard, under the executor's RunID and fantasy's ToolCall.ID (the model's
// own ID for the call), with "runID:callID" sent to the MCP server as
// _meta.idempotencyKey. The same run and call ID is the same call: once
// recorded, it is replayed, not made again. A fantasy agent that is
// restarted asks its model again (fantasy does not journal model turns),
// but a model that answers with the same call IDs gets the recorded
// results; to resume without asking the model again, let loop.Run drive
// the fantasy model (NewModel).
//
// What the model reads (Text): the result's text; a tool's error result
// and a JSON-RPC error ("error: ...") as text; a refusal (denied,
// approval_required, in_doubt, rate_limited, call_limit, ...) as
// "[code] message" followed, on the next line, by its structured content as
// JSON ({"code", "retryable", "approvalId", "retryAfterMs"}). Errors and
// refusals are responses with IsError (fantasy sends them to the model as
// error tool results), and the structured content is also the response's
// Metadata (fantasy's client metadata: kept with the tool result for the
// application, not sent). None of them is an error of Run, which fantasy's
// agent would treat as fatal; only run_busy (another executor is driving
// the same run) and a journal that cannot record are. Execute does the
// same for a response's calls outside an agent (one tool message, result
// parts in call order) and also returns the loop.Outcomes.
//
// After a restart: the journal (on a SQLite file, or PostgreSQL with
// durable.JournalOptions.StoreDSN) takes the dead process's executor
// instance of the store, so a call the dead process left at the server is
// in_doubt at once, never sent twice; run_busy then means another copy of
// the agent still holds a call of the run: retry it with backoff
// (Example_restart).
//
// # Schemas
//
// fantasy's ToolInfo keeps a schema's properties and required arguments
// only: its agent sends {"type": "object", "properties", "required"}.
// ToolInfo therefore flattens an input schema:
//
//   - local $refs ("#/$defs/x", "#/definitions/x", any "#/..." pointer,
//     a root that is itself a $ref) are inlined where they are used, so no
//     $ref is left dangling; a $ref met again inside its own expansion
//     (a recursive type) is cut to {} (any value), as is one that does not
//     resolve, an external one, or any past a bound on the expansion's
//     size, and the description says which ("Not expanded (any value
//     accepted here, the server checks it): #/$defs/node.");
//   - a top-level oneOf, anyOf or allOf is merged into one object schema
//     as toolset.ProviderSchema does for every adapter (see
//     docs/durable.md, "Tool schemas"): the branches' properties merged,
//     a property required when every oneOf/anyOf branch requires it (and
//     when any allOf branch does), and the description tells the model
//     the forms: "Accepts exactly one of these argument sets: {to} |
//     {count}." (at least one, for anyOf). Merging was chosen over
//     refusing such a tool: the model can still call it, and the MCP
//     server checks the arguments against the real schema;
//   - every other top-level keyword (additionalProperties,
//     patternProperties, if/then/else, not, dependentRequired, ...) cannot
//     be carried and is dropped; the server still checks it.
//
// A model driven by loop.Run (NewModel) needs no flattening: its function
// tools (FunctionTools) carry the input schemas whole, numbers as numbers
// ($defs, oneOf, nested objects), as fantasy's providers send them, but
// for a top-level oneOf, anyOf, allOf, enum or not, which OpenAI and
// Anthropic refuse: that is merged by toolset.ProviderSchema, the same
// merge as above without the inlining ($defs stay). Only a
// schema that is not a JSON object is refused (ErrSchema); an absent one
// is {"type":"object"}. Tool names are the toolset's projected names,
// which are provider-legal.
//
// # Model
//
// NewModel makes a loop.Model of any fantasy.LanguageModel: one Generate
// call per turn with the run's system prompt, its messages (tool calls and
// tool results under their call IDs, consecutive results in one tool
// message, errors and refusals as error results) and its tools. The
// response's tool call IDs are the model's; loop.Run journals the
// response, so a resume replays the same IDs. Arguments that are not JSON
// are kept as a JSON string, which the executor answers with an error
// result the model reads.
//
// The Model is a loop.StreamModel: with loop.Options.OnDelta set, a turn
// is one Stream call, its text and tool input deltas go to OnDelta as
// they arrive, and the response (the text blocks joined, the tool calls)
// is journaled once the finish part is in. An error part, or a stream
// without a finish part (ErrIncomplete), records no response.
//
// Package fantasytest is a local Chat Completions server, scripted by
// turn, for tests and examples that need no API key.
package fantasy
