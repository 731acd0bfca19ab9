package relay

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// TestDrainEnds reads the ends of byte calls' response streams from a
// real go-sdk server whose raw answers end the stream at once, late, or
// never: a call returns without waiting for the end; a stream that ends
// is read to its end and its connection reused; one that never ends is
// cut drainCut after its reading began, and the next call still works.
func TestDrainEnds(t *testing.T) {
	h := newHostile(t)
	r := openRelay(t, []toolset.Server{remote("h", h.url)}, nil, nil)
	if got := call(t, r, "h__echo", `{"x":1}`); got != `{"x":1}` {
		t.Fatalf("echo %q", got)
	}
	answer := func(w http.ResponseWriter, id string) {
		sse(w, "data: {\"jsonrpc\":\"2.0\",\"id\":"+id+",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\n\n")
	}

	t.Run("at once", func(t *testing.T) {
		h.set(answer)
		before := h.conns.Load()
		handed0, _ := r.drains.counts()
		for range 50 {
			if got := bytesText(t, r, "h__echo", `{}`); got != "ok" {
				t.Fatalf("answer %q", got)
			}
		}
		handed, _ := r.drains.counts()
		// A call may start before the previous stream's end is read: a
		// few connections, never one a call.
		if n := h.conns.Load() - before; n > 10 {
			t.Errorf("50 calls opened %d connections", n)
		}
		t.Logf("50 calls: %d streams' ends read by the drainer, the rest with the answer; %d connections opened", handed-handed0, h.conns.Load()-before)
	})

	t.Run("late", func(t *testing.T) {
		const late = 40 * time.Millisecond
		var ended atomic.Int64
		h.set(func(w http.ResponseWriter, id string) {
			answer(w, id)
			time.Sleep(late)
			ended.Add(1)
		})
		before := h.conns.Load()
		for i := range 5 {
			if got := bytesText(t, r, "h__echo", `{}`); got != "ok" {
				t.Fatalf("answer %q", got)
			}
			if n := ended.Load(); n != int64(i) {
				t.Errorf("call %d returned after its stream ended (%d ended)", i, n)
			}
			waitFor(t, "the stream's end", func() bool { return ended.Load() == int64(i+1) })
			time.Sleep(20 * time.Millisecond) // its end read, the connection idle
		}
		if n := h.conns.Load() - before; n > 1 {
			t.Errorf("5 calls whose streams ended late opened %d connections, want at most 1", n)
		}
	})

	t.Run("never", func(t *testing.T) {
		type cut struct{ answered, cut time.Time }
		cuts := make(chan cut, 3)
		stop := make(chan struct{})
		defer close(stop)
		h.set(func(w http.ResponseWriter, id string) {
			answer(w, id)
			c := cut{answered: time.Now()}
			for {
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
				// Comments: the stream stays open and says nothing.
				if _, err := io.WriteString(w, ": still here\n\n"); err != nil {
					break
				}
				if err := http.NewResponseController(w).Flush(); err != nil {
					break
				}
			}
			c.cut = time.Now()
			cuts <- c
		})
		_, cut0 := r.drains.counts()
		for i := range 3 {
			start := time.Now()
			if got := bytesText(t, r, "h__echo", `{}`); got != "ok" {
				t.Fatalf("answer %q", got)
			}
			if d := time.Since(start); d >= drainCut {
				t.Errorf("call %d took %v: it waited for a stream that never ends", i, d)
			}
			select {
			case c := <-cuts:
				if d := c.cut.Sub(c.answered); d < drainCut*8/10 || d > 5*time.Second {
					t.Errorf("stream %d cut %v after its answer, want about %v", i, d, drainCut)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("stream %d not cut in 10s", i)
			}
		}
		if _, n := r.drains.counts(); n-cut0 != 3 {
			t.Errorf("%d streams cut, want 3", n-cut0)
		}
		h.set(answer)
		if got := bytesText(t, r, "h__echo", `{}`); got != "ok" {
			t.Fatalf("after the cuts: %q", got)
		}
	})
}

// blocking is a response body whose Read blocks until it is closed, or
// returns EOF at once when ended.
type blocking struct {
	ended  bool
	once   sync.Once
	closed chan struct{}
	reads  atomic.Int64
}

func newBlocking(ended bool) *blocking { return &blocking{ended: ended, closed: make(chan struct{})} }

func (b *blocking) Read(p []byte) (int, error) {
	b.reads.Add(1)
	if b.ended {
		return 0, io.EOF
	}
	<-b.closed
	return 0, errors.New("closed")
}

func (b *blocking) Close() error {
	b.once.Do(func() { close(b.closed) })
	return nil
}

func (b *blocking) isClosed() bool {
	select {
	case <-b.closed:
		return true
	default:
		return false
	}
}

// TestDrainerBounds: a full queue closes a stream at once; close ends the
// workers and the sweeper, closing the streams being read and those that
// waited, and every done is called once; a stream handed over after close
// is closed at once.
func TestDrainerBounds(t *testing.T) {
	d := newDrainer()
	d.jobs = make(chan drainJob, 2) // a short queue
	d.after = time.Hour             // no cuts: the workers stay busy
	var dones atomic.Int64
	done := func() { dones.Add(1) }
	var reading []*blocking
	for range drainWorkers {
		b := newBlocking(false)
		reading = append(reading, b)
		d.drain(b, done)
		waitFor(t, "a worker reading", func() bool { return b.reads.Load() > 0 })
	}
	queued := []*blocking{newBlocking(true), newBlocking(false)}
	for _, b := range queued {
		d.drain(b, done)
	}
	over := newBlocking(false)
	d.drain(over, done)
	if !over.isClosed() || dones.Load() != 1 {
		t.Fatalf("a stream past the queue: closed %v, %d done", over.isClosed(), dones.Load())
	}
	d.close()
	for i, b := range append(reading, queued...) {
		if !b.isClosed() {
			t.Errorf("stream %d not closed by close", i)
		}
	}
	if n := dones.Load(); n != drainWorkers+3 {
		t.Errorf("%d done after close, want %d", n, drainWorkers+3)
	}
	late := newBlocking(false)
	d.drain(late, done)
	if !late.isClosed() || dones.Load() != drainWorkers+4 {
		t.Errorf("a stream after close: closed %v", late.isClosed())
	}
	d.close() // again: nothing
}

// TestDrainerCuts: streams that never end are cut drainCut after their
// reading began by the one sweeper, which then sleeps until woken again.
func TestDrainerCuts(t *testing.T) {
	d := newDrainer()
	defer d.close()
	for round := range 2 {
		start := time.Now()
		var bs []*blocking
		for range drainWorkers + 2 { // two wait for a worker
			b := newBlocking(false)
			bs = append(bs, b)
			d.drain(b, func() {})
		}
		for i, b := range bs {
			select {
			case <-b.closed:
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: stream %d not cut in 10s", round, i)
			}
		}
		if el := time.Since(start); el < drainCut*8/10 {
			t.Errorf("round %d: cut after %v, want at least about %v", round, el, drainCut)
		}
		waitFor(t, "the sweeper to sleep", func() bool {
			d.mu.Lock()
			defer d.mu.Unlock()
			return !d.sweeping
		})
	}
	if _, cut := d.counts(); cut != 2*(drainWorkers+2) {
		t.Errorf("%d cut, want %d", cut, 2*(drainWorkers+2))
	}
}
