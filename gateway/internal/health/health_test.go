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
