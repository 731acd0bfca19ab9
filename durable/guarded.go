package durable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
)

// ApprovalID returns the ID of the approval of the call (scope, runID,
// toolCallID): "apr_" and the first 16 hex digits of
// SHA-256(scope 0x00 runID 0x00 toolCallID). It is a pure function of the
// call's key, so a resumed run finds the approval it asked for.
func ApprovalID(scope, runID, toolCallID string) string {
	h := sha256.New()
	h.Write([]byte(scope))
	h.Write([]byte{0})
	h.Write([]byte(runID))
	h.Write([]byte{0})
	h.Write([]byte(toolCallID))
	return "apr_" + hex.EncodeToString(h.Sum(nil))[:16]
}

// Guarded is Do behind a guard, with durable approvals:
//
//   - a call whose record exists is not put to the guard again: Do answers
//     it (a replay, in_doubt, run_busy or key_reused), so a resumed run
//     does not count its calls twice;
//   - the guard's deny (or an error: fail closed) is an *refusal.Error with the
//     decision's code (denied, call_limit, quarantined, ...) and the
//     effect never runs;
//   - require_approval records (idempotently) a pending store.Approval
//     keyed by the call, with ID ApprovalID(...), and answers
//     approval_required (retryable) with its ID; once an operator approves
//     it, the same call with the same key runs once through Do; once denied
//     it answers approval_denied, every time. An approval recorded for
//     other arguments or another owner answers key_reused;
//   - allow runs Do.
//
// A guard that requires approval while JournalOptions.Approvals is nil is
// refused as denied.
func (j *Journal) Guarded(ctx context.Context, c Call, g policy.Guard, effect Effect) (*mcp.CallToolResult, bool, error) {
	if c.RunID == "" || c.ToolCallID == "" {
		return nil, false, fmt.Errorf("%w: run ID and tool call ID are required", ErrInvalidCall)
	}
	fp, err := Fingerprint(c)
	if err != nil {
		return nil, false, err
	}
	key := j.key(c)
	if _, err := j.s.GetRecord(ctx, key); err == nil {
		return j.Do(ctx, c, effect)
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, false, fmt.Errorf("durable: read record %s: %w", c.IdempotencyKey(), err)
	}
	d, err := policy.Evaluate(ctx, g, policy.Call{RunID: c.RunID, ToolCallID: c.ToolCallID, Server: c.Server,
		Tool: c.Tool, RemoteName: c.RemoteName, Args: c.Args, Subject: c.Owner})
	if err != nil {
		return nil, false, &refusal.Error{Code: refusal.Denied, Message: d.Reason, Err: err}
	}
	switch d.Verdict {
	case policy.Allow:
		return j.Do(ctx, c, effect)
	case policy.RequireApproval:
		return j.approval(ctx, c, key, fp, d.Reason, effect)
	default:
		code := d.Code
		if code == "" {
			code = refusal.Denied
		}
		msg := d.Reason
		if msg == "" {
			msg = fmt.Sprintf("the policy denied the call to %s", c.Tool)
		}
		return nil, false, &refusal.Error{Code: code, Message: msg}
	}
}

func (j *Journal) approval(ctx context.Context, c Call, key store.RecordKey, fp, reason string, effect Effect) (*mcp.CallToolResult, bool, error) {
	if j.o.Approvals == nil {
		return nil, false, &refusal.Error{Code: refusal.Denied,
			Message: fmt.Sprintf("the call to %s needs an operator's approval (%s) and no approval store is configured", c.Tool, reason)}
	}
	id := ApprovalID(key.Scope, key.RunID, key.ToolCallID)
	a, _, err := j.o.Approvals.CreateApproval(ctx, store.Approval{
		ID: id, RecordKey: key, Server: c.Server, Tool: c.Tool, ArgsFingerprint: fp,
		Reason: reason, Owner: c.Owner, State: store.ApprovalPending,
	})
	if err != nil {
		return nil, false, fmt.Errorf("durable: record approval %s: %w", id, err)
	}
	if a.ArgsFingerprint != fp || a.Owner != c.Owner || a.Server != c.Server || a.Tool != c.Tool {
		return nil, false, &refusal.Error{Code: refusal.KeyReused, ApprovalID: a.ID,
			Message: fmt.Sprintf("key %s was used for another call awaiting approval; use a new tool call ID", c.IdempotencyKey())}
	}
	switch a.State {
	case store.ApprovalApproved:
		return j.Do(ctx, c, effect)
	case store.ApprovalDenied:
		return nil, false, &refusal.Error{Code: refusal.ApprovalDenied, ApprovalID: a.ID,
			Message: fmt.Sprintf("an operator denied the call to %s (approval %s)", c.Tool, a.ID)}
	default:
		msg := fmt.Sprintf("the call to %s needs an operator's approval", c.Tool)
		if a.Reason != "" {
			msg += ": " + a.Reason
		}
		msg += fmt.Sprintf(" (approval %s); once approved, retry the same call with the same key", a.ID)
		return nil, false, &refusal.Error{Code: refusal.ApprovalRequired, Retryable: true, ApprovalID: a.ID, Message: msg}
	}
}
