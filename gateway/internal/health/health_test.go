package health

import (
	"context"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	now := time.Unix(1000, 0)
	h := NewBackoff(func() time.Time { return now })
	if _, down := h.Down("s"); down {
		t.Fatal("down before any failure")
	}
	var waits []time.Duration
	for range 8 {
		h.Observe("s", true)
		w, down := h.Down("s")
		if !down {
			t.Fatal("not down after a lost connection")
		}
		waits = append(waits, w)
		now = now.Add(w)
	}
	if waits[0] != BackoffMin || waits[1] != 2*BackoffMin || waits[7] != BackoffMax {
		t.Errorf("backoff %v", waits)
	}
	h.Observe("s", false)
	h.Observe("s", true)
	if w, _ := h.Down("s"); w != BackoffMin {
		t.Errorf("success did not reset the backoff: %v", w)
	}
	h.Observe("s", false)
	if _, down := h.Down("s"); down {
		t.Error("a call whose connection held ended the backoff too late")
	}
	if snap := h.Snapshot(); len(snap) != 0 {
		t.Errorf("snapshot %v", snap)
	}
}

func TestInflightDrain(t *testing.T) {
	var f Inflight
	if !f.Enter() {
		t.Fatal("enter refused")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if f.Drain(ctx) {
		t.Error("drain with a call running and ctx done reported done")
	}
	if f.Enter() {
		t.Error("enter admitted a call after drain began")
	}
	done := make(chan bool)
	go func() { done <- f.Drain(context.Background()) }()
	f.Leave()
	if !<-done {
		t.Error("drain did not finish when the last call left")
	}
}

// TestDrain: ready until Begin; the drain is waited only when readiness
// was asked, and never when it is 0.
func TestDrain(t *testing.T) {
	var d Drain
	if d.Draining() {
		t.Fatal("draining before Begin")
	}
	if w := d.Begin(10 * time.Second); w != 0 || !d.Draining() {
		t.Fatalf("never probed: wait %v, draining %v; want 0, true", w, d.Draining())
	}
	var p Drain
	p.Probed()
	if p.Draining() {
		t.Fatal("a probe started the drain")
	}
	if w := p.Begin(10 * time.Second); w != 10*time.Second || !p.Draining() {
		t.Fatalf("probed: wait %v, draining %v; want 10s, true", w, p.Draining())
	}
	var z Drain
	z.Probed()
	if w := z.Begin(0); w != 0 || !z.Draining() {
		t.Fatalf("drain 0: wait %v, draining %v", w, z.Draining())
	}
}
