package audit

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// ErrClosed is returned by Append and Flush after Close.
var ErrClosed = errors.New("audit: writer closed")

// WriterOptions configure NewWriter.
type WriterOptions struct {
	// Chain is the chain written (required); Instance is set on every
	// entry whose Instance is empty.
	Chain    string
	Instance string
	// Queue is how many entries may wait to be written; Append blocks
	// while it is full. 0 means 4,096.
	Queue int
	// Batch caps the entries of one transaction. 0 means 256.
	Batch int
	// Linger is how long the writer waits for more entries after the
	// first of a batch, so that a steady trickle of calls shares
	// transactions (fewer commits competing with the journal's for the
	// store). Append never waits for it; it only delays when an entry is
	// committed (a crash may lose what waits). The writer sleeps through
	// it (an Append does not wake it), then takes what came, up to Batch;
	// a Flush or a full batch's worth of entries queued ends it early.
	// 0 means 2ms; negative means no wait.
	Linger time.Duration
	// CheckpointEvery and CheckpointInterval: a checkpoint is made after
	// that many entries, or that long after the last one when entries were
	// written since, and at Close. 0 means 10,000 entries and 5 minutes.
	CheckpointEvery    int
	CheckpointInterval time.Duration
	// FirstCheckpoint is how soon a chain that has no checkpoint at all
	// (a new one, or one whose writer died before its first) gets one
	// once it holds entries: until then `audit verify --public-key`
	// refuses it (nothing proves it). 0 means 30 seconds.
	FirstCheckpoint time.Duration
	// Key signs the checkpoints, each linked to the one before (SignLinked);
	// nil leaves them unsigned.
	Key ed25519.PrivateKey
	// CloseTimeout bounds how long Close retries a store that fails. 0
	// means 10 seconds.
	CloseTimeout time.Duration
	// Logger receives write failures (retried). Nil discards them.
	Logger *slog.Logger
	// Now is the clock of entries without a time and of checkpoints; nil
	// means time.Now.
	Now func() time.Time
}

// item is one queued entry, or (done set) a flush mark. With digest set,
// the entry's ArgsDigest is ArgsDigest(args), which the loop computes.
type item struct {
	e      store.AuditEntry
	args   []byte
	digest bool
	done   chan error
}

// Writer appends the entries of one chain through a bounded queue, in
// batches, on a goroutine of its own that ends at Close.
type Writer struct {
	st store.AuditStore
	o  WriterOptions

	mu     sync.RWMutex // held for reading by senders, for writing by Close
	closed bool
	// closing is set by Close before it waits for mu.
	closing atomic.Bool
	ch      chan item
	// kick ends the loop's linger early: a Flush, or Batch entries queued.
	kick chan struct{}
	done chan struct{}
	err  error // the loop's last failure, read after done

	// linked is st as a store.AuditJournalStore, when it is one: the
	// batches are then linked inside the store's transactions (the
	// journal's group commit), where entries committed with journal
	// completions (Noted) are linked too.
	linked store.AuditJournalStore

	// The chain's head as this process last committed it, and the entries
	// since the last checkpoint: the loop's, and Note's callers'.
	hmu     sync.Mutex
	head    store.AuditHead
	sinceCP int
	// The loop's own state: prev is the chain's latest checkpoint (nil
	// when it has none), which the next one links to.
	lastCP      time.Time
	checkpointN int
	prev        *store.AuditCheckpoint
}

// NewWriter reads the chain's head and starts the writer.
func NewWriter(ctx context.Context, st store.AuditStore, o *WriterOptions) (*Writer, error) {
	if o == nil || o.Chain == "" {
		return nil, errors.New("audit: NewWriter needs a chain")
	}
	w := &Writer{st: st, o: *o}
	if w.o.Queue <= 0 {
		w.o.Queue = 4096
	}
	if w.o.Batch <= 0 {
		w.o.Batch = 256
	}
	if w.o.Linger == 0 {
		w.o.Linger = 2 * time.Millisecond
	}
	if w.o.CheckpointEvery <= 0 {
		w.o.CheckpointEvery = 10000
	}
	if w.o.CheckpointInterval <= 0 {
		w.o.CheckpointInterval = 5 * time.Minute
	}
	if w.o.FirstCheckpoint <= 0 {
		w.o.FirstCheckpoint = 30 * time.Second
	}
	if w.o.CloseTimeout <= 0 {
		w.o.CloseTimeout = 10 * time.Second
	}
	if w.o.Logger == nil {
		w.o.Logger = slog.New(slog.DiscardHandler)
	}
	if w.o.Now == nil {
		w.o.Now = time.Now
	}
	head, err := st.AuditHead(ctx, w.o.Chain)
	if err != nil {
		return nil, fmt.Errorf("audit: reading the head of chain %q: %w", w.o.Chain, err)
	}
	cps, err := st.AuditCheckpoints(ctx, w.o.Chain)
	if err != nil {
		return nil, fmt.Errorf("audit: reading the checkpoints of chain %q: %w", w.o.Chain, err)
	}
	if len(cps) > 0 {
		w.prev = &cps[len(cps)-1]
	}
	w.head, w.lastCP = head, w.o.Now()
	w.linked, _ = st.(store.AuditJournalStore)
	w.ch = make(chan item, w.o.Queue)
	w.kick = make(chan struct{}, 1)
	w.done = make(chan struct{})
	go w.loop()
	return w, nil
}

// Chain returns the chain the writer appends to.
func (w *Writer) Chain() string { return w.o.Chain }

// Entry returns e ready to be linked to the writer's chain by another
// write (store.AuditJournalStore.CompleteAudited): its chain, its instance
// when empty, its time when zero. Pass Link to link it, and the entry as
// written to Note.
func (w *Writer) Entry(e store.AuditEntry) store.AuditEntry {
	e = w.stamped(e)
	e.Chain = w.o.Chain
	return e
}

// stamped returns e with the writer's defaults: now for a zero At, its
// instance for an empty Instance.
func (w *Writer) stamped(e store.AuditEntry) store.AuditEntry {
	if e.At.IsZero() {
		e.At = w.o.Now()
	}
	if e.Instance == "" {
		e.Instance = w.o.Instance
	}
	return e
}

// Note tells the writer that e was committed to its chain by another
// write (a journal completion), so that its checkpoints cover it.
func (w *Writer) Note(e store.AuditEntry) {
	if e.Chain != w.o.Chain {
		return
	}
	w.hmu.Lock()
	if e.Seq > w.head.Last {
		w.head.Last, w.head.Hash = e.Seq, e.Hash
		if w.head.First == 0 {
			w.head.First = e.Seq
		}
	}
	w.head.Entries++
	w.sinceCP++
	w.hmu.Unlock()
}

// Append queues e (its chain, seq and hashes are the writer's to fill in;
// a zero At is now). It blocks while the queue is full, until ctx ends
// (then e is not written and the error is ctx's).
func (w *Writer) Append(ctx context.Context, e store.AuditEntry) error {
	return w.send(ctx, item{e: w.stamped(e)})
}

// AppendDigesting is Append of e whose ArgsDigest is to be
// ArgsDigest(args) (args is copied): the writer's goroutine computes it
// when it takes the entry, with the rest of its batch. The caller's path
// pays a copy instead of a SHA-256, which costs several times more there,
// among the caller's own code, than a batch's run of them does.
func (w *Writer) AppendDigesting(ctx context.Context, e store.AuditEntry, args json.RawMessage) error {
	return w.send(ctx, item{e: w.stamped(e), args: append([]byte(nil), args...), digest: true})
}

// Flush waits until every entry queued before it is committed, and returns
// the store's error if the last attempt failed.
func (w *Writer) Flush(ctx context.Context) error {
	done := make(chan error, 1)
	if err := w.send(ctx, item{done: done}); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *Writer) send(ctx context.Context, it item) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return ErrClosed
	}
	select {
	case w.ch <- it:
		w.wake(it)
		return nil
	default:
	}
	w.poke() // the queue is full: the loop takes a batch at once
	select {
	case w.ch <- it:
		w.wake(it)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("audit: waiting for room in the queue: %w", ctx.Err())
	}
}

// wake ends the loop's linger after a flush mark, or once a batch's worth
// of entries waits; an entry alone leaves it asleep.
func (w *Writer) wake(it item) {
	if it.done != nil || len(w.ch) >= w.o.Batch {
		w.poke()
	}
}

func (w *Writer) poke() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Close refuses new entries, commits those queued (retrying a failing
// store for up to CloseTimeout), makes a last checkpoint, and ends the
// writer's goroutine. Its error says what could not be written.
func (w *Writer) Close() error {
	w.closing.Store(true)
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		<-w.done
		return nil
	}
	w.closed = true
	close(w.ch)
	w.mu.Unlock()
	w.poke() // a linger in progress ends
	<-w.done
	return w.err
}

// loop commits the queue in batches until the channel is closed and
// drained.
func (w *Writer) loop() {
	defer close(w.done)
	tick := time.NewTicker(w.o.CheckpointInterval)
	defer tick.Stop()
	// first wakes the loop while the chain has no checkpoint at all.
	first := time.NewTimer(w.o.FirstCheckpoint)
	defer first.Stop()
	firstC := first.C
	if w.prev != nil {
		first.Stop()
		firstC = nil
	}
	batch := make([]store.AuditEntry, 0, w.o.Batch)
	var flushes []chan error
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	defer linger.Stop()
	for {
		var it item
		var ok bool
		select {
		case it, ok = <-w.ch:
		case <-tick.C:
			w.checkpoint(false)
			continue
		case <-firstC:
			if w.prev == nil {
				w.checkpoint(true)
			}
			if w.prev == nil {
				first.Reset(w.o.FirstCheckpoint)
			} else {
				firstC = nil
			}
			continue
		}
		if !ok {
			w.checkpoint(true)
			return
		}
		batch, flushes = batch[:0], flushes[:0]
		w.take(it, &batch, &flushes)
		if w.o.Linger > 0 && len(flushes) == 0 {
			linger.Reset(w.o.Linger)
		}
		// The linger: asleep until it ends, a flush mark or a batch's
		// worth of entries kicks, or Close; then what is queued, up to
		// Batch, without waiting.
		if w.o.Linger > 0 && len(flushes) == 0 && len(w.ch) < w.o.Batch-1 && !w.isClosed() {
			select {
			case <-linger.C:
			case <-w.kick:
			}
		}
	fill:
		for len(batch) < w.o.Batch && len(flushes) == 0 {
			select {
			case it, ok = <-w.ch:
				if !ok {
					break fill
				}
				w.take(it, &batch, &flushes)
			default:
				break fill
			}
		}
		linger.Stop()
		err := w.commit(batch)
		for _, f := range flushes {
			f <- err
		}
		w.hmu.Lock()
		due := w.sinceCP >= w.o.CheckpointEvery
		w.hmu.Unlock()
		if due {
			w.checkpoint(false)
		}
		if !ok {
			w.checkpoint(true)
			return
		}
	}
}

func (w *Writer) take(it item, batch *[]store.AuditEntry, flushes *[]chan error) {
	if it.done != nil {
		*flushes = append(*flushes, it.done)
		return
	}
	if it.digest {
		it.e.ArgsDigest = ArgsDigest(it.args)
	}
	*batch = append(*batch, it.e)
}

// commit appends batch, linking it to the head; a conflict (another writer
// of the chain) re-reads the head, a failure is retried, until it commits
// or, once closing, CloseTimeout has passed.
func (w *Writer) commit(batch []store.AuditEntry) error {
	if len(batch) == 0 {
		return nil
	}
	var deadline time.Time
	wait := 10 * time.Millisecond
	for {
		if w.linked != nil {
			err := w.commitLinked(batch)
			if err == nil {
				return nil
			}
			if errors.Is(err, store.ErrClosed) {
				w.o.Logger.Error("audit: the store is closed; entries lost", "chain", w.o.Chain, "entries", len(batch))
				return w.err
			}
			w.o.Logger.Error("audit: writing the audit trail failed; retrying (calls wait when the queue is full)", "chain", w.o.Chain, "err", err)
			if w.giveUp(&deadline, &wait) {
				return w.err
			}
			continue
		}
		w.hmu.Lock()
		wasHead := w.head
		w.hmu.Unlock()
		linked := make([]store.AuditEntry, len(batch))
		head := wasHead
		for i, e := range batch {
			linked[i] = Link(e, head)
			head.Last, head.Hash = linked[i].Seq, linked[i].Hash
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := w.st.AppendAudit(ctx, linked)
		if err == nil {
			cancel()
			if head.First == 0 {
				head.First = 1
			}
			head.Entries += int64(len(batch))
			w.hmu.Lock()
			w.head = head
			w.sinceCP += len(batch)
			w.hmu.Unlock()
			w.err = nil
			return nil
		}
		if errors.Is(err, store.ErrConflict) {
			h, herr := w.st.AuditHead(ctx, w.o.Chain)
			cancel()
			if herr == nil {
				w.hmu.Lock()
				w.head = h
				w.hmu.Unlock()
				continue
			}
			err = herr
		} else {
			cancel()
		}
		w.err = fmt.Errorf("audit: appending %d entries to chain %q: %w", len(batch), w.o.Chain, err)
		if errors.Is(err, store.ErrClosed) {
			// The store is gone: nothing will ever commit.
			w.o.Logger.Error("audit: the store is closed; entries lost", "chain", w.o.Chain, "entries", len(batch))
			return w.err
		}
		w.o.Logger.Error("audit: writing the audit trail failed; retrying (calls wait when the queue is full)", "chain", w.o.Chain, "err", err)
		if w.giveUp(&deadline, &wait) {
			return w.err
		}
	}
}

// giveUp is the pause between two attempts to write a batch: once the
// writer is closing, it gives up after CloseTimeout (true); otherwise it
// sleeps wait and doubles it, up to a second.
func (w *Writer) giveUp(deadline *time.Time, wait *time.Duration) bool {
	if w.isClosed() {
		if deadline.IsZero() {
			*deadline = time.Now().Add(w.o.CloseTimeout)
		} else if time.Now().After(*deadline) {
			return true
		}
	}
	time.Sleep(*wait)
	*wait = min(2**wait, time.Second)
	return false
}

// commitLinked appends batch through the store's linked append (the
// chain's head decided in the store's transaction).
func (w *Writer) commitLinked(batch []store.AuditEntry) error {
	for i := range batch {
		batch[i].Chain = w.o.Chain
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := w.linked.AppendAuditLinked(ctx, batch, Link)
	if err != nil {
		w.err = fmt.Errorf("audit: appending %d entries to chain %q: %w", len(batch), w.o.Chain, err)
		return err
	}
	w.err = nil
	for _, e := range out {
		w.Note(e)
	}
	return nil
}

// isClosed reports whether Close was called. It takes no lock: Close may
// be waiting for mu behind senders that wait for this loop.
func (w *Writer) isClosed() bool { return w.closing.Load() }

// checkpoint records (and signs, linked to the chain's checkpoint before)
// the head when entries were written since the last one, and force (Close,
// or a chain's first checkpoint) or the count or interval says so.
func (w *Writer) checkpoint(force bool) {
	w.hmu.Lock()
	head, since := w.head, w.sinceCP
	w.hmu.Unlock()
	if since == 0 || head.Last == 0 {
		return
	}
	if !force && since < w.o.CheckpointEvery && w.o.Now().Sub(w.lastCP) < w.o.CheckpointInterval {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := store.AuditCheckpoint{Chain: w.o.Chain, Seq: head.Last, Hash: head.Hash, At: w.o.Now()}
	prev := w.prev
	if prev != nil && prev.Seq >= c.Seq {
		// Another writer of the chain (a misconfiguration) checkpointed
		// past this head: link to what precedes it.
		cps, err := w.st.AuditCheckpoints(ctx, w.o.Chain)
		if err != nil {
			w.o.Logger.Error("audit: checkpoint failed", "chain", w.o.Chain, "seq", c.Seq, "err", err)
			return
		}
		prev = latestBefore(cps, c.Seq)
	}
	if w.o.Key != nil {
		c = SignLinked(w.o.Key, c, prev)
	}
	err := w.st.PutAuditCheckpoint(ctx, c)
	switch {
	case err == nil:
		w.prev = &c
	case errors.Is(err, store.ErrConflict):
		// Another writer checkpointed this seq: the next one links to
		// that one, as stored.
		cps, rerr := w.st.AuditCheckpoints(ctx, w.o.Chain)
		if rerr != nil {
			w.o.Logger.Error("audit: checkpoint failed", "chain", w.o.Chain, "seq", c.Seq, "err", rerr)
			return
		}
		w.prev = latestBefore(cps, c.Seq+1)
	default:
		w.o.Logger.Error("audit: checkpoint failed", "chain", w.o.Chain, "seq", c.Seq, "err", err)
		return
	}
	w.hmu.Lock()
	w.sinceCP -= since
	w.hmu.Unlock()
	w.lastCP = w.o.Now()
	w.checkpointN++
}

// AppendOne appends e to chain at once, in its own transaction, retrying
// when another writer appended meanwhile (the operators' chain, shared by
// every command). It returns e as written.
func AppendOne(ctx context.Context, st store.AuditStore, chain string, e store.AuditEntry) (store.AuditEntry, error) {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	for attempt := 0; ; attempt++ {
		head, err := st.AuditHead(ctx, chain)
		if err != nil {
			return store.AuditEntry{}, fmt.Errorf("audit: reading the head of chain %q: %w", chain, err)
		}
		head.Chain = chain
		linked := []store.AuditEntry{Link(e, head)}
		err = st.AppendAudit(ctx, linked)
		if err == nil {
			return linked[0], nil
		}
		if !errors.Is(err, store.ErrConflict) || attempt >= 100 {
			return store.AuditEntry{}, fmt.Errorf("audit: appending to chain %q: %w", chain, err)
		}
	}
}
