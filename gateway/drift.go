package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/internal/metrics"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// refreshTimeout bounds one Refresh made because the toolset changed.
const refreshTimeout = 10 * time.Second

// toolsetChanged is the toolset's OnChange: a reconcile or a reconnect
// re-listed a server (drift may have quarantined, withheld or dropped
// tools), or a re-trust was noticed in the store. The served map follows
// (callers get notifications/tools/list_changed) and new drift is counted.
func (g *Gateway) toolsetChanged() {
	if g.closed.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(g.stopCtx, refreshTimeout)
	defer cancel()
	if err := g.Refresh(ctx); err != nil {
		if !g.closed.Load() && !errors.Is(err, toolset.ErrClosed) {
			g.log.Warn("gateway: refreshing the tool map", "err", err)
		}
		return
	}
	g.countDrift()
}

// countDrift counts the toolset's tool-drift diagnostics that were not
// there at the last count, by server and kind. A drift that persists
// across re-listings is counted once; one that comes back after a
// re-trust is counted again.
func (g *Gateway) countDrift() {
	g.driftMu.Lock()
	defer g.driftMu.Unlock()
	now := map[string]struct{}{}
	for _, d := range g.ts.Diagnostics() {
		if d.Rule != diag.ToolDrift {
			continue
		}
		k := d.Origin + "\x00" + d.Message
		now[k] = struct{}{}
		if _, seen := g.driftSeen[k]; seen {
			continue
		}
		if kind := driftKind(d.Message); kind != "" {
			g.metrics.DriftEvent(d.Origin, kind)
		}
	}
	g.driftSeen = now
}

// driftKind classifies a toolset tool-drift diagnostic by its wording:
// quarantined, withheld or removed ("" for an instructions change). The
// phrases contain spaces, which no name in a diagnostic can (names pass
// through pin.SanitizeName), so a server cannot forge a kind.
func driftKind(msg string) string {
	switch {
	case strings.Contains(msg, " it is quarantined"):
		return metrics.DriftQuarantined
	case strings.Contains(msg, " is withheld"):
		return metrics.DriftWithheld
	case strings.Contains(msg, " it is dropped"):
		return metrics.DriftRemoved
	}
	return ""
}

// driftDecision turns the firewall's "contract changed" approval into the
// gateway's answer: the tool is quarantined (or, when its server no longer
// publishes it, withdrawn) until an operator re-trusts the server. An
// approval could not help: the toolset refuses a quarantined tool's calls
// whatever a guard says. It only decides in the moment between a
// re-listing and the served map's refresh; afterwards the tool handler
// refuses first.
func (g *Gateway) driftDecision(ctx context.Context, c policy.Call) policy.Decision {
	remote := c.RemoteName
	if remote == "" {
		remote = c.Tool
	}
	if _, current, err := g.ts.Pinned(ctx, c.Server, remote); err == nil && current == "" {
		return policy.Denied(refusal.ToolWithdrawn, fmt.Sprintf("tool %s is no longer published by its server", c.Tool))
	}
	return policy.Denied(refusal.Quarantined,
		fmt.Sprintf("tool %s changed since it was trusted and is quarantined until an operator re-trusts its server", c.Tool))
}

// toolsetRefusal maps the toolset's quarantined and tool_withdrawn errors
// (the tool changed or went away between the gateway's check and the
// call; nothing was sent) to the refusal of CONTRACTS.md §4, with the
// toolset's own sentence.
func toolsetRefusal(err error) (*refusal.Error, bool) {
	var te *toolset.Error
	if err == nil || !errors.As(err, &te) {
		return nil, false
	}
	switch te.Code {
	case toolset.CodeQuarantined, toolset.CodeToolWithdrawn:
		return &refusal.Error{Code: refusal.Code(te.Code), Message: te.Reason()}, true
	}
	return nil, false
}
