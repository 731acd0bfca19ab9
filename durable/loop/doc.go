// Package loop is the durable run loop: it drives a model and its tools
// so that a run which stops — a crash, a deploy, a pause for an operator's
// approval — resumes where it stopped, without asking the model again for
// what it already answered and without running any effect twice.
//
//	journal, err := durable.NewJournal(st, &durable.JournalOptions{Approvals: st})
//	tools, err := loop.ToolsetTools(ctx, ts) // or SessionTools, or your own loop.Tool values
//	opts := loop.Options{RunID: "ticket-123", Journal: journal, Model: model, Tools: tools,
//		Guard: guard, Prompt: "Refund order 42."}
//	res, err := loop.Run(ctx, opts) // after a crash: the same call resumes the run
//	if err == nil && res.Paused {
//		// an operator decides res.ApprovalIDs; then loop.Run(ctx, opts) again
//	}
//
// # What is journaled
//
// Everything goes through one durable.Journal, under the run's ID:
//
//   - Each model turn n is a journal record with tool call ID "turn-<n>"
//     (tool "model.turn", no server). Its outcome is the model's response. On a
//     resume a recorded turn is replayed from the journal: the model is not
//     called. A turn that failed or was cut short is in doubt; a turn has no
//     effect, so the resume asks the model again under "turn-<n>.retry-<a>"
//     (and every later resume walks the same chain to the same answer). The
//     record's arguments hold the turn number and a hash of the system
//     prompt and prompt: reusing a run ID for another prompt is refused
//     (key_reused), never replayed.
//   - Each tool call goes through Journal.Guarded with the run's Guard and
//     the model's call ID as tool call ID, and carries "runID:toolCallID" to
//     MCP servers as _meta.idempotencyKey. A call without a usable ID (none,
//     a repeat of an earlier ID, one starting with the reserved "turn-", or
//     not printable ASCII up to 128 bytes) gets "turn-<n>-call-<i>". IDs
//     depend only on recorded responses, so a resume assigns the same ones
//     and every recorded call replays its stored outcome.
//
// # Tool calls
//
// The calls of one turn run in parallel. Each ends as a tool message for
// the next turn, in call order: the tool's result; its error ("error: ..."
// with IsError); or a refusal as the text "[code] message" with IsError —
// denied, call_limit, approval_denied, in_doubt (the call may have been
// sent and its outcome is unknown: it is not sent again), key_reused — so
// a refusal of one call never cancels its siblings. An unknown tool or
// arguments that are not a JSON object are reported the same way without
// touching the journal.
//
// Two answers stop the turn instead: a call that requires approval makes
// Run return a Result with Paused set and the pending ApprovalIDs (after
// its siblings have finished and been recorded), and run_busy (another
// executor is driving the same run) is returned as an error. To resume a
// paused run, decide the approvals (store.ApprovalStore.DecideApproval,
// or `gatehouse approvals approve|deny`) and call Run again with the same
// Options: recorded turns and calls replay, an approved call runs once,
// a denied one becomes an approval_denied result the model reads.
//
// # Models and tools
//
// Model is deliberately small (ModelRequest in, ModelResponse out); the
// modules under adapters/ hold one per provider SDK and framework. An agent
// that drives its provider's API itself, without Run, makes the model's
// calls through an Executor: the same journal, guard and refusals, keyed
// by the provider's tool call IDs. Tools are Tool values:
// SessionTools adapts a connected go-sdk client session, ToolsetTools a
// toolset.Toolset (the safe choice for servers you do not control), and a
// Go function can be a Tool directly.
//
// # Streaming
//
// A model that can stream implements StreamModel; with Options.OnDelta
// set, Run asks it through TurnStream and hands each piece of the turn to
// OnDelta as it arrives: text, and tool calls' argument fragments when
// the provider streams them, each tagged with its turn. What is journaled
// does not change: the turn is recorded once the whole response is in,
// with the same record a non-streaming turn writes. A stream that fails
// or is cut mid-way is an error that records no response (the turn's
// record stays in doubt), so a resume asks the model again — the caller
// may have seen part of an answer that the journal never holds. Replayed
// turns are not streamed. The models of every adapter under adapters/
// stream: OpenAI (Chat Completions and Responses), Anthropic, eino and
// fantasy.
//
// # Skills
//
// Options.Skills hands the model the Agent Skills of loaded plugins (see
// package skills) by progressive disclosure: the catalog's index, a fixed
// header and one line per skill within its budget, is appended to System
// after a blank line, and the two tools of SkillTools, skills__read and
// skills__read_file, are added to Tools. They are Go tools (no server):
// each read is journaled and guarded like any call, so a resume replays
// the text the run read, even if the file changed since. The index is part
// of the system prompt the turns' records hash: resuming a run after its
// skills' index changed is refused (key_reused), like a changed System.
package loop
