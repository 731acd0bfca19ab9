// Package policy decides whether a tool call may run: Guards, their
// composition, the agent-facing Policy helpers, and the MCP firewall.
//
//	fw, err := policy.NewFirewall(policy.FirewallOptions{
//		Deny: []string{"bank__delete_account"}, MaxCallsPerRun: 5, Counters: st})
//	g := policy.Compose(policy.ReadOnly("bank__balance", "bank__transfer"), fw)
//	d, err := policy.Evaluate(ctx, g, policy.Call{RunID: "run-1", ToolCallID: "c1", Tool: "bank__transfer"})
//	// d.Verdict is policy.Allow, policy.Deny (d.Code, d.Reason) or policy.RequireApproval;
//	// durable.Journal.Guarded applies a Guard for you.
//
// A Guard answers one of three verdicts for a Call: Allow, Deny (with a
// reason and a refusal code such as "denied" or "call_limit") or
// RequireApproval (with a reason). Guards decide; they never run the call.
// The journal (package durable) enforces them: a denied call becomes a tool
// result naming the reason and the tool never runs; a call that requires
// approval records a durable pending approval and proceeds once it is
// approved.
//
// Everything here fails closed. A Guard that returns an error, or a verdict
// that is not one of the three (the zero Decision included), denies the
// call: use Evaluate to apply a Guard with those rules. Compose asks guards
// in order and stops at the first deny or require_approval.
//
// A Guard that changes nothing when asked (it counts and records nothing)
// may say so by implementing Pure (PureFunc adapts a function); AllowAll,
// ReadOnly, a firewall without MaxCallsPerRun and Compose of such guards
// do. A journal may ask a Pure guard before it looks a call up, which saves
// it a read per call.
//
// This package never imports durable or store. What it needs from storage
// it declares itself: Counters (atomic counters; store.CounterStore
// satisfies it) and Contracts (pinned vs current tool fingerprints).
//
// # The firewall
//
// NewFirewall builds a Guard from FirewallOptions, checking in this order:
//
//  1. Deny list: a tool on it is denied (code "denied").
//  2. Allow list: when non-empty, a tool not on it is denied (fail closed).
//  3. MaxCallsPerRun: distinct calls per (scope, run, tool) are counted in
//     Counters; a call past the cap is denied with code "call_limit".
//  4. Contract pinning: a tool whose current fingerprint differs from its
//     pinned one requires approval with the reason "tool description
//     changed — poisoning risk". A tool that is not pinned requires
//     approval too, unless FirewallOptions.Unpinned says otherwise.
//
// Names in the lists match Call.Tool (the projected name) exactly.
//
// # Counting calls across a resume
//
// The cap is on distinct calls, named by (RunID, ToolCallID). The journal
// (durable.Journal.Guarded) does not put a call whose record exists to a
// counting guard again (a firewall with MaxCallsPerRun is not Pure; a
// guard that changes nothing when asked, a Pure one, may be asked first),
// but a call without a record is re-checked on every resume —
// a call paused for approval is checked again each time the run resumes,
// and a denied call too — and a re-check must neither count the call twice
// nor change its answer. So the firewall keeps two counters in Counters, which survive
// the process and are shared by every process using the same store:
//
//   - the run's count for the tool, key store.Key("fw", scope, run, tool);
//   - the call's ordinal, key store.Key("fw", scope, run, tool, toolCallID):
//     the value the run's count reached when this call was counted.
//
// (A key is "fw_" and 32 hex digits of a hash whose parts are
// length-delimited: no run, tool or call ID can forge another's key, and
// whatever they hold — a NUL byte, invalid UTF-8, a megabyte — the key is
// short and plain, so every store accepts it.)
//
// On a check the firewall reads the call's ordinal. If it is set, the call
// was counted before and the answer is the same as then (ordinal <= cap).
// If not, it increments the run's count to n, adds n to the call's ordinal
// and answers n <= cap. Every anomaly errs toward denial: a crash between the
// two increments, or two processes checking the same call at the same
// moment, counts that call twice (its ordinal is then larger), never zero
// times. Calls denied by a list, and calls without a RunID, are not counted
// (a call outside a run has no run to cap); a call without a ToolCallID is
// counted on every check. Counters expire after
// CounterTTL (default 24 h, the journal's default TTL), measured from the
// last call of the run to that tool.
package policy
