package gateway

import (
	"context"

	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/store"
)

// buildGuard composes the firewall (call caps per run, contract pinning
// against the toolset's baselines) and the operator's requireApproval
// list. The firewall counts per run (firewallRun).
func buildGuard(cfg *Config, counters store.CounterStore, served *servedMap, trust *trustWatcher) (policy.Guard, error) {
	var guards []policy.Guard
	fw, err := policy.NewFirewall(policy.FirewallOptions{
		MaxCallsPerRun: cfg.Firewall.MaxCallsPerRun,
		Counters:       counters,
		Scope:          journalScope,
		CounterTTL:     cfg.Journal.TTL,
		Contracts:      trust.ts,
		// The toolset pins every tool it serves on first sight, so a
		// served tool without a pin means the map and the baseline
		// disagree: refuse rather than ask for an approval that could
		// only trust an unknown contract call by call.
		Unpinned: policy.Deny,
	})
	if err != nil {
		return nil, err
	}
	check := func(ctx context.Context, c policy.Call) (policy.Decision, error) {
		c.RunID, _ = ctx.Value(runKey{}).(string)
		if t, ok := served.tool(c.Tool); ok && t.ServerID != "" {
			// The row ID names the server even when two share a name.
			c.Server = t.ServerID
		}
		d, err := fw.Check(ctx, c)
		if err == nil && d.Verdict == policy.RequireApproval && d.Reason == policy.ReasonContractChanged {
			d = trust.driftDecision(ctx, c)
		}
		return d, err
	}
	// Without a call cap the firewall only looks (the served map, the
	// toolset's pins): a Pure guard, which the journal asks before it
	// reads a keyed call's record (one statement less per call).
	if policy.IsPure(fw) {
		guards = append(guards, policy.PureFunc(check))
	} else {
		guards = append(guards, policy.GuardFunc(check))
	}
	if approval := set(cfg.Tools.RequireApproval); len(approval) > 0 {
		guards = append(guards, policy.PureFunc(func(_ context.Context, c policy.Call) (policy.Decision, error) {
			if approval[c.Tool] {
				return policy.NeedsApproval("the operator's config lists " + c.Tool + " in tools.requireApproval"), nil
			}
			return policy.Allowed(), nil
		}))
	}
	return policy.Compose(guards...), nil
}
