package relist

import (
	"context"
	"testing"
	"time"
)

// TestPacer: only the first announcement since a Clear queues a
// re-listing; Settle waits for the announcements to pause, gives up when
// its context ends, and a storm that never pauses still settles.
func TestPacer(t *testing.T) {
	var p Pacer
	if !p.Announce() {
		t.Fatal("the first announcement must queue a re-listing")
	}
	for range 1000 {
		if p.Announce() {
			t.Fatal("an announcement while one is queued must not queue another")
		}
	}
	if !p.Settle(context.Background()) {
		t.Fatal("Settle without a storm must settle")
	}
	p.Clear()
	if !p.Announce() {
		t.Fatal("after Clear, an announcement must queue again")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if p.Settle(ctx) {
		t.Fatal("Settle with an ended context must report false")
	}

	// A storm that never pauses: Settle still returns (MaxWait).
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(Quiet / 10)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				p.Announce()
			}
		}
	}()
	ok := p.Settle(context.Background())
	close(stop)
	<-done
	if !ok {
		t.Fatal("Settle under a storm must settle after MaxWait")
	}
}
