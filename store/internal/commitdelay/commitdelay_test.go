package commitdelay

import (
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/testclock"
	"github.com/gatehouse-dev/gatehouse/store"
)

func key(i int) store.RecordKey {
	return store.RecordKey{Scope: "s", RunID: "r", ToolCallID: fmt.Sprint(i)}
}

func TestOffAndNil(t *testing.T) {
	if tr := New(Options{}); tr != nil {
		t.Fatalf("New with Siblings 0 = %v, want nil (never yields)", tr)
	}
	var tr *Tracker
	tr.Claimed(key(1))
	tr.Completing(key(1))
	if tr.Yield(1) || tr.InFlight() != 0 || tr.Yielded() != 0 {
		t.Fatal("a nil Tracker yields")
	}
}

// TestSiblings: a leader yields only when alone in the queue and while at
// least Siblings other calls are in flight (claimed, not completing).
func TestSiblings(t *testing.T) {
	tr := New(Defaults())
	tr.Claimed(key(1))
	if tr.Yield(1) {
		t.Fatal("one call in flight: yielded (a lone caller never does)")
	}
	tr.Claimed(key(2))
	tr.Claimed(key(3))
	if tr.Yield(2) {
		t.Fatal("yielded with another op queued already")
	}
	if !tr.Yield(1) {
		t.Fatal("three in flight: did not yield")
	}
	tr.Completing(key(1))
	tr.Completing(key(9)) // never claimed: nothing
	if !tr.Yield(1) || tr.InFlight() != 2 {
		t.Fatalf("two in flight (%d): did not yield", tr.InFlight())
	}
	tr.Completing(key(2))
	if tr.Yield(1) || tr.Yielded() != 2 {
		t.Fatalf("one in flight: yielded; %d yields in all, want 2", tr.Yielded())
	}
}

// TestOldClaimsForgotten: a call claimed longer ago than Recent no longer
// counts (slow, or its completion never comes).
func TestOldClaimsForgotten(t *testing.T) {
	c := testclock.New(time.Unix(1000, 0))
	tr := New(Options{Siblings: 2, Recent: 20 * time.Millisecond, Now: c.Now})
	tr.Claimed(key(1))
	tr.Claimed(key(2))
	if tr.InFlight() != 2 {
		t.Fatal("two fresh calls are not in flight")
	}
	c.Advance(15 * time.Millisecond)
	tr.Claimed(key(3))
	c.Advance(10 * time.Millisecond) // 1 and 2 are 25 ms old, 3 is 10 ms
	if n := tr.InFlight(); n != 1 || tr.Yield(1) {
		t.Fatalf("after Recent: %d in flight, want 1 and no yield", n)
	}
}
