package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/auditlog"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/telemetry"
	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/toolset"
	"github.com/gatehouse-dev/gatehouse/trust"
)

// refreshTimeout bounds one refresh made because the toolset changed.
const refreshTimeout = 10 * time.Second

// trustEvery is how often the gateway polls the store for a re-trust made
// by another process (`gatehouse trust`, another replica).
const trustEvery = time.Second

// trustWatcher keeps the served map in step with the toolset's trust
// decisions: a re-listing that quarantined, withheld or dropped tools, or
// a re-trust noticed in the store (the one trust.Ledger.Watch it runs),
// refreshes the served map, and each new drift event is counted once.
type trustWatcher struct {
	ts      *toolset.Toolset
	served  *servedMap
	metrics *telemetry.Metrics
	log     *slog.Logger
	life    context.Context    // ends with the gateway
	audit   *auditlog.Recorder // records each new drift (nil: off)

	mu   sync.Mutex
	seen map[driftKey]struct{} // drift events already counted
	bg   sync.WaitGroup
}

// driftKey identifies a drift event for counting: the same decision about
// the same item is counted once for as long as it persists.
type driftKey struct {
	server      string
	kind        toolset.DriftKind
	name        string
	action      pin.Action
	conflict    bool
	renamedFrom string
}

// start runs the process's one watch of the trust state (trust.Ledger.Watch)
// until the gateway's life ends: each tick's heads go to the toolset
// (toolset.Toolset.ApplyTrust) and to also (the skills' watcher).
func (w *trustWatcher) start(led *trust.Ledger, also ...func(context.Context, map[string]store.DriftHead) error) {
	fns := append([]func(context.Context, map[string]store.DriftHead) error{w.ts.ApplyTrust}, also...)
	w.bg.Go(func() { _ = led.Watch(w.life, trustEvery, fns...) })
}

// wait waits for the watcher to end (after the gateway's life ended).
func (w *trustWatcher) wait() { w.bg.Wait() }

// changed is the toolset's OnChange: a reconcile or a reconnect re-listed
// a server (drift may have quarantined, withheld or dropped tools), or a
// re-trust was noticed in the store. The served map follows (callers get
// notifications/tools/list_changed) and new drift is counted.
func (w *trustWatcher) changed() {
	if w.life.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(w.life, refreshTimeout)
	defer cancel()
	if err := w.served.refresh(ctx); err != nil {
		if w.life.Err() == nil && !errors.Is(err, toolset.ErrClosed) {
			w.log.Warn("gateway: refreshing the tool map", "err", err)
		}
		return
	}
	w.countDrift()
}

// countDrift counts the toolset's drift events that were not there at the
// last count, by server and action (quarantined, withheld, removed). A
// drift that persists across re-listings is counted once; one that comes
// back after a re-trust is counted again. Changed instructions are not
// counted (they quarantine nothing a caller sees).
func (w *trustWatcher) countDrift() {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := map[driftKey]struct{}{}
	for _, ev := range w.ts.Drift() {
		if ev.Kind == toolset.DriftInstructions {
			continue
		}
		d := ev.Decision
		k := driftKey{server: ev.Server, kind: ev.Kind, name: d.Tool, action: d.Action, conflict: d.Conflict, renamedFrom: d.RenamedFrom}
		now[k] = struct{}{}
		if _, seen := w.seen[k]; seen {
			continue
		}
		w.audit.Drift(ev)
		switch d.Action {
		case pin.Quarantined:
			w.metrics.DriftEvent(ev.Server, telemetry.DriftQuarantined)
		case pin.Withheld:
			w.metrics.DriftEvent(ev.Server, telemetry.DriftWithheld)
		case pin.Removed:
			w.metrics.DriftEvent(ev.Server, telemetry.DriftRemoved)
		}
	}
	w.seen = now
}

// driftDecision turns the firewall's "contract changed" approval into the
// gateway's answer: the tool is quarantined (or, when its server no longer
// publishes it, withdrawn) until an operator re-trusts the server. An
// approval could not help: the toolset refuses a quarantined tool's calls
// whatever a guard says. It only decides in the moment between a
// re-listing and the served map's refresh; afterwards the pipeline
// refuses first.
func (w *trustWatcher) driftDecision(ctx context.Context, c policy.Call) policy.Decision {
	remote := c.RemoteName
	if remote == "" {
		remote = c.Tool
	}
	if _, current, err := w.ts.Pinned(ctx, c.Server, remote); err == nil && current == "" {
		return policy.Denied(refusal.ToolWithdrawn, fmt.Sprintf("tool %s is no longer published by its server", c.Tool))
	}
	return policy.Denied(refusal.Quarantined,
		fmt.Sprintf("tool %s changed since it was trusted and is quarantined until an operator re-trusts its server", c.Tool))
}
