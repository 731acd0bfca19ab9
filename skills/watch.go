package skills

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/trust"
)

// WatchOptions configures a Watcher.
type WatchOptions struct {
	// Instance names this process in the fleet's record (Apply's
	// instance).
	Instance string
	// Build returns the catalog of the loaded plugins' skills built afresh
	// from disk (skills.New), so that an edit made since is seen. It is
	// called by Check with rebuild set, and on every Recheck.
	Build func() *Catalog
	// Serve receives the judged catalog (what to serve from now on) each
	// time it differs from the last one served. It is called from Check
	// and Run, never concurrently.
	Serve func(*Catalog)
	// Recheck is how often the catalog is built again and judged (the
	// gateway's drift.recheck); 0: never after the first Check.
	Recheck time.Duration
	// Poll is how often the store's trust state is read (heads, one
	// query): a trust made by another process, or drift another instance
	// recorded, is applied within it. 0 means one second; negative: Run
	// does not poll, the process's one trust.Ledger.Watch calls ApplyTrust.
	Poll time.Duration
	// Logger gets each new drift event (DriftEvent.Message) at Warn, once for
	// as long as it persists, and the errors of judging. nil: discarded.
	Logger *slog.Logger
	// OnEvent, if set, is called with each new event (for metrics).
	OnEvent func(DriftEvent)
}

// A Watcher keeps a process's skills judged: Check judges once (at
// start), Run re-judges on every Recheck with a catalog built afresh and
// whenever the store's trust state of skills moves, and hands each new
// result to Serve. It is what the gateway runs; an agent may run it too.
type Watcher struct {
	st   trust.Store
	opts WatchOptions

	mu     sync.Mutex
	full   *Catalog        // the last catalog built, before trust
	served []string        // what was last served: plugin, name, fingerprint
	heads  string          // heads as read before the last judgement
	seen   map[string]bool // the events of the last judgement, by message
}

// NewWatcher returns a Watcher of st's trust state for the catalogs
// opts.Build makes.
func NewWatcher(st trust.Store, opts WatchOptions) *Watcher {
	if opts.Poll == 0 {
		opts.Poll = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Watcher{st: st, opts: opts, seen: map[string]bool{}}
}

// Check judges a catalog and serves the result: cat when it is not nil
// (a catalog the caller just built), else a new one from Build when
// rebuild is set, else the last one built. The error is Apply's (the
// plugins it names are withheld in what was served) or heads'.
func (w *Watcher) Check(ctx context.Context, cat *Catalog, rebuild bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case cat != nil:
		w.full = cat
	case rebuild || w.full == nil:
		if w.opts.Build != nil {
			w.full = w.opts.Build()
		}
	}
	heads, herr := heads(ctx, w.st)
	out, events, err := Apply(ctx, w.st, w.full, w.opts.Instance)
	if herr == nil {
		w.heads = heads
	}
	now := make(map[string]bool, len(events))
	for _, ev := range events {
		now[ev.Message] = true
		if w.seen[ev.Message] {
			continue
		}
		w.opts.Logger.Warn("skills: drift", "plugin", ev.Plugin, "skill", ev.Skill, "change", ev.Change, "message", ev.Message)
		if w.opts.OnEvent != nil {
			w.opts.OnEvent(ev)
		}
	}
	w.seen = now
	if sig := signature(out); w.served == nil || !slices.Equal(sig, w.served) {
		w.served = sig
		if w.opts.Serve != nil {
			w.opts.Serve(out)
		}
	}
	if err != nil {
		w.opts.Logger.Warn("skills: judging the skills against their trusted baselines", "err", err)
		return err
	}
	return herr
}

// signature lists what a catalog serves: each skill's plugin, name and
// fingerprint (never nil).
func signature(cat *Catalog) []string {
	out := []string{}
	for _, s := range cat.Skills() {
		c, _ := cat.contract(s.Plugin, s.Name)
		out = append(out, s.Plugin, s.Name, c.fingerprint())
	}
	return out
}

// Run re-judges until ctx ends: every Recheck with a catalog built
// afresh, and whenever the trust state of skills moved since the last
// judgement (polled every Poll, unless Poll is negative: then the process's
// one trust.Ledger.Watch hands it to ApplyTrust). It returns ctx.Err();
// errors are logged and retried at the next tick.
func (w *Watcher) Run(ctx context.Context) error {
	var poll <-chan time.Time
	if w.opts.Poll > 0 {
		t := time.NewTicker(w.opts.Poll)
		defer t.Stop()
		poll = t.C
	}
	var recheck <-chan time.Time
	if w.opts.Recheck > 0 {
		t := time.NewTicker(w.opts.Recheck)
		defer t.Stop()
		recheck = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-recheck:
			_ = w.Check(ctx, nil, true)
		case <-poll:
			h, err := heads(ctx, w.st)
			if err != nil {
				if ctx.Err() == nil {
					w.opts.Logger.Warn("skills: polling the trust state", "err", err)
				}
				continue
			}
			w.judgeIfMoved(ctx, h)
		}
	}
}

// ApplyTrust judges the skills again when the trust state of skills in
// heads (as trust.Ledger.Heads reads them) moved since the last judgement:
// a trust made by another process, drift another instance recorded. It is
// what Run's poll does, for a process that polls the trust state once for
// all its parts (trust.Ledger.Watch).
func (w *Watcher) ApplyTrust(ctx context.Context, heads map[string]store.DriftHead) error {
	w.judgeIfMoved(ctx, digest(heads))
	return nil
}

func (w *Watcher) judgeIfMoved(ctx context.Context, h string) {
	w.mu.Lock()
	moved := h != w.heads
	w.mu.Unlock()
	if moved {
		_ = w.Check(ctx, nil, false)
	}
}
