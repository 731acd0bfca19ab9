package main

import (
	"log/slog"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// TestHeapFloorFlag: a floor below 0 or past the bound is a usage error
// that names the flag, before anything is opened.
func TestHeapFloorFlag(t *testing.T) {
	for _, v := range []string{"-1", "1048577", "99999999999999"} {
		code, _, stderr := run(t, "serve", "--heap-floor-mib", v, "--config", "/nonexistent/gatehouse.yaml")
		if code != 2 || !strings.Contains(stderr, "--heap-floor-mib must be from 0") {
			t.Errorf("--heap-floor-mib %s: exit %d, stderr %q; want a usage error naming the flag", v, code, stderr)
		}
	}
	code, _, stderr := run(t, "serve", "--heap-floor-mib", "lots")
	if code != 2 || !strings.Contains(stderr, "heap-floor-mib") {
		t.Errorf("--heap-floor-mib lots: exit %d, stderr %q; want a usage error", code, stderr)
	}
}

// TestStartHeapFloor: serve's floor starts unless it is 0 or the
// environment tunes the collector (GOGC, GOMEMLIMIT); started, it raises
// GOGC after a collection, and Stop gives it back.
func TestStartHeapFloor(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	if f := startHeapFloor(0, log); f != nil {
		f.Stop()
		t.Fatal("a floor of 0 started")
	}
	for _, v := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Setenv(v, "400")
		if f := startHeapFloor(32, log); f != nil {
			f.Stop()
			t.Fatalf("a floor started with %s set", v)
		}
		t.Setenv(v, "")
	}
	gogc := func() int {
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(s)
		return int(s[0].Value.Uint64())
	}
	base := gogc()
	f := startHeapFloor(32, log)
	if f == nil {
		t.Fatal("no floor started with defaults")
	}
	defer f.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for gogc() <= base {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC still %d after 10 s of collections with a 32 MiB floor", gogc())
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	f.Stop()
	if got := gogc(); got != base {
		t.Fatalf("GOGC %d after Stop, want %d", got, base)
	}
}
