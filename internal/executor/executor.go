// Package executor makes a process an executor of the effect journal: an
// instance name that stays the same across restarts, an incarnation that
// changes every start, registered in the store, and stopped at shutdown
// (see store.ExecutorStore and durable.JournalOptions.Executors). After a
// crash, the next incarnation's registration marks the dead one stopped,
// so a journal answers for its claims at once instead of after their lease.
//
// A gateway process heartbeats its executor from a goroutine (Start):
//
//	ex, err := executor.Start(ctx, st, &executor.Options{StoreDSN: dsn, Lease: lease, TTL: ttl})
//	defer ex.Stop()
//	j, err := durable.NewJournal(st, &durable.JournalOptions{Executor: ex.ID(), Executors: st})
//
// A library's journal (package durable) has one of its own (OnDemand):
// registered at its first claim, kept alive by its calls, never by a
// goroutine, and stopped by Journal.Close. Gateways and journals take
// their slots from separate sets of lock files (N.lock, journal-N.lock),
// so neither takes the other's instance.
package executor

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// Options configure Start.
type Options struct {
	// Instance names the process; empty means derived (see Start).
	Instance string
	// StoreDSN is the store's DSN, from which the instance is derived.
	StoreDSN string
	// Lease is how long the executor counts as alive after a heartbeat;
	// it heartbeats every Lease/3. Required.
	Lease time.Duration
	// TTL is how long stopped or silent executors are kept before the
	// sweep deletes them. Required.
	TTL time.Duration
	// SweepEvery is how often that sweep runs. Zero means 10 minutes.
	SweepEvery time.Duration
	// Logger receives registration, heartbeat and sweep trouble. Nil
	// discards it.
	Logger *slog.Logger
}

// maxInstanceSlots bounds how many gateways (and how many journals) on
// one host share one store under derived instance names.
const maxInstanceSlots = 64

// executorTimeout bounds the store writes of registration and shutdown.
const executorTimeout = 10 * time.Second

// Executor is this gateway process in the journal: an instance name that
// stays the same across restarts and an incarnation that changes every
// start. Its ID (instance#incarnation) is the executor written into the
// records it claims; it is registered in the store at start, heartbeated
// every lease/3 and stopped at Close, so that after a crash the next
// incarnation's registration marks this one dead at once (see
// store.ExecutorStore and durable.JournalOptions.Executors).
type Executor struct {
	id, instance string
	st           store.ExecutorStore
	lease, ttl   time.Duration
	sweepEvery   time.Duration
	log          *slog.Logger
	release      func() // the instance lock, if any

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// Start claims an instance name, registers a new incarnation of it
// and starts its heartbeat, which ends at stop.
//
// The instance is named (Options.Instance), or derived: for a SQLite or
// PostgreSQL store, the host name, the store and the first free slot among
// lock files (flock, released by the kernel when the process dies) kept
// next to a SQLite file or in the user's cache directory for PostgreSQL.
// A restart on the same host and store so gets the dead process's slot,
// hence its instance; two live gateways never share one. Where no lock can
// be taken (no DSN, a memory store, no flock) the instance is random: a
// restart is then recognised only when the heartbeat lapses.
func Start(ctx context.Context, st store.ExecutorStore, o *Options) (*Executor, error) {
	if o == nil || o.Lease <= 0 || o.TTL <= 0 {
		return nil, errors.New("executor: Start needs a positive Lease and TTL")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Executor{st: st, lease: o.Lease, ttl: o.TTL, sweepEvery: o.SweepEvery, log: log, release: func() {}}
	if e.sweepEvery <= 0 {
		e.sweepEvery = 10 * time.Minute
	}
	switch {
	case o.Instance != "":
		e.instance = o.Instance
	default:
		inst, release, err := lockInstance(o.StoreDSN, "")
		if err != nil {
			log.Warn("gateway: no stable instance name; a restart is recognised once the heartbeat lapses", "err", err)
			inst = "gw-" + randomHex(8)
		}
		e.instance = inst
		if release != nil {
			e.release = release
		}
	}
	e.id = e.instance + "#" + randomHex(8)
	now := time.Now()
	rctx, cancel := context.WithTimeout(ctx, executorTimeout)
	defer cancel()
	if err := st.RegisterExecutor(rctx, store.Executor{ID: e.id, Instance: e.instance, StartedAt: now, AliveUntil: now.Add(e.lease)}); err != nil {
		e.release()
		return nil, fmt.Errorf("executor: registering %s: %w", e.id, err)
	}
	log.Info("gateway: executor registered", "executor", e.id, "instance", e.instance)
	hctx, hcancel := context.WithCancel(context.Background())
	e.cancel = hcancel
	e.wg.Go(func() { e.heartbeat(hctx) })
	return e, nil
}

// heartbeat extends the registration every lease/3 and sweeps executors
// gone for longer than the journal's TTL every sweepEvery, until ctx ends.
func (e *Executor) heartbeat(ctx context.Context) {
	every := max(e.lease/3, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	lastSweep := time.Time{}
	for {
		now := time.Now()
		if now.Sub(lastSweep) >= e.sweepEvery {
			lastSweep = now
			if n, err := e.st.SweepExecutors(ctx, now.Add(-e.ttl)); err != nil && ctx.Err() == nil {
				e.log.Warn("gateway: sweeping executors failed", "err", err)
			} else if n > 0 {
				e.log.Debug("gateway: swept executors", "count", n)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		hctx, cancel := context.WithTimeout(ctx, every)
		err := e.st.HeartbeatExecutor(hctx, e.id, time.Now().Add(e.lease))
		cancel()
		switch {
		case err == nil, ctx.Err() != nil:
		case errors.Is(err, store.ErrExecutorStopped):
			e.log.Error("gateway: this executor was stopped in the store (another process registered its instance); its claims count as dead",
				"executor", e.id, "instance", e.instance)
		default:
			e.log.Warn("gateway: executor heartbeat failed", "executor", e.id, "err", err)
		}
	}
}

// ID returns the executor's ID, instance#incarnation: the Executor to
// give the journal.
func (e *Executor) ID() string { return e.id }

// Instance returns the executor's instance name.
func (e *Executor) Instance() string { return e.instance }

// Stop ends the heartbeat, marks the executor stopped in the store (its
// remaining claims are then dead at once) and releases the instance.
func (e *Executor) Stop() {
	e.once.Do(func() {
		e.cancel()
		e.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), executorTimeout)
		defer cancel()
		if err := e.st.StopExecutor(ctx, e.id, time.Now()); err != nil {
			e.log.Warn("gateway: stopping executor", "executor", e.id, "err", err)
		}
		e.release()
	})
}

// LockInstance takes the first free gateway instance slot of the store
// named by d and returns the instance name and the lock's release.
func LockInstance(d string) (string, func(), error) { return lockInstance(d, "") }

// lockInstance takes the first free slot among the lock files
// <kind><N>.lock of the store named by d; the instance is
// <host>/<hash of the lock directory>/<kind><N>.
func lockInstance(d, kind string) (string, func(), error) {
	if d == "" {
		return "", nil, errors.New("no store DSN")
	}
	parsed, err := store.ParseDSN(d)
	if err != nil {
		return "", nil, err
	}
	var dir string
	switch parsed.Kind {
	case store.KindSQLite:
		p, err := filepath.Abs(parsed.Path)
		if err != nil {
			return "", nil, err
		}
		dir = p + "-instances"
	case store.KindPostgres:
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", nil, err
		}
		sum := sha256.Sum256([]byte(store.Redact(parsed.URL)))
		dir = filepath.Join(cache, "gatehouse", "instances", hex.EncodeToString(sum[:8]))
	default:
		return "", nil, fmt.Errorf("a %s store is not shared between processes", parsed.Kind)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	sum := sha256.Sum256([]byte(dir))
	for slot := range maxInstanceSlots {
		release, err := tryLock(filepath.Join(dir, fmt.Sprintf("%s%d.lock", kind, slot)))
		if errors.Is(err, errLocked) {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("%s/%s/%s%d", host, hex.EncodeToString(sum[:4]), kind, slot), release, nil
	}
	return "", nil, fmt.Errorf("all %d instance slots in %s are taken", maxInstanceSlots, dir)
}

// errLocked: the lock file is held by another process.
var errLocked = errors.New("locked")

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
