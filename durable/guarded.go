package durable

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/rawresult"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
)

// Defaults of the approval fields of JournalOptions.
const (
	// DefaultApprovalTTL is how long an approval answers for its call.
	DefaultApprovalTTL = 24 * time.Hour
	// DefaultMaxPendingApprovals bounds one subject's pending approvals.
	DefaultMaxPendingApprovals = 100
)

// newApprovalID returns a fresh approval ID: "apr_" and 16 random hex
// digits. Every request for an approval gets its own, so an ID an
// operator saw once never names a later request of the same call.
func newApprovalID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "apr_" + hex.EncodeToString(b[:])
}

func (j *Journal) approvalTTL() time.Duration {
	if j.o.ApprovalTTL > 0 {
		return j.o.ApprovalTTL
	}
	return DefaultApprovalTTL
}

func (j *Journal) maxPending() int {
	switch {
	case j.o.MaxPendingApprovals > 0:
		return j.o.MaxPendingApprovals
	case j.o.MaxPendingApprovals < 0:
		return 0 // unbounded
	}
	return DefaultMaxPendingApprovals
}

// Guarded is Do behind a guard, with durable approvals:
//
//   - a call whose record exists is answered from the record (a replay,
//     in_doubt or key_reused) or, when the record is started, by Do
//     (run_busy, a take-over), whatever the guard would say. A guard that
//     counts or records (one that is not policy.Pure) is not asked about
//     it, so a resumed run does not count its calls twice; a Pure guard is
//     asked first, and when it allows, the claim finds the record (one
//     store statement instead of a read and a claim), unless many recent
//     calls found a record (replays): then the read goes first, as for
//     any guard, and answers them without a write;
//   - the guard's deny (or an error: fail closed) is an *refusal.Error with
//     the decision's code (denied, call_limit, quarantined, ...) and the
//     effect never runs;
//   - require_approval asks for an approval of this one execution: a
//     pending store.Approval bound to the call's key, owner, server, tool
//     and arguments (kept as sent, for the operator to see), expiring
//     after JournalOptions.ApprovalTTL. The call answers approval_required
//     (retryable) with its ID, the same ID while it is pending. Once an
//     operator approves it, the same call with the same key spends it
//     (store.ApprovalStore.UseApproval, a compare-and-swap) and runs once
//     through Do; once denied it answers approval_denied until the denial
//     expires. A spent or expired approval never authorizes again: after
//     the call's record is swept, the same call asks for a new approval.
//     A call whose arguments, owner, server or tool differ from the live
//     approval of its key answers key_reused and never runs on it;
//   - an approval is for the contract of the tool it was asked under: a
//     call with a Call.Contract other than the live approval's (its
//     tool's description, schema or annotations changed and an operator
//     trusted the change since; or the approval was asked without a
//     contract) supersedes it (store.ApprovalStore.SupersedeApproval:
//     expired, whether pending, approved or denied: the operator judged
//     another tool) and asks a new approval, approval_required with a new
//     ID whose message names the superseded one. An approval asked under
//     the old contract never authorizes a call under the new one. A call
//     with no contract ("") binds nothing;
//   - a subject with JournalOptions.MaxPendingApprovals pending approvals
//     gets rate_limited (retryable, retryAfter: when its first pending
//     approval expires) instead of another one;
//   - allow runs Do.
//
// A guard that requires approval while JournalOptions.Approvals is nil is
// refused as denied.
func (j *Journal) Guarded(ctx context.Context, c Call, g policy.Guard, effect Effect) (*mcp.CallToolResult, bool, error) {
	a, replayed, err := j.guarded(ctx, c, g, withRaw(ctx, effect))
	if h := rawresult.From(ctx); h != nil {
		*h = a.raw // the answer's bytes, or none: what the caller reads (internal/rawresult)
	}
	return a.res, replayed, err
}

// guarded is Guarded for an effect that may answer bytes.
func (j *Journal) guarded(ctx context.Context, c Call, g policy.Guard, effect anyEffect) (answer, bool, error) {
	if j.closed.Load() {
		return answer{}, false, errClosed
	}
	if c.RunID == "" || c.ToolCallID == "" {
		return answer{}, false, fmt.Errorf("%w: run ID and tool call ID are required", ErrInvalidCall)
	}
	fp, err := fingerprint(c)
	if err != nil {
		return answer{}, false, err
	}
	key := j.key(c)
	pc := policy.Call{RunID: c.RunID, ToolCallID: c.ToolCallID, Server: c.Server,
		Tool: c.Tool, RemoteName: c.RemoteName, Args: c.Args, Subject: c.Owner}
	pure := policy.IsPure(g)
	if pure && !j.recent.readFirst() {
		// Asking the guard changes nothing: ask it first. When it allows,
		// the claim finds a record the read would have found, and Do
		// answers it exactly as recorded does (a replay, in_doubt,
		// key_reused; run_busy or a take-over for a started one): one
		// statement instead of two. Any other answer is not given to a
		// recorded call, which is read and answered from its record.
		d, err := policy.Evaluate(ctx, g, pc)
		if err == nil && d.Verdict == policy.Allow {
			var found bool
			res, replayed, err := j.do(ctx, c, fp, effect, &found)
			j.recent.add(found)
			return res, replayed, err
		}
		if rec, rerr := j.s.GetRecord(ctx, key); rerr == nil {
			j.recent.add(true)
			return j.recorded(ctx, c, rec, fp, effect)
		} else if !errors.Is(rerr, store.ErrNotFound) {
			return answer{}, false, fmt.Errorf("durable: read record %s: %w", c.IdempotencyKey(), rerr)
		}
		j.recent.add(false)
		return j.decided(ctx, c, key, fp, d, err, effect)
	}
	rec, err := j.s.GetRecord(ctx, key)
	if pure {
		j.recent.add(err == nil)
	}
	if err == nil {
		return j.recorded(ctx, c, rec, fp, effect)
	} else if !errors.Is(err, store.ErrNotFound) {
		return answer{}, false, fmt.Errorf("durable: read record %s: %w", c.IdempotencyKey(), err)
	}
	d, err := policy.Evaluate(ctx, g, pc)
	return j.decided(ctx, c, key, fp, d, err, effect)
}

// decided carries out the guard's decision d (or its error) about a call
// that has no record.
func (j *Journal) decided(ctx context.Context, c Call, key store.RecordKey, fp string, d policy.Decision, err error, effect anyEffect) (answer, bool, error) {
	if err != nil {
		return answer{}, false, &refusal.Error{Code: refusal.Denied, Message: d.Reason, Err: err}
	}
	switch d.Verdict {
	case policy.Allow:
		return j.do(ctx, c, fp, effect, nil)
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
		return answer{}, false, &refusal.Error{Code: code, Message: msg}
	}
}

// recorded answers a call whose record was read. A completed or in-doubt
// record is answered here, never through a claim: were the record swept
// between the read and a claim, the claim would run the call past its
// guard and approval. A started record goes to Do, which decides between
// run_busy, a take-over and in_doubt.
func (j *Journal) recorded(ctx context.Context, c Call, rec store.Record, fp string, effect anyEffect) (answer, bool, error) {
	ikey := c.IdempotencyKey()
	switch rec.State {
	case store.StateSucceeded, store.StateFailed, store.StateInDoubt:
		if rec.Fingerprint != fp || rec.Owner != c.Owner {
			return answer{}, false, c.keyReused("another call (other server, tool, arguments or owner)", "")
		}
		if rec.State == store.StateInDoubt {
			return answer{}, false, inDoubt(ikey, "")
		}
		res, err := replay(rec.Outcome)
		if err != nil {
			return answer{}, true, fmt.Errorf("durable: replay %s: %w", ikey, err)
		}
		return answer{res: res.result}, true, res.err
	}
	return j.do(ctx, c, fp, effect, nil)
}

func (j *Journal) approval(ctx context.Context, c Call, key store.RecordKey, fp, reason string, effect anyEffect) (answer, bool, error) {
	if j.o.Approvals == nil {
		return answer{}, false, &refusal.Error{Code: refusal.Denied,
			Message: fmt.Sprintf("the call to %s needs an operator's approval (%s) and no approval store is configured", c.Tool, reason)}
	}
	callerKey := c.Key
	if callerKey == c.IdempotencyKey() {
		callerKey = ""
	}
	superseded := "" // the approval of another contract this call retired, if any
	for range 4 {
		now := j.o.Clock()
		a, _, err := j.o.Approvals.CreateApproval(ctx, store.Approval{
			ID: newApprovalID(), RecordKey: key, Server: c.Server, Tool: c.Tool, ArgsFingerprint: fp,
			Contract: c.Contract, Args: c.Args, CallerKey: callerKey, Reason: reason, Owner: c.Owner,
			State: store.ApprovalPending, CreatedAt: now, ExpiresAt: now.Add(j.approvalTTL()),
		}, j.maxPending())
		if le := (*store.PendingLimitError)(nil); errors.As(err, &le) {
			e := &refusal.Error{Code: refusal.RateLimited, Retryable: true, Err: err,
				Message: fmt.Sprintf("the call to %s needs an operator's approval and %d of yours are already waiting; retry once some are decided or expire", c.Tool, le.Max)}
			if !le.NextExpiry.IsZero() {
				e.RetryAfter = max(le.NextExpiry.Sub(now), time.Millisecond)
			}
			return answer{}, false, e
		}
		if err != nil {
			return answer{}, false, fmt.Errorf("durable: ask approval for %s: %w", c.IdempotencyKey(), err)
		}
		if a.ArgsFingerprint != fp || a.Owner != c.Owner || a.Server != c.Server || a.Tool != c.Tool {
			return answer{}, false, c.keyReused("another call awaiting approval", a.ID)
		}
		if c.Contract != "" && a.Contract != c.Contract {
			// Asked under another contract of the tool: it answers for
			// this call no more, whatever its state. A concurrent call
			// may have retired (or spent) it first: read again.
			if _, err := j.o.Approvals.SupersedeApproval(ctx, a.ID, c.Contract); err != nil && !errors.Is(err, store.ErrNotFound) {
				return answer{}, false, fmt.Errorf("durable: supersede approval %s: %w", a.ID, err)
			}
			superseded = a.ID
			continue
		}
		switch a.State {
		case store.ApprovalApproved:
			_, err := j.o.Approvals.UseApproval(ctx, a.ID, now)
			switch {
			case err == nil:
				return j.do(ctx, c, fp, effect, nil)
			case errors.Is(err, store.ErrExpired):
				continue // expired since it was read: ask again
			case errors.Is(err, store.ErrNotApproved):
				// Spent by a concurrent call with the same key, which runs it.
				return answer{}, false, &refusal.Error{Code: refusal.RunBusy, Retryable: true, Message: msgRunBusy, ApprovalID: a.ID}
			default:
				return answer{}, false, fmt.Errorf("durable: use approval %s: %w", a.ID, err)
			}
		case store.ApprovalDenied:
			return answer{}, false, &refusal.Error{Code: refusal.ApprovalDenied, ApprovalID: a.ID,
				Message: fmt.Sprintf("an operator denied the call to %s (approval %s)", c.Tool, a.ID)}
		default:
			msg := fmt.Sprintf("the call to %s needs an operator's approval", c.Tool)
			if a.Reason != "" {
				msg += ": " + a.Reason
			}
			if superseded != "" {
				msg += fmt.Sprintf("; the tool's contract changed since approval %s was asked, so it was asked again", superseded)
			}
			msg += fmt.Sprintf(" (approval %s); once approved, retry the same call with the same key", a.ID)
			return answer{}, false, &refusal.Error{Code: refusal.ApprovalRequired, Retryable: true, ApprovalID: a.ID, Message: msg}
		}
	}
	return answer{}, false, fmt.Errorf("durable: the approval of %s keeps expiring or being superseded as it is read; retry", c.IdempotencyKey())
}

// SweepApprovals deletes the approvals whose expiry has passed (pending,
// decided, used or expired) and returns how many; zero without an
// approval store.
func (j *Journal) SweepApprovals(ctx context.Context) (int64, error) {
	if j.o.Approvals == nil {
		return 0, nil
	}
	n, err := j.o.Approvals.SweepApprovals(ctx, j.o.Clock())
	if err != nil {
		return 0, fmt.Errorf("durable: sweep approvals: %w", err)
	}
	return n, nil
}

// recent counts, over the last calls Guarded made behind a policy.Pure
// guard, those whose key already had a record. When they are few (fresh
// calls), the claim goes first: a fresh call then costs no read. When
// they are many (replays), the read goes first: a replay answered by the
// claim costs a write transaction (the store's write lock, on SQLite)
// and a read where the read alone answers it. Both orders give the same
// answers; only the cost differs.
type recent struct{ calls, hits atomic.Int64 }

// recentWindow is about how many calls recent remembers.
const recentWindow = 64

// readFirst reports whether more than a third of the recent calls found
// a record.
func (r *recent) readFirst() bool { return r.hits.Load()*3 > r.calls.Load() }

// add counts a call that found a record (hit) or not. Past twice the
// window both counts are halved, so older calls weigh less (the counts
// are a heuristic: a race between two halvings only blurs them).
func (r *recent) add(hit bool) {
	if hit {
		r.hits.Add(1)
	}
	if r.calls.Add(1) >= 2*recentWindow {
		r.calls.Store(recentWindow)
		r.hits.Store(r.hits.Load() / 2)
	}
}
