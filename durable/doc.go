// Package durable is the effect journal: it makes a tool call run at most
// once per key, across crashes, restarts and concurrent callers, through a
// store.JournalStore (SQLite, PostgreSQL or memory).
//
//	st, err := sqlite.Open(ctx, "gatehouse.db", nil) // or postgres.Open, memory.New
//	j, err := durable.NewJournal(st, &durable.JournalOptions{Approvals: st})
//	defer j.Close() // close it before the store
//	c := durable.Call{RunID: "order-42", ToolCallID: "call-1", Server: "bank", Tool: "charge", Args: args}
//	res, replayed, err := j.Do(ctx, c, func(ctx context.Context, key string) (*mcp.CallToolResult, error) {
//		return charge(ctx, key) // key is "order-42:call-1": send it as _meta.idempotencyKey
//	})
//	if r, ok := refusal.As(err); ok && r.Code == refusal.InDoubt {
//		// it may have run: not sent again (unless the tool is Repeatable)
//	}
//
// A call is keyed by (scope, run ID, tool call ID) and fingerprinted by
// pin.CallFingerprint(server, tool, canonical args). Journal.Do claims a
// started record (INSERT ... ON CONFLICT DO NOTHING, committed before the
// effect), runs the effect with _meta.idempotencyKey = runID:toolCallID,
// renews the claim's lease every Lease/3 while the effect runs, and records
// the outcome (one claim and one completion: two store writes per call).
// A repeat of the key returns the recorded outcome, byte for byte.
//
// What an effect's answer means:
//
//	effect returns                                  record     Do returns now / on every repeat
//	result, isError false                           succeeded  the result / the same result (replayed)
//	result, isError true                            failed     the result / the same result (replayed)
//	*jsonrpc.Error: the server answered an error    failed     the error / a *RecordedError, same text,
//	  (except the go-sdk's local -32003/-32004/-32005)           unwrapping to the same *jsonrpc.Error
//	an error marked with Failed(err) (loop's        failed     the error / a *RecordedError, same text
//	  ToolsetCall marks refusals made before
//	  sending: unknown tool, bad arguments, auth,
//	  closed, quarantined, withdrawn)
//	any other error: context cancelled or timed     in_doubt   *refusal.Error in_doubt wrapping it / in_doubt
//	  out, connection lost, EOF, go-sdk closing       (started, lease released, for a repeatable tool:
//	  codes, unknown errors                            the next call re-sends it with the same key)
//	(the effect panics: the panic propagates, or    started    in_doubt once the lease has expired
//	  the process dies before recording)
//
// A record in another state answers: started with a live lease, run_busy
// (retryable: "retry the same call with the same key; it has not been run
// twice"); started with an expired lease, in_doubt (the record is marked
// in_doubt), or, when JournalOptions.Repeatable says the operator declared
// the tool repeatable, taken over and re-sent with the same idempotency
// key; in_doubt, in_doubt again, for every tool: in_doubt is final, an
// operator's matter. Another fingerprint or owner under an existing key is
// key_reused, never a replay.
//
// A lease only says how long to wait for an executor that went silent.
// With JournalOptions.Executors (a store.ExecutorStore where processes
// register and heartbeat, as the gateway does), a started record whose
// executor is known to be dead (it restarted under the same instance, shut
// down, or stopped heartbeating for its lease) is decided at once, as an
// expired lease would be: in doubt, or taken over once for a repeatable
// tool. The store checks in the same statement that the record is still
// held by that dead executor, so replicas racing on it move it once.
//
// A journal given no Executor name has an executor of its own when its
// store is one that processes share and register in (a SQLite file; a
// PostgreSQL store named by JournalOptions.StoreDSN): an instance of that
// store on this host (the first free lock-file slot, released by the
// kernel when the process dies), a new incarnation per journal,
// registered before its first claim, kept alive by its calls (no
// goroutine) and stopped by Journal.Close. A program killed mid-call and
// started again takes the dead one's instance, so the calls it resumes are
// decided at once: in doubt, a repeatable one re-sent, a recorded one
// replayed; never run_busy for the rest of a lease. An executor the store
// does not know (a journal on a memory store, or named by its caller and
// not registered, an older record) keeps the lease rules.
//
// An effect answers a *mcp.CallToolResult. Inside the module, the
// gateway's byte sender may answer the server's result as the bytes it
// received instead (internal/rawresult): they are recorded as they are
// ({"result": <bytes>}: nothing decoded or re-encoded, members the go-sdk's
// type does not know kept), the state from the result's isError; bytes
// that are not one JSON object are recorded as a failed call ("the result
// could not be recorded: ..."), never in doubt. A replay decodes the
// record as for every effect.
//
// Guarded puts a policy.Guard in front of Do and keeps approvals durable.
// An approval authorizes one execution: it is bound to the call's key,
// owner, tool and arguments, spent by the execution it allowed, and
// expires (JournalOptions.ApprovalTTL); once the call's record is swept,
// the same call needs a new approval. A subject's pending approvals are
// bounded (JournalOptions.MaxPendingApprovals). Every refusal is a *refusal.Error (package refusal:
// the codes and shape of docs/reference/refusals.md; its Result is the tool-result
// form), found with refusal.As; a refusal recorded as a call's outcome
// replays as the same refusal (RecordedError). Tool, Invoke and GoTool
// route Go functions (and, with loop.ToolsetCall, toolset tools) through
// the journal.
//
// docs/durable.md states the guarantees and the measured cost of each
// durability setting.
package durable
