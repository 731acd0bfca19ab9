package policy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
)

// Counters are atomic counters shared by every process using one store.
// store.CounterStore satisfies it.
type Counters interface {
	// IncrBy adds delta to the counter and returns the new value
	// atomically; the counter expires at expiresAt (zero: never), and an
	// expired counter restarts from zero.
	IncrBy(ctx context.Context, key string, delta int64, expiresAt time.Time) (int64, error)
	// GetCounter returns the counter's value, or 0 when it is absent or
	// expired at now.
	GetCounter(ctx context.Context, key string, now time.Time) (int64, error)
}

// Contracts looks up a tool's pinned (trusted) and current contract
// fingerprints. pinned == "" means the tool is not pinned; current == ""
// means its current contract is unknown. tool is the tool's name on its
// server (Call.RemoteName, or Call.Tool when that is empty).
type Contracts interface {
	Pinned(ctx context.Context, server, tool string) (pinned, current string, err error)
}

// ReasonContractChanged is the reason of the firewall's require_approval
// for a tool whose contract differs from its pinned one.
const ReasonContractChanged = "tool description changed — poisoning risk"

// ReasonNotPinned is the reason of the firewall's require_approval for a
// tool whose contract was never pinned (see FirewallOptions.Unpinned).
const ReasonNotPinned = "tool contract not pinned — approve to trust it"

// defaultCounterTTL is how long the firewall's counters live when
// FirewallOptions.CounterTTL is zero: the journal's default record TTL.
const defaultCounterTTL = 24 * time.Hour

// FirewallOptions configure NewFirewall.
type FirewallOptions struct {
	// Allow, when non-empty, is the only tools that may be called
	// (projected names, exact match); every other tool is denied.
	Allow []string
	// Deny lists tools that are always denied; it wins over Allow.
	Deny []string
	// MaxCallsPerRun caps the distinct calls of one tool in one run; a
	// call past the cap is denied with code "call_limit". 0 means no cap.
	// It requires Counters.
	MaxCallsPerRun int
	// Counters hold the per-run counts (store.CounterStore satisfies it).
	// Share one store between processes to share the cap.
	Counters Counters
	// Contracts enables contract pinning. Nil disables it.
	Contracts Contracts
	// Unpinned is the verdict for a call to an MCP tool (Call.Server set)
	// that Contracts reports as not pinned: RequireApproval (the default,
	// when empty), Allow or Deny. Go tools (Call.Server empty) are never
	// checked against Contracts.
	Unpinned Verdict
	// CounterTTL is how long counters live after their last increment.
	// Zero means 24 hours.
	CounterTTL time.Duration
	// Scope separates the counters of independent deployments sharing one
	// store (it should match the journal's scope). May be empty.
	Scope string
	// Clock returns the current time; nil means time.Now.
	Clock func() time.Time
}

// ErrInvalidOptions is returned (wrapped) by NewFirewall for bad options.
var ErrInvalidOptions = errors.New("policy: invalid firewall options")

// firewall is the MCP firewall Guard built by NewFirewall.
type firewall struct {
	allow     map[string]struct{}
	deny      map[string]struct{}
	max       int64
	counters  Counters
	contracts Contracts
	unpinned  Verdict
	ttl       time.Duration
	scope     string
	now       func() time.Time
}

var _ Pure = (*firewall)(nil)

// NewFirewall returns the MCP firewall as a Guard (one that is Pure when it counts nothing). See the
// package documentation for the order of its checks and how it counts.
func NewFirewall(opts FirewallOptions) (Guard, error) {
	if opts.MaxCallsPerRun < 0 {
		return nil, fmt.Errorf("%w: MaxCallsPerRun %d is negative", ErrInvalidOptions, opts.MaxCallsPerRun)
	}
	if opts.MaxCallsPerRun > 0 && opts.Counters == nil {
		return nil, fmt.Errorf("%w: MaxCallsPerRun needs Counters", ErrInvalidOptions)
	}
	if opts.CounterTTL < 0 {
		return nil, fmt.Errorf("%w: CounterTTL %v is negative", ErrInvalidOptions, opts.CounterTTL)
	}
	f := &firewall{
		allow:     toSet(opts.Allow),
		deny:      toSet(opts.Deny),
		max:       int64(opts.MaxCallsPerRun),
		counters:  opts.Counters,
		contracts: opts.Contracts,
		unpinned:  opts.Unpinned,
		ttl:       opts.CounterTTL,
		scope:     opts.Scope,
		now:       opts.Clock,
	}
	if f.unpinned == "" {
		f.unpinned = RequireApproval
	}
	if !f.unpinned.Valid() {
		return nil, fmt.Errorf("%w: Unpinned verdict %q", ErrInvalidOptions, opts.Unpinned)
	}
	if f.ttl == 0 {
		f.ttl = defaultCounterTTL
	}
	if f.now == nil {
		f.now = time.Now
	}
	return f, nil
}

func toSet(names []string) map[string]struct{} {
	s := make(map[string]struct{}, len(names))
	for _, n := range names {
		s[n] = struct{}{}
	}
	return s
}

// Check applies the firewall to c.
func (f *firewall) Check(ctx context.Context, c Call) (Decision, error) {
	if _, ok := f.deny[c.Tool]; ok {
		return Denied(refusal.Denied, fmt.Sprintf("tool %q is blocked by the firewall's deny list", c.Tool)), nil
	}
	if len(f.allow) > 0 {
		if _, ok := f.allow[c.Tool]; !ok {
			return Denied(refusal.Denied, fmt.Sprintf("tool %q is not on the firewall's allow list", c.Tool)), nil
		}
	}
	if f.max > 0 && c.RunID != "" {
		n, err := f.count(ctx, c)
		if err != nil {
			return failClosed(err), err
		}
		if n > f.max {
			return Denied(refusal.CallLimit, fmt.Sprintf("tool %q may be called at most %d times per run", c.Tool, f.max)), nil
		}
	}
	if f.contracts != nil && c.Server != "" {
		pinned, current, err := f.contracts.Pinned(ctx, c.Server, c.remote())
		if err != nil {
			err = fmt.Errorf("policy: contract of %q on server %q: %w", c.remote(), c.Server, err)
			return failClosed(err), err
		}
		switch {
		case pinned == "":
			switch f.unpinned {
			case Allow:
			case Deny:
				return Denied(refusal.Denied, fmt.Sprintf("tool %q has no pinned contract", c.Tool)), nil
			default:
				return NeedsApproval(ReasonNotPinned), nil
			}
		case pinned != current:
			return NeedsApproval(ReasonContractChanged), nil
		}
	}
	return Allowed(), nil
}

// Pure reports whether Check changes nothing: true unless the firewall
// counts calls (MaxCallsPerRun > 0). Contracts, when set, must only look
// contracts up.
func (f *firewall) Pure() bool { return f.max == 0 }

// count returns the call's ordinal among the distinct calls of its tool in
// its run, counting it if it was not counted before.
func (f *firewall) count(ctx context.Context, c Call) (int64, error) {
	now := f.now()
	exp := now.Add(f.ttl)
	total := store.Key("fw", f.scope, c.RunID, c.Tool)
	if c.ToolCallID == "" {
		// No call identity: every check is a distinct call.
		n, err := f.counters.IncrBy(ctx, total, 1, exp)
		if err != nil {
			return 0, fmt.Errorf("policy: count calls of %q: %w", c.Tool, err)
		}
		return n, nil
	}
	ord := store.Key("fw", f.scope, c.RunID, c.Tool, c.ToolCallID)
	o, err := f.counters.GetCounter(ctx, ord, now)
	if err != nil {
		return 0, fmt.Errorf("policy: read call ordinal of %q: %w", c.Tool, err)
	}
	if o > 0 {
		return o, nil
	}
	n, err := f.counters.IncrBy(ctx, total, 1, exp)
	if err != nil {
		return 0, fmt.Errorf("policy: count calls of %q: %w", c.Tool, err)
	}
	// Normally o == n. After a race with another check of the same call it
	// is larger (the sum of both ordinals): that errs toward denial.
	o, err = f.counters.IncrBy(ctx, ord, n, exp)
	if err != nil {
		return 0, fmt.Errorf("policy: record call ordinal of %q: %w", c.Tool, err)
	}
	return o, nil
}

// ContractsFunc adapts a function to Contracts.
type ContractsFunc func(ctx context.Context, server, tool string) (pinned, current string, err error)

// Pinned calls f(ctx, server, tool).
func (f ContractsFunc) Pinned(ctx context.Context, server, tool string) (string, string, error) {
	return f(ctx, server, tool)
}
