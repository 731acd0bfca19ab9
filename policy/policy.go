package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/gatehouse-dev/gatehouse/refusal"
)

// Verdict is what a Guard decides about one call.
type Verdict string

// The three verdicts. Any other value (including the empty string) is
// invalid and is treated as a denial by Compose and Evaluate (fail closed).
const (
	// Allow lets the call run.
	Allow Verdict = "allow"
	// Deny refuses the call; the tool never runs.
	Deny Verdict = "deny"
	// RequireApproval pauses the call until an operator decides.
	RequireApproval Verdict = "require_approval"
)

// Valid reports whether v is one of the three verdicts.
func (v Verdict) Valid() bool {
	switch v {
	case Allow, Deny, RequireApproval:
		return true
	}
	return false
}

// Decision is a Guard's answer about one call.
type Decision struct {
	// Verdict is allow, deny or require_approval.
	Verdict Verdict
	// Reason is a sentence a person (or a model) can read: why the call
	// was denied or needs approval. It never carries argument values.
	Reason string
	// Code is the refusal code of a denial (refusal.Denied,
	// refusal.CallLimit, refusal.Quarantined, ...). Empty means
	// refusal.Denied for a denial.
	Code refusal.Code
}

// Allowed returns an allow Decision.
func Allowed() Decision { return Decision{Verdict: Allow} }

// Denied returns a deny Decision with code (refusal.Denied when empty) and
// reason.
func Denied(code refusal.Code, reason string) Decision {
	if code == "" {
		code = refusal.Denied
	}
	return Decision{Verdict: Deny, Code: code, Reason: reason}
}

// NeedsApproval returns a require_approval Decision with reason.
func NeedsApproval(reason string) Decision {
	return Decision{Verdict: RequireApproval, Reason: reason}
}

// Call is what a Guard sees of one tool call.
type Call struct {
	// RunID and ToolCallID name the call in the journal (the idempotency
	// key is RunID + ":" + ToolCallID). Either may be empty for a call made
	// outside a durable run.
	RunID      string
	ToolCallID string
	// Server is the MCP server (or "" for a Go tool).
	Server string
	// Tool is the projected (qualified) name the model calls, e.g.
	// "bank__transfer". Name-based rules in this package match it.
	Tool string
	// RemoteName is the tool's name on its server ("transfer"); empty for
	// a Go tool, in which case Tool is used where a remote name is needed.
	RemoteName string
	// Args are the call's arguments as sent by the model. Guards must not
	// modify them.
	Args json.RawMessage
	// Subject is who the work belongs to (the authenticated caller or the
	// run's owner); may be empty.
	Subject string
}

// remote returns the name of the tool on its server.
func (c Call) remote() string {
	if c.RemoteName != "" {
		return c.RemoteName
	}
	return c.Tool
}

// Guard decides whether a call may run. Check must not run the call; it
// may read or write counters. A non-nil error means no decision could be
// made: callers must fail closed (treat it as a denial).
type Guard interface {
	Check(ctx context.Context, c Call) (Decision, error)
}

// GuardFunc adapts a function to a Guard.
type GuardFunc func(ctx context.Context, c Call) (Decision, error)

// Check calls f(ctx, c).
func (f GuardFunc) Check(ctx context.Context, c Call) (Decision, error) { return f(ctx, c) }

// Pure is implemented by a Guard whose Check changes nothing: it counts
// no call and records nothing, only looks (at the call, at its own
// configuration, at state it reads). Asking it about a call that is then
// answered otherwise, for example replayed from a journal, has no effect,
// so a journal may ask it before looking the call up
// (durable.Journal.Guarded does, and saves a read per call). Pure must
// answer the same for the guard's whole life. A Guard that does not
// implement Pure is treated as one that counts or records.
type Pure interface {
	Guard
	// Pure reports whether Check changes nothing.
	Pure() bool
}

// IsPure reports whether g changes nothing when asked: a nil guard (which
// allows everything), or one implementing Pure that says so.
func IsPure(g Guard) bool {
	if g == nil {
		return true
	}
	p, ok := g.(Pure)
	return ok && p.Pure()
}

// PureFunc adapts a function that changes nothing (see Pure) to a Pure
// Guard.
type PureFunc func(ctx context.Context, c Call) (Decision, error)

// Check calls f(ctx, c).
func (f PureFunc) Check(ctx context.Context, c Call) (Decision, error) { return f(ctx, c) }

// Pure reports true.
func (PureFunc) Pure() bool { return true }

// ErrInvalidDecision is returned (wrapped) by Evaluate and Compose when a
// guard answers a verdict that is not allow, deny or require_approval.
var ErrInvalidDecision = errors.New("policy: invalid decision")

// failClosed is the decision that goes with an error.
func failClosed(err error) Decision {
	return Denied(refusal.Denied, "the policy could not decide: "+err.Error())
}

// Evaluate asks g about c and normalises the answer, failing closed:
//   - a nil g allows everything (no policy configured);
//   - an error from g is returned with a deny Decision (code "denied");
//   - an invalid verdict (including the zero Decision) is a deny Decision
//     with an error wrapping ErrInvalidDecision;
//   - a deny without a code gets refusal.Denied.
//
// Callers that enforce a Guard (the journal, the server) should call
// Evaluate rather than g.Check, and must not run the call unless the
// returned error is nil and the verdict is Allow.
func Evaluate(ctx context.Context, g Guard, c Call) (Decision, error) {
	if g == nil {
		return Allowed(), nil
	}
	if err := ctx.Err(); err != nil {
		return failClosed(err), err
	}
	d, err := g.Check(ctx, c)
	if err != nil {
		return failClosed(err), err
	}
	if !d.Verdict.Valid() {
		err := fmt.Errorf("%w: verdict %q for tool %q", ErrInvalidDecision, d.Verdict, c.Tool)
		return failClosed(err), err
	}
	if d.Verdict == Deny && d.Code == "" {
		d.Code = refusal.Denied
	}
	return d, nil
}

// Compose returns a Guard that asks guards in order. The first deny or
// require_approval wins and later guards are not asked (so a counting
// guard placed after a denying one does not count the call). When every
// guard allows, the call is allowed. An error (or an invalid verdict) from
// any guard stops the chain and is returned with a deny Decision: it fails
// closed. Nil guards are skipped; Compose() with no guards allows
// everything. The composed guard is Pure when every guard in it is.
func Compose(guards ...Guard) Guard {
	gs := slices.DeleteFunc(slices.Clone(guards), func(g Guard) bool { return g == nil })
	return composed{gs: gs, pure: !slices.ContainsFunc(gs, func(g Guard) bool { return !IsPure(g) })}
}

// composed is Compose's guard.
type composed struct {
	gs   []Guard
	pure bool
}

func (c composed) Check(ctx context.Context, call Call) (Decision, error) {
	for _, g := range c.gs {
		d, err := Evaluate(ctx, g, call)
		if err != nil {
			return d, err
		}
		if d.Verdict != Allow {
			return d, nil
		}
	}
	return Allowed(), nil
}

func (c composed) Pure() bool { return c.pure }

// AllowAll returns a Guard that allows every call. (It is not named Allow
// because Allow is the verdict constant.)
func AllowAll() Guard {
	return PureFunc(func(context.Context, Call) (Decision, error) { return Allowed(), nil })
}

// ReadOnly returns a Guard that allows only the named tools and denies
// every other call with a reason naming the tool. Names are matched
// exactly (case-sensitive) against Call.Tool, the projected name: a
// server's remote name alone never matches, so another server publishing a
// tool of the same remote name is not let through. ReadOnly() with no names
// denies everything.
func ReadOnly(names ...string) Guard {
	set := make(map[string]struct{}, len(names))
	for _, n := range names {
		set[n] = struct{}{}
	}
	return PureFunc(func(_ context.Context, c Call) (Decision, error) {
		if _, ok := set[c.Tool]; ok {
			return Allowed(), nil
		}
		return Denied(refusal.Denied, fmt.Sprintf("tool %q is not allowed by the read-only policy", c.Tool)), nil
	})
}
