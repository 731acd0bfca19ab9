// Package auditlog is the gateway's recorder of the audit trail
// (docs/audit.md): this instance's chain gw/<instance>, its writer
// (package audit) signing checkpoints with the configured key, and the
// entries the gateway appends: calls and refusals (the call pipeline's
// finish), upstreams lost and back, new drift. Retention (audit.retain)
// runs from the gateway's sweeping loop. A keyed call's entry is not
// queued: Entry prepares it for the journal to commit with the call's
// completion (durable.Audit), and Committed notes it once written.
//
//	r, err := auditlog.Open(ctx, cfg, st, instance, &auditlog.Options{Stop: life, Logger: log})
//	r.Call(auditlog.Call{Kind: audit.KindCall, Subject: "alice", Tool: "pay", Args: args, Outcome: "ok", Duration: d})
//	err = r.Close() // flushes and checkpoints
//
// A nil *Recorder (audit.enabled: false) records nothing.
package auditlog

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/config"
	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/internal/jsonscan"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// ChainPrefix names a gateway instance's chain: "gw/" + instance.
const ChainPrefix = "gw/"

// Options configure Open. A nil *Options means defaults.
type Options struct {
	// Stop ends an Append waiting for room in the queue (the gateway's
	// life, which ends when shutdown stops waiting for calls). Nil means
	// never.
	Stop context.Context
	// Logger receives the losses and the store's failures; nil discards.
	Logger *slog.Logger
	// Now is the clock of entries and checkpoints; nil means time.Now.
	Now func() time.Time
}

// Recorder appends the gateway's entries to its instance's chain.
type Recorder struct {
	w    *audit.Writer
	stop context.Context
	log  *slog.Logger

	mu   sync.Mutex
	down map[string]bool // servers last seen lost
}

// Linger is how long the gateway's writer gathers entries after the first
// of a batch before it commits them (audit.WriterOptions.Linger), and
// Batch the most entries it commits at once: at a few hundred calls a
// second, several hundred entries a transaction, so that what a commit
// costs whatever it holds (BEGIN, the WAL frames of the pages it touches,
// the commit) is shared by many calls (the writer's share of a plain
// gateway's CPU profile: 1.84% with 200 ms and 256, 1.02% with these;
// issue 36 item 2, docs/BENCHMARKS.md). Above about 1,000 calls a second
// the batches fill before the second ends. A crash may lose the entries
// of the last Linger (docs/audit.md).
const (
	Linger = time.Second
	Batch  = 1024
)

// Open starts the writer of instance's chain, signing its checkpoints
// with the key of audit.signingKeyFile or audit.signingKeyEnv (a mistake
// there is a *config.Error naming the field).
func Open(ctx context.Context, cfg *config.Config, st store.AuditStore, instance string, o *Options) (*Recorder, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Stop == nil {
		opts.Stop = context.Background()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	key, err := Key(cfg)
	if err != nil {
		return nil, err
	}
	w, err := audit.NewWriter(ctx, st, &audit.WriterOptions{
		Chain: ChainPrefix + instance, Instance: instance, Key: key,
		CheckpointInterval: cfg.Audit.Checkpoint, Logger: opts.Logger, Now: opts.Now, Linger: Linger, Batch: Batch,
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: audit: %w", err)
	}
	return &Recorder{w: w, stop: opts.Stop, log: opts.Logger, down: map[string]bool{}}, nil
}

// Key reads audit.signingKeyFile or $audit.signingKeyEnv (nil when
// neither is configured).
func Key(cfg *config.Config) (ed25519.PrivateKey, error) {
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

// Chain returns the chain the recorder appends to.
func (r *Recorder) Chain() string { return r.w.Chain() }

// Flush waits until every entry recorded so far is committed.
func (r *Recorder) Flush(ctx context.Context) error { return r.w.Flush(ctx) }

// append queues e, waiting while the queue is full (back-pressure) until
// Stop ends.
func (r *Recorder) append(e store.AuditEntry) {
	if err := r.w.Append(r.stop, e); err != nil {
		r.log.Error("gateway: the audit trail lost an entry (the gateway is stopping)", "kind", e.Kind, "err", err)
	}
}

// Call is one tools/call as the gateway answered it.
type Call struct {
	// Kind is audit.KindCall, KindRefusal or KindApprovalRequested.
	Kind                  string
	Subject, Server, Tool string
	// Args are the call's arguments (only their digest is recorded).
	Args     json.RawMessage
	Outcome  string
	Duration time.Duration
	// Replayed marks an answer from the journal; ApprovalID names the
	// approval a refusal asked for.
	Replayed   bool
	ApprovalID string
	// NotRecorded marks a keyed call that ran but whose journal
	// completion (and the entry committed with it) could not be written:
	// the entry is then recorded through the queue, marked.
	NotRecorded bool
	// Key, RunID and ToolCallID are, for the entry committed with a
	// keyed call's journal completion, the idempotency key as the caller
	// sent it and the journal record it names: the detail holds them
	// (key, runId, toolCallId), so that an operator sees what the caller
	// did beside the record's hashed IDs (the console's runs page).
	Key, RunID, ToolCallID string
}

// Call records c through the queue.
func (r *Recorder) Call(c Call) {
	if r == nil {
		return
	}
	// The arguments' digest is the writer's to compute, with its batch.
	e := entryOf(c)
	if err := r.w.AppendDigesting(r.stop, e, c.Args); err != nil {
		r.log.Error("gateway: the audit trail lost an entry (the gateway is stopping)", "kind", e.Kind, "err", err)
	}
}

// Entry returns the entry of c ready to be written by another write of
// this chain (its chain, instance and time set): a keyed call's, committed
// with its journal completion (store.AuditJournalStore.CompleteAudited,
// linked by audit.Link). Tell Committed the entry as written.
func (r *Recorder) Entry(c Call) store.AuditEntry {
	return r.w.Entry(callEntry(c))
}

// Committed notes an entry of this chain committed by another write, so
// that the chain's checkpoints cover it.
func (r *Recorder) Committed(e store.AuditEntry) {
	if r == nil {
		return
	}
	r.w.Note(e)
}

// callEntry is the entry of c. A plain call's (no flag, approval or key)
// has no detail and builds none.
func callEntry(c Call) store.AuditEntry {
	e := entryOf(c)
	e.ArgsDigest = audit.ArgsDigest(c.Args)
	return e
}

// entryOf is callEntry without the arguments' digest.
func entryOf(c Call) store.AuditEntry {
	e := store.AuditEntry{Kind: c.Kind, Subject: c.Subject, Server: c.Server, Tool: c.Tool,
		Outcome: c.Outcome, Duration: c.Duration}
	if !c.NotRecorded && !c.Replayed && c.ApprovalID == "" && c.Key == "" {
		return e
	}
	e.Detail = detailOf(c)
	return e
}

// Upstream records a server lost, or back after being lost.
func (r *Recorder) Upstream(srv string, lost bool) {
	if r == nil {
		return
	}
	r.mu.Lock()
	was := r.down[srv]
	r.down[srv] = lost
	r.mu.Unlock()
	if was == lost {
		return
	}
	outcome := "up"
	if lost {
		outcome = "lost"
	}
	r.append(store.AuditEntry{Kind: audit.KindConnection, Server: srv, Outcome: outcome})
}

// ConnectFlow records the end of a subject's connect flow
// (audit.KindConnectFlow): outcome "connected" with the upstream account,
// or "another_identity"; proof is how the browser proved its subject.
func (r *Recorder) ConnectFlow(subject, server, outcome, account, proof string) {
	if r == nil {
		return
	}
	detail := map[string]any{"proof": proof}
	if outcome == "connected" {
		detail["account"] = account
	}
	r.append(store.AuditEntry{Kind: audit.KindConnectFlow, Subject: subject, Server: server, Outcome: outcome, Detail: audit.Detail(detail)})
}

// Drift records a new drift event.
func (r *Recorder) Drift(ev toolset.DriftEvent) {
	if r == nil {
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
	r.append(store.AuditEntry{Kind: audit.KindDrift, Server: ev.Server, Tool: d.Tool, Outcome: string(d.Action), Detail: audit.Detail(detail)})
}

// Close flushes the queue and checkpoints the chain.
func (r *Recorder) Close() error {
	if r == nil {
		return nil
	}
	return r.w.Close()
}

// Sweep applies retention: every chain cut behind its latest checkpoint
// older than retain (0: nothing).
func Sweep(ctx context.Context, st store.AuditStore, retain time.Duration, now time.Time, log *slog.Logger) {
	if retain <= 0 {
		return
	}
	if n, err := audit.Retain(ctx, st, now.Add(-retain)); err != nil {
		if ctx.Err() == nil {
			log.Error("gateway: audit retention failed", "err", err)
		}
	} else if n > 0 {
		log.Debug("gateway: audit retention deleted entries", "count", n)
	}
}

// detailOf is the detail of a call with a flag, an approval or a key: a
// JSON object, byte for byte what encoding/json writes for the map of its
// members (keys sorted), written without one: notRecorded alone, or
// replayed and approvalId as they apply; then key, runId and toolCallId
// for a keyed call.
func detailOf(c Call) []byte {
	replayed := !c.NotRecorded && c.Replayed
	approval := !c.NotRecorded && c.ApprovalID != ""
	b := make([]byte, 0, 64+len(c.ApprovalID)+len(c.Key)+len(c.RunID)+len(c.ToolCallID))
	b = append(b, '{')
	member := func(name string) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
	}
	if approval {
		member("approvalId")
		b = jsonscan.AppendString(b, c.ApprovalID)
	}
	if c.Key != "" {
		member("key")
		b = jsonscan.AppendString(b, c.Key)
	}
	if c.NotRecorded {
		member("notRecorded")
		b = append(b, "true"...)
	}
	if replayed {
		member("replayed")
		b = append(b, "true"...)
	}
	if c.Key != "" {
		member("runId")
		b = jsonscan.AppendString(b, c.RunID)
		member("toolCallId")
		b = jsonscan.AppendString(b, c.ToolCallID)
	}
	return append(b, '}')
}
