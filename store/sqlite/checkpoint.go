package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"time"
)

// Checkpoints.
//
// In WAL mode every commit appends its pages to the -wal file, and a
// checkpoint copies them back into the database file, syncing both files
// (fsync) as it goes. SQLite's own automatic checkpoint runs in the
// connection whose commit took the WAL past 1,000 pages, inside that
// commit and while it still holds the write lock: every writer of the
// process (see lockWriter) then waits for the copy and the two fsyncs, and
// under load the process's sessions all end up waiting for a disk while
// the CPU idles. Measured: keyed calls through the gateway at 8 sessions
// left 16-18 % of the machine idle with the automatic checkpoint and none
// without it.
//
// A store therefore turns the automatic checkpoint off on its connections
// (wal_autocheckpoint=0) and runs its own, from one goroutine:
//
//   - After every checkpointEvery commits of this handle, and a second
//     after the first commit since the last checkpoint when fewer come, a
//     PASSIVE checkpoint on a
//     connection of the pool. PASSIVE takes neither the write lock nor our
//     writer queue: commits go on while it copies and syncs.
//   - A lazy commit (InTxLazy: the audit writer's batches alone, which a
//     crash may lose anyway until they commit) counts towards
//     checkpointEvery, but when only lazy commits came the wait is
//     checkpointLazyIdle, not a second: a gateway whose only writes are
//     its trail's batches, one a second under load, would otherwise pay a
//     checkpoint's two fsyncs for every one of them (0.26% of a plain
//     call's CPU in its profile). A power loss with synchronous=NORMAL may
//     then lose the trail's last checkpointLazyIdle; any other commit
//     brings the checkpoint within a second, as before.
//   - A PASSIVE checkpoint copies what was committed when it began; commits
//     made meanwhile stay in the WAL, and SQLite restarts the WAL from its
//     beginning only when a writer finds every frame copied. Under a
//     steady load that may never happen and the WAL would grow without
//     bound, so once it holds more than restartFrames pages the
//     checkpointer waits for its turn in the writer queue and checkpoints
//     again, holding it: only the frames since the first pass are left to
//     copy, and the next commit starts the WAL over.
//
// A checkpoint that cannot run (another process is checkpointing, a
// reader holds an old snapshot) is tried again at the next one; nothing
// depends on it but the size of the WAL. Other processes on the same file
// run their own checkpoints (a gatehouse store, its checkpointer; another
// SQLite client, its own setting). Close stops the checkpointer before the
// pool is closed; SQLite checkpoints the whole WAL when the last
// connection to the file closes.
const (
	checkpointEvery    = 128
	checkpointIdle     = time.Second
	checkpointLazyIdle = 10 * time.Second
	restartFrames      = 4096 // 16 MiB of 4 KiB pages
)

// checkpointOptions are a checkpointer's thresholds (the constants
// above; tests make them small).
type checkpointOptions struct {
	every    int64         // commits between checkpoints
	idle     time.Duration // the wait after a first commit when fewer come
	lazyIdle time.Duration // the same when only lazy commits came
	limit    int64         // WAL frames past which the WAL is restarted
}

func defaultCheckpoints() checkpointOptions {
	return checkpointOptions{every: checkpointEvery, idle: checkpointIdle, lazyIdle: checkpointLazyIdle, limit: restartFrames}
}

// checkpointer runs a store's checkpoints (see above).
type checkpointer struct {
	db    *sql.DB
	reads readSlots // the pool's: a pass holds one
	// lock and unlock take and give back a turn in the store's writer
	// queue.
	lock   func(context.Context) error
	unlock func()
	checkpointOptions

	commits atomic.Int64  // since the last checkpoint began, lazy ones too
	eager   atomic.Int64  // the commits among them that are not lazy
	kick    chan struct{} // capacity 1: a checkpoint or its wait is due
	stop    context.CancelFunc
	done    chan struct{}

	// Counted for tests.
	passes, restarts, failures atomic.Int64

	stopOnce sync.Once
}

// newCheckpointer starts the checkpointer of db; stop it with close.
func newCheckpointer(db *sql.DB, reads readSlots, lock func(context.Context) error, unlock func(), o checkpointOptions) *checkpointer {
	ctx, cancel := context.WithCancel(context.Background())
	c := &checkpointer{db: db, reads: reads, lock: lock, unlock: unlock, checkpointOptions: o,
		kick: make(chan struct{}, 1), stop: cancel, done: make(chan struct{})}
	go c.loop(ctx)
	return c
}

// committed counts one commit of the store's writers; it never blocks.
func (c *checkpointer) committed() {
	if c == nil {
		return
	}
	n, e := c.commits.Add(1), c.eager.Add(1)
	if n == 1 || e == 1 || n%c.every == 0 {
		c.poke()
	}
}

// committedLazy counts one lazy commit (see above); it never blocks.
func (c *checkpointer) committedLazy() {
	if c == nil {
		return
	}
	if n := c.commits.Add(1); n == 1 || n%c.every == 0 {
		c.poke()
	}
}

func (c *checkpointer) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *checkpointer) loop(ctx context.Context) {
	defer close(c.done)
	idle := time.NewTimer(c.idle)
	idle.Stop()
	defer idle.Stop()
	var due time.Time // when idle fires (zero: it is stopped)
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
			if c.commits.Load() < c.every {
				// The first commit since the last checkpoint, or the first
				// that is not lazy: check again when the writes stop (or
				// at the every-th), a second after it (checkpointLazyIdle
				// after a lazy one), unless a check is already due sooner.
				wait := c.lazyIdle
				if c.eager.Load() > 0 {
					wait = c.idle
				}
				if at := time.Now().Add(wait); due.IsZero() || at.Before(due) {
					idle.Reset(wait)
					due = at
				}
				continue
			}
		case <-idle.C:
			due = time.Time{}
			if c.commits.Load() == 0 {
				continue
			}
		}
		idle.Stop()
		due = time.Time{}
		c.checkpoint(ctx)
	}
}

// checkpoint runs one PASSIVE checkpoint, and a second holding the writer
// queue when the WAL has grown past the limit.
func (c *checkpointer) checkpoint(ctx context.Context) {
	c.commits.Store(0)
	c.eager.Store(0)
	if err := c.reads.enter(ctx); err != nil {
		return // closing
	}
	defer c.reads.leave()
	frames, err := c.passive(ctx)
	if err != nil {
		c.failures.Add(1)
		return
	}
	c.passes.Add(1)
	if frames <= c.limit {
		return
	}
	if err := c.lock(ctx); err != nil {
		return // closing
	}
	defer c.unlock()
	if _, err := c.passive(ctx); err != nil {
		c.failures.Add(1)
		return
	}
	c.restarts.Add(1)
}

// passive runs PRAGMA wal_checkpoint(PASSIVE) and returns the frames the
// WAL holds.
func (c *checkpointer) passive(ctx context.Context) (int64, error) {
	var busy, frames, copied int64
	if err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil {
		return 0, err
	}
	return frames, nil
}

// close stops the checkpointer and waits for it to end.
func (c *checkpointer) close() {
	if c == nil {
		return
	}
	c.stopOnce.Do(func() {
		c.stop()
		<-c.done
	})
}
