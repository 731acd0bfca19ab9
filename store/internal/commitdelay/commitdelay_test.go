package commitdelay

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func key(i int) store.RecordKey {
	return store.RecordKey{Scope: "s", RunID: "r", ToolCallID: fmt.Sprint(i)}
}

func TestOffAndNil(t *testing.T) {
	if tr := New(Options{}); tr != nil {
		t.Fatalf("New with Max 0 = %v, want nil (never waits)", tr)
	}
	var tr *Tracker
	tr.Claimed(key(1))
	tr.Completing(key(1))
	tr.Arrived(5)
	if d, _ := tr.Wait(); d != 0 || tr.Linger(1) || tr.InFlight() != 0 || tr.Lingered() != 0 {
		t.Fatal("a nil Tracker waits")
	}
}

// TestSiblings: a leader waits only while at least Siblings other calls
// are in flight (claimed, not completing); the target is half of them and
// itself.
func TestSiblings(t *testing.T) {
	tr := New(Options{Max: time.Millisecond, Siblings: 2})
	tr.Claimed(key(1))
	if d, _ := tr.Wait(); d != 0 {
		t.Fatalf("one call in flight: waits %v, want 0 (a lone caller never waits)", d)
	}
	tr.Claimed(key(2))
	tr.Claimed(key(3))
	if d, target := tr.Wait(); d != time.Millisecond || target != 3 {
		t.Fatalf("three in flight: Wait = %v, %d; want 1ms, 3", d, target)
	}
	tr.Completing(key(1))
	if d, target := tr.Wait(); d != time.Millisecond || target != 2 {
		t.Fatalf("two in flight: Wait = %v, %d; want 1ms, 2", d, target)
	}
	tr.Completing(key(2))
	tr.Completing(key(9)) // never claimed: nothing
	if d, _ := tr.Wait(); d != 0 || tr.InFlight() != 1 {
		t.Fatalf("one in flight: waits %v with %d in flight", d, tr.InFlight())
	}
}

// TestOldClaimsForgotten: a call claimed longer ago than Recent no longer
// counts (slow, or its completion never comes).
func TestOldClaimsForgotten(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	tr := New(Options{Max: time.Millisecond, Siblings: 2, Recent: 20 * time.Millisecond, Now: c.now})
	tr.Claimed(key(1))
	tr.Claimed(key(2))
	if d, _ := tr.Wait(); d == 0 {
		t.Fatal("two fresh calls: no wait")
	}
	c.add(15 * time.Millisecond)
	tr.Claimed(key(3))
	c.add(10 * time.Millisecond) // 1 and 2 are 25 ms old, 3 is 10 ms
	if d, _ := tr.Wait(); d != 0 || tr.InFlight() != 1 {
		t.Fatalf("after Recent: waits %v with %d in flight, want 0 and 1", d, tr.InFlight())
	}
}

// TestLingerWokenByArrivals: a lingering leader returns as soon as the
// queue reaches the target, long before Max.
func TestLingerWokenByArrivals(t *testing.T) {
	tr := New(Options{Max: time.Hour, Siblings: 2})
	for i := range 4 {
		tr.Claimed(key(i))
	}
	done := make(chan bool)
	go func() { done <- tr.Linger(1) }()
	for {
		tr.mu.Lock()
		waiting := tr.wake != nil
		tr.mu.Unlock()
		if waiting {
			break
		}
		time.Sleep(time.Millisecond)
	}
	tr.Arrived(2) // below the target: 1 + (4+1)/2 = 3
	select {
	case <-done:
		t.Fatal("woken below the target")
	case <-time.After(20 * time.Millisecond):
	}
	tr.Arrived(3)
	if !<-done {
		t.Fatal("Linger reports it did not wait")
	}
	if tr.Lingered() != 1 {
		t.Fatalf("Lingered = %d, want 1", tr.Lingered())
	}
	// A leader that finds the target queued already does not wait.
	if tr.Linger(3) {
		t.Fatal("waited with the target queued")
	}
}

// TestLingerEndsAtMax: without arrivals the wait ends at Max.
func TestLingerEndsAtMax(t *testing.T) {
	tr := New(Options{Max: 2 * time.Millisecond, Siblings: 1})
	tr.Claimed(key(1))
	if !tr.Linger(1) {
		t.Fatal("did not wait with a sibling in flight")
	}
	tr.Arrived(10) // nobody waits: nothing happens
}
