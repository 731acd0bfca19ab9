// Package eino connects Gatehouse's durable tool calls and run loop to
// eino (github.com/cloudwego/eino): Gatehouse tools as eino tools, and any
// eino chat model as the model of a durable run.
//
//	ts, err := toolset.Open(ctx, servers, nil) // the agent's MCP servers
//	tools, err := loop.ToolsetTools(ctx, ts)
//	st, err := sqlite.Open(ctx, "agent.db", nil)
//	journal, err := durable.NewJournal(st, &durable.JournalOptions{Approvals: st})
//	defer journal.Close()
//	cm, err := openai.NewChatModel(ctx, &openai.ChatModelConfig{APIKey: key, Model: "gpt-4.1"}) // eino-ext
//
//	// The durable loop drives the eino model: after a crash, the same call
//	// resumes the run, asks the model nothing it answered, repeats no effect
//	// (a call the dead process left at the server is in_doubt at once).
//	res, err := loop.Run(ctx, loop.Options{RunID: "ticket-7", Journal: journal,
//		Model: eino.NewModel(cm), Tools: tools, Prompt: "Refund order 42."})
//
//	// Or eino drives (a ReAct agent, a graph with a ToolsNode) and
//	// Gatehouse makes the tool calls durably.
//	ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "ticket-7", Journal: journal, Tools: tools})
//	etools, err := eino.Tools(ex)
//	agent, err := react.NewAgent(ctx, &react.AgentConfig{ToolCallingModel: cm,
//		ToolsConfig: compose.ToolsNodeConfig{Tools: etools}})
//
// # Tools
//
// Tools returns one Tool (a tool.InvokableTool) per tool of a
// loop.Executor. Every call goes through the executor: the journal and the
// guard, under the executor's RunID and the call's ID, with
// "runID:callID" sent to the MCP server as _meta.idempotencyKey. The call
// ID is the model's own, schema.ToolCall.ID: a compose.ToolsNode (and so
// the ReAct agent) runs each tool with it in the context, where
// InvokableRun reads it (compose.GetToolCallID); a call made outside a
// ToolsNode names it with WithCallID. A call with no ID is not run (the
// model reads an error). Providers' IDs that the journal cannot use as
// they are are hashed (loop.JournalID).
//
// The same run and call ID is the same call: once recorded, it is
// replayed, not made again. An eino agent that is restarted asks its model
// again (eino does not journal model turns), but a model that answers with
// the same call IDs gets the recorded results; to resume without asking the
// model again, let loop.Run drive the eino model (NewModel).
//
// What the model reads (Text): the result's text; a tool's error result
// and a JSON-RPC error ("error: ...") as text; a refusal (denied,
// approval_required, in_doubt, rate_limited, call_limit, ...) as
// "[code] message" followed, on the next line, by its structured content as
// JSON ({"code", "retryable", "approvalId", "retryAfterMs"}), so the
// approval an operator must decide is named in the conversation. None of
// these is an error of InvokableRun, so one refused call never fails the
// ToolsNode or its siblings; only run_busy (another executor is driving the
// same run) and a journal that cannot record are. Execute does the same
// for an assistant message outside a ToolsNode and also returns the
// loop.Outcomes (codes, approval IDs).
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
// ToolInfo gives eino the tool's input schema through
// schema.NewParamsOneOfByJSONSchema, carried whole: eino's
// jsonschema.Schema has fields for the 2020-12 keywords and drops any
// other keyword when it decodes JSON (a draft-07 "definitions", leaving
// its $refs dangling; "x-" extensions; "items" as an array). The
// adapter fills the fields it can hold exactly (so eino components that
// read them see $defs, oneOf, properties in order, nested objects) and
// keeps every other keyword, and every value a field would change (a
// number beyond float64, an empty list an omitempty would drop), in the
// struct's Extras as raw JSON, which eino's models write back. What
// reaches the provider is the tool's schema as a JSON value (FuzzToolInfo
// checks it), except that a top-level oneOf, anyOf, allOf, enum or not,
// which OpenAI and Anthropic refuse, is first merged into one object
// schema (toolset.ProviderSchema) and the alternatives are described
// after the tool's description; the tool still gets the model's
// arguments as they are. Only a schema that is not a JSON object is refused
// (ErrSchema); an absent one is {"type":"object"}. Tool names are the
// toolset's projected names, which are provider-legal.
//
// # Model
//
// NewModel makes a loop.Model of any eino model.BaseChatModel: one
// Generate call per turn with the run's system prompt, its messages (tool
// calls and tool results under their call IDs) and its tools (bound with
// WithTools on a model.ToolCallingChatModel, else passed as the
// model.WithTools option). The response's tool call IDs are the model's;
// loop.Run journals the response, so a resume replays the same IDs.
// Arguments that are not JSON are kept as a JSON string, which the
// executor answers with an error result the model reads.
//
// The Model is a loop.StreamModel: with loop.Options.OnDelta set, a turn
// is one Stream call, each chunk's content and tool call pieces go to
// OnDelta as they arrive, and the chunks concatenated
// (schema.ConcatMessages) are the turn's response, journaled once a chunk
// carried a finish reason and the stream ended. A stream that fails, or
// ends without a finish reason (ErrIncomplete), records no response.
//
// Package einotest is a local Chat Completions server, scripted by turn,
// for tests and examples that need no API key.
package eino
