package gateway

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/audit"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/config"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// auditChainPrefix names a gateway instance's chain: "gw/" + instance.
const auditChainPrefix = "gw/"

// auditor appends what the gateway does to its instance's chain of the
// audit trail (docs/audit.md): every call and refusal (the pipeline's
// finish), every approval asked for (a refusal approval_required), every
// new drift (the trust watcher's count), every upstream lost or back
// (observeUpstream). A nil *auditor (audit.enabled: false) records
// nothing.
type auditor struct {
	w      *audit.Writer
	served *servedMap
	log    *slog.Logger
	// stop ends an Append waiting for room in the queue: the gateway's
	// life, which ends when shutdown stops waiting for calls.
	stop context.Context

	mu   sync.Mutex
	down map[string]bool // servers last seen lost
}

// newAuditor starts the writer of this instance's chain, signing its
// checkpoints with the configured key.
func newAuditor(ctx context.Context, cfg *Config, st store.AuditStore, instance string, stop context.Context, log *slog.Logger, now func() time.Time) (*auditor, error) {
	key, err := auditKey(cfg)
	if err != nil {
		return nil, err
	}
	w, err := audit.NewWriter(ctx, st, &audit.WriterOptions{
		Chain: auditChainPrefix + instance, Instance: instance, Key: key,
		CheckpointInterval: cfg.Audit.Checkpoint, Logger: log, Now: now,
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: audit: %w", err)
	}
	return &auditor{w: w, log: log, stop: stop, down: map[string]bool{}}, nil
}

// auditKey reads audit.signingKeyFile or $audit.signingKeyEnv (nil when
// neither is configured).
func auditKey(cfg *Config) (ed25519.PrivateKey, error) {
	a := cfg.Audit
	var text []byte
	field := ""
	switch {
	case a.SigningKeyFile != "":
		field = "audit.signingKeyFile"
		b, err := os.ReadFile(a.SigningKeyFile)
		if err != nil {
			return nil, config.Errorf(cfg, field, "make one with `gatehouse audit keygen --out FILE`", "reading the key: %v", err)
		}
		text = b
	case a.SigningKeyEnv != "":
		field = "audit.signingKeyEnv"
		text = []byte(os.Getenv(a.SigningKeyEnv))
		if len(text) == 0 {
			return nil, config.Errorf(cfg, field, "set the variable to the key's PEM text or the base64 of its seed",
				"$%s is unset or empty", a.SigningKeyEnv)
		}
	default:
		return nil, nil
	}
	k, err := audit.ParsePrivateKey(text)
	if err != nil {
		return nil, config.Errorf(cfg, field, "give an Ed25519 private key: PEM (PKCS #8) or the base64 of its 32-byte seed", "%v", err)
	}
	return k, nil
}

// append queues e, waiting while the queue is full (back-pressure) until
// the gateway stops waiting for calls.
func (a *auditor) append(e store.AuditEntry) {
	if err := a.w.Append(a.stop, e); err != nil {
		a.log.Error("gateway: the audit trail lost an entry (the gateway is stopping)", "kind", e.Kind, "err", err)
	}
}

// call records one tools/call as the pipeline answered it.
func (a *auditor) call(subject server.Subject, req *callRequest, out *callOutcome, d time.Duration) {
	if a == nil {
		return
	}
	kind := audit.KindCall
	switch out.label {
	case outcomeOK, outcomeToolError, outcomeRPCError, outcomeError, outcomeNoAnswer:
	case string(refusal.ApprovalRequired):
		kind = audit.KindApprovalRequested
	default: // a refusal code, unknown_tool
		kind = audit.KindRefusal
	}
	e := store.AuditEntry{Kind: kind, Subject: string(subject), Tool: req.tool, ArgsDigest: audit.ArgsDigest(req.args), Outcome: out.label, Duration: d}
	if info, ok := a.served.tool(req.tool); ok {
		e.Server = info.Server
	}
	var detail map[string]any
	if out.replayed {
		detail = map[string]any{"replayed": true}
	}
	if out.result != nil {
		if sc, ok := out.result.StructuredContent.(map[string]any); ok {
			if id, ok := sc["approvalId"].(string); ok && id != "" {
				if detail == nil {
					detail = map[string]any{}
				}
				detail["approvalId"] = id
			}
		}
	}
	if detail != nil {
		e.Detail = audit.Detail(detail)
	}
	a.append(e)
}

// upstream records a server lost, or back after being lost.
func (a *auditor) upstream(srv string, lost bool) {
	if a == nil {
		return
	}
	a.mu.Lock()
	was := a.down[srv]
	a.down[srv] = lost
	a.mu.Unlock()
	if was == lost {
		return
	}
	outcome := "up"
	if lost {
		outcome = "lost"
	}
	a.append(store.AuditEntry{Kind: audit.KindConnection, Server: srv, Outcome: outcome})
}

// drift records a new drift event (counted once while it persists).
func (a *auditor) drift(ev toolset.DriftEvent) {
	if a == nil {
		return
	}
	d := ev.Decision
	detail := map[string]any{"kind": string(ev.Kind)}
	if d.RenamedFrom != "" {
		detail["renamedFrom"] = d.RenamedFrom
	}
	if d.Conflict {
		detail["conflict"] = true
	}
	a.append(store.AuditEntry{Kind: audit.KindDrift, Server: ev.Server, Tool: d.Tool, Outcome: string(d.Action), Detail: audit.Detail(detail)})
}

// close flushes the queue and checkpoints the chain.
func (a *auditor) close() error {
	if a == nil {
		return nil
	}
	return a.w.Close()
}

// sweepAudit applies audit.retain: every chain cut behind its latest
// checkpoint older than the retention.
func sweepAudit(ctx context.Context, st store.AuditStore, retain time.Duration, now func() time.Time, log *slog.Logger) {
	if retain <= 0 {
		return
	}
	if n, err := audit.Retain(ctx, st, now().Add(-retain)); err != nil {
		if ctx.Err() == nil {
			log.Error("gateway: audit retention failed", "err", err)
		}
	} else if n > 0 {
		log.Debug("gateway: audit retention deleted entries", "count", n)
	}
}
