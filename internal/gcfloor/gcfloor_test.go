package gcfloor_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/internal/gcfloor"
)

// The tests change the process's GC settings: none runs in parallel, and
// each leaves GOGC as it found it.
func TestMain(m *testing.M) {
	if os.Getenv(freshEnv) == "1" {
		fresh()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// freshEnv makes the test binary run fresh instead of its tests: a
// process that has not collected yet (TestStartBeforeTheFirstCollection).
const freshEnv = "GCFLOOR_TEST_FRESH"

// fresh starts a floor in a process that has not collected yet and prints
// what it saw: the collections before Start, GOGC right after it (the
// floor's and the runtime's), and the floor's GOGC after a collection.
func fresh() {
	cycles := read("/gc/cycles/total:gc-cycles")
	f := gcfloor.Start(64 << 20)
	early, runtimeEarly := f.Percent(), gogc()
	deadline := time.Now().Add(10 * time.Second)
	for f.Percent() == early && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	fmt.Printf("cycles=%d early=%d runtime=%d after=%d\n", cycles, early, runtimeEarly, f.Percent())
	f.Stop()
}

func read(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func gogc() int { return int(read("/gc/gogc:percent")) }

// collect runs collections until the floor has adjusted after one (its
// adjustment runs after the collection, on the runtime's cleanup
// goroutine), or fails.
func collect(t *testing.T, f *gcfloor.Floor, until func(p int) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !until(f.Percent()) {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC %d after 10 s of collections (the floor never adjusted as expected)", f.Percent())
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

var sink []byte

// garbage allocates n bytes in 4 KiB pieces nothing keeps, and returns how
// many collections ran meanwhile.
func garbage(n int) uint64 {
	before := read("/gc/cycles/total:gc-cycles")
	for range n / 4096 {
		sink = make([]byte, 4096)
	}
	sink = nil
	return read("/gc/cycles/total:gc-cycles") - before
}

// TestFloorCollectsLessOften: with a small live heap, a 64 MiB floor lets
// 48 MiB of garbage go by with at most one collection, where Go's default
// runs one every 4 MiB or so; Stop gives GOGC back.
func TestFloorCollectsLessOften(t *testing.T) {
	base := gogc()
	runtime.GC()
	without := garbage(48 << 20)
	f := gcfloor.Start(64 << 20)
	defer f.Stop()
	collect(t, f, func(p int) bool { return p > base })
	runtime.GC()
	runtime.GC() // the goal now follows a measured live heap
	live := read("/gc/heap/live:bytes")
	goal := read("/gc/heap/goal:bytes")
	if goal < live+64<<20 {
		t.Fatalf("heap goal %d B with %d B live: want at least the live heap and the 64 MiB floor", goal, live)
	}
	with := garbage(48 << 20)
	if with > 1 || without < 4 {
		t.Fatalf("48 MiB of garbage: %d collections with the floor, %d without; want at most 1 with, and at least 4 without", with, without)
	}
	if got := gogc(); got != f.Percent() {
		t.Fatalf("GOGC %d, the floor says it set %d", got, f.Percent())
	}
	f.Stop()
	if got := gogc(); got != base {
		t.Fatalf("GOGC %d after Stop, want %d as at Start", got, base)
	}
	runtime.GC()
	runtime.GC()
	if got := gogc(); got != base {
		t.Fatalf("GOGC %d after collections past Stop, want %d", got, base)
	}
}

// TestFloorStepsAsideForALargeLiveHeap: once the live heap is larger than
// the floor, GOGC is what it was at Start (Go's pacing unchanged); it rises
// again when the heap shrinks.
func TestFloorStepsAsideForALargeLiveHeap(t *testing.T) {
	base := gogc()
	f := gcfloor.Start(8 << 20)
	defer f.Stop()
	collect(t, f, func(p int) bool { return p > base })
	keep := make([][]byte, 0, 24<<20/4096)
	for range cap(keep) {
		keep = append(keep, make([]byte, 4096))
	}
	collect(t, f, func(p int) bool { return p == base })
	if got := gogc(); got != base {
		t.Fatalf("GOGC %d with %d B live over an 8 MiB floor, want %d", got, read("/gc/heap/live:bytes"), base)
	}
	runtime.KeepAlive(keep)
	keep = nil
	collect(t, f, func(p int) bool { return p > base })
}

// TestStartLeavesTheCollectorOff: with GOGC=off, Start changes nothing.
func TestStartLeavesTheCollectorOff(t *testing.T) {
	was := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(was)
	f := gcfloor.Start(64 << 20)
	defer f.Stop()
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	runtime.GC()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("GOGC %d after Start with the collector off, want it off", got)
	}
	f.Stop()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("GOGC %d after Stop with the collector off, want it off", got)
	}
}

// TestZeroFloorChangesNothing: Start(0) is Go's defaults.
func TestZeroFloorChangesNothing(t *testing.T) {
	base := gogc()
	f := gcfloor.Start(0)
	defer f.Stop()
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	runtime.GC()
	if got := gogc(); got != base || f.Percent() != base {
		t.Fatalf("GOGC %d (floor says %d) with a zero floor, want %d", got, f.Percent(), base)
	}
}

// TestStartBeforeTheFirstCollection: in a process that has not collected
// yet there is no live heap to compute a goal from, and Start sets
// nothing (a goal from a guess let the heap grow past the floor while a
// program started); the first collection sets it. Run in a child process:
// this one has collected long ago.
func TestStartBeforeTheFirstCollection(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), freshEnv+"=1", "GOGC=", "GOMEMLIMIT=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child: %v\n%s", err, out)
	}
	var cycles, early, runtimeEarly, after int
	line := strings.TrimSpace(string(out))
	if _, err := fmt.Sscanf(line, "cycles=%d early=%d runtime=%d after=%d", &cycles, &early, &runtimeEarly, &after); err != nil {
		t.Fatalf("the child printed %q: %v", line, err)
	}
	if cycles != 0 {
		t.Fatalf("the child had run %d collections before Start: it cannot show what Start does before the first", cycles)
	}
	if early != 100 || runtimeEarly != 100 {
		t.Fatalf("right after Start, before any collection: the floor's GOGC %d, the runtime's %d; want both 100 (nothing set)", early, runtimeEarly)
	}
	// Live heap under 1 MiB is counted as 1 MiB: 64 MiB past it is GOGC 6400.
	if after < 1000 {
		t.Fatalf("after the first collection GOGC %d, want the floor's (about 6400)", after)
	}
}
