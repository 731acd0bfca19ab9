package gateway

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

// maxInstanceSlots bounds how many gateways on one host share one store
// under derived instance names.
const maxInstanceSlots = 64

// executorTimeout bounds the store writes of registration and shutdown.
const executorTimeout = 10 * time.Second

// executor is this gateway process in the journal: an instance name that
// stays the same across restarts and an incarnation that changes every
// start. Its ID (instance#incarnation) is the executor written into the
// records it claims; it is registered in the store at start, heartbeated
// every lease/3 and stopped at Close, so that after a crash the next
// incarnation's registration marks this one dead at once (see
// store.ExecutorStore and durable.JournalOptions.Executors).
type executor struct {
	id, instance string
	st           store.ExecutorStore
	lease, ttl   time.Duration
	log          *slog.Logger
	release      func() // the instance lock, if any

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// startExecutor claims an instance name, registers a new incarnation of it
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
func startExecutor(ctx context.Context, st store.ExecutorStore, named, storeDSN string, lease, ttl time.Duration, log *slog.Logger) (*executor, error) {
	e := &executor{st: st, lease: lease, ttl: ttl, log: log, release: func() {}}
	switch {
	case named != "":
		e.instance = named
	default:
		inst, release, err := lockInstance(storeDSN)
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
	if err := st.RegisterExecutor(rctx, store.Executor{ID: e.id, Instance: e.instance, StartedAt: now, AliveUntil: now.Add(lease)}); err != nil {
		e.release()
		return nil, fmt.Errorf("gateway: registering executor %s: %w", e.id, err)
	}
	log.Info("gateway: executor registered", "executor", e.id, "instance", e.instance)
	hctx, hcancel := context.WithCancel(context.Background())
	e.cancel = hcancel
	e.wg.Go(func() { e.heartbeat(hctx) })
	return e, nil
}

// heartbeat extends the registration every lease/3 and sweeps executors
// gone for longer than the journal's TTL every sweepEvery, until ctx ends.
func (e *executor) heartbeat(ctx context.Context) {
	every := max(e.lease/3, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	lastSweep := time.Time{}
	for {
		now := time.Now()
		if now.Sub(lastSweep) >= sweepEvery {
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

// stop ends the heartbeat, marks the executor stopped in the store (its
// remaining claims are then dead at once) and releases the instance.
func (e *executor) stop() {
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

// lockInstance takes the first free instance slot of the store named by
// d and returns the instance name and the lock's release.
func lockInstance(d string) (string, func(), error) {
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
		release, err := tryLock(filepath.Join(dir, fmt.Sprintf("%d.lock", slot)))
		if errors.Is(err, errLocked) {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("%s/%s/%d", host, hex.EncodeToString(sum[:4]), slot), release, nil
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
