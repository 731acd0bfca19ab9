package relay

import (
	"context"
	"io"
	"sync"
	"time"
)

// What is left of a byte call's response stream after its answer (the
// server ends the stream once it has answered) is read to its end, so
// that the connection goes back to the HTTP client's pool instead of
// being closed. A stream whose end already came with the answer needs
// nothing (CallBytes sees it and reads no further). Any other is handed
// to the relay's drainer: a few goroutines that read such ends for the
// whole relay, and one sweeper that cuts a stream still open drainCut
// after its reading began (a connection lost, nothing more). No call
// starts a goroutine or a timer of its own for it, and none waits.

// drainWorkers is how many streams' ends are read at once.
const drainWorkers = 4

// drainQueue is how many streams may wait for a worker; one more is
// closed at once (its connection is not reused).
const drainQueue = 256

// drainCut is how long a worker reads a stream's end before the sweeper
// closes it.
const drainCut = 100 * time.Millisecond

// drainMax is how many bytes after the answer a worker reads at most.
const drainMax = 64 << 10

// drainJob is one stream to read to its end, and what to call after.
type drainJob struct {
	body io.ReadCloser
	done context.CancelFunc // the request's context: ended after the body
}

// drainSlot is what one worker reads, and until when.
type drainSlot struct {
	body  io.ReadCloser
	until time.Time
}

// drainer reads the ends of response streams (see above). Its goroutines
// start with the first stream handed to it and end with close.
type drainer struct {
	jobs  chan drainJob
	after time.Duration // drainCut (tests set another)
	wake  chan struct{} // the sweeper has a stream to watch
	stop  chan struct{}
	wg    sync.WaitGroup

	mu       sync.Mutex
	slots    [drainWorkers]drainSlot
	sweeping bool // the sweeper is watching slots (it was woken)
	started  bool
	closed   bool
	handed   int // streams handed over, for tests
	cut      int // streams the sweeper closed, for tests
}

func newDrainer() *drainer {
	return &drainer{
		jobs:  make(chan drainJob, drainQueue),
		after: drainCut,
		wake:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
	}
}

// drain hands body to a worker, which reads it to its end (at most
// drainMax bytes, for at most drainCut), closes it and calls done. After
// close, or when the queue is full, body is closed and done called at
// once.
func (d *drainer) drain(body io.ReadCloser, done context.CancelFunc) {
	d.mu.Lock()
	queued := false
	if !d.closed {
		d.handed++
		if !d.started {
			d.started = true
			d.wg.Add(drainWorkers + 1)
			for i := range drainWorkers {
				go d.work(i)
			}
			go d.sweep()
		}
		select {
		case d.jobs <- drainJob{body, done}:
			queued = true
		default:
		}
	}
	d.mu.Unlock()
	if !queued {
		body.Close()
		done()
	}
}

// work is worker i.
func (d *drainer) work(i int) {
	defer d.wg.Done()
	var b [512]byte
	for {
		var j drainJob
		select {
		case <-d.stop:
			return
		case j = <-d.jobs:
		}
		d.mu.Lock()
		if d.closed {
			// close took the streams being read already: this one too.
			d.mu.Unlock()
			j.body.Close()
			j.done()
			continue
		}
		d.slots[i] = drainSlot{j.body, time.Now().Add(d.after)}
		wake := !d.sweeping
		d.sweeping = true
		d.mu.Unlock()
		if wake {
			select {
			case d.wake <- struct{}{}:
			default:
			}
		}
		for n := 0; n < drainMax; {
			k, err := j.body.Read(b[:])
			n += k
			if err != nil {
				break
			}
		}
		d.mu.Lock()
		d.slots[i] = drainSlot{}
		d.mu.Unlock()
		j.body.Close() // read to its end: the connection goes back to the pool
		j.done()
	}
}

// sweep closes the streams read past their drainCut. It sleeps until
// woken by a worker, then until the earliest deadline of the streams
// being read, until none is.
func (d *drainer) sweep() {
	defer d.wg.Done()
	t := time.NewTimer(time.Hour)
	t.Stop()
	var cut []io.ReadCloser
	for {
		select {
		case <-d.stop:
			return
		case <-d.wake:
		}
		for {
			now := time.Now()
			var next time.Time
			cut = cut[:0]
			d.mu.Lock()
			for i := range d.slots {
				s := &d.slots[i]
				switch {
				case s.body == nil:
				case !s.until.After(now):
					cut = append(cut, s.body)
					s.until = now.Add(time.Hour) // closed once; the worker clears it
					d.cut++
				case next.IsZero() || s.until.Before(next):
					next = s.until
				}
			}
			if next.IsZero() {
				d.sweeping = false
			}
			d.mu.Unlock()
			for _, b := range cut {
				b.Close() // the worker's Read returns
			}
			clear(cut)
			if next.IsZero() {
				break
			}
			t.Reset(next.Sub(now))
			select {
			case <-d.stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// close stops the workers and the sweeper, and closes the streams they
// were reading or that waited for them; later streams are closed when
// handed over. Closing again does nothing.
func (d *drainer) close() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	var reading []io.ReadCloser
	for i := range d.slots {
		if b := d.slots[i].body; b != nil {
			reading = append(reading, b)
		}
	}
	d.mu.Unlock()
	for _, b := range reading {
		b.Close() // its worker's Read returns
	}
	close(d.stop)
	d.wg.Wait()
	for {
		select {
		case j := <-d.jobs:
			j.body.Close()
			j.done()
		default:
			return
		}
	}
}

// counts returns how many streams were handed over and how many of them
// the sweeper closed.
func (d *drainer) counts() (handed, cut int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.handed, d.cut
}
