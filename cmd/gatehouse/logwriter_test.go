package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// writes is an io.Writer that keeps what it is given, write by write.
type writes struct {
	mu sync.Mutex
	w  []string
}

func (c *writes) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.w = append(c.w, string(p))
	return len(p), nil
}

func (c *writes) get() (n int, all string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.w), strings.Join(c.w, "")
}

// callLine logs the gateway's per-call line (gateway/pipeline.go finish)
// with hostile strings.
func callLine(log *slog.Logger, i int) {
	log.LogAttrs(context.Background(), slog.LevelInfo, "call",
		slog.String("subject", fmt.Sprintf("s\"%d\n\x00\xff<", i)),
		slog.String("tool", "t\u2028\\"),
		slog.String("outcome", "ok"),
		slog.Bool("replayed", false),
		slog.Float64("duration_ms", 1.234),
		slog.String("front", "bytes"),
		slog.String("sender", "bytes"),
	)
}

// TestLogWriterBatches: serve's call lines reach stderr in a few writes,
// not one a line, within logFlushEvery, each line whole and as the JSON
// handler writes it, in order.
func TestLogWriterBatches(t *testing.T) {
	var out writes
	lw := newLogWriter(&out)
	defer lw.Close()
	log, err := newLogger(lw, "json")
	if err != nil {
		t.Fatal(err)
	}
	const n = 200 // about 40 KB: under logBufMax
	start := time.Now()
	for i := range n {
		callLine(log, i)
	}
	if k, _ := out.get(); k != 0 && time.Since(start) < logFlushEvery/2 {
		t.Errorf("%d writes before the interval passed", k)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, all := out.get(); strings.Count(all, "\n") == n {
			break
		}
		if time.Now().After(deadline) {
			_, all := out.get()
			t.Fatalf("%d of %d lines written after 5s", strings.Count(all, "\n"), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	k, all := out.get()
	if k > 5 {
		t.Errorf("%d lines took %d writes", n, k)
	}
	// The same records through a plain JSON handler: the same lines but
	// for the time.
	var plain bytes.Buffer
	pl := slog.New(slog.NewJSONHandler(&plain, nil))
	for i := range n {
		callLine(pl, i)
	}
	got, want := strings.Split(all, "\n"), strings.Split(plain.String(), "\n")
	for i := range n {
		var g, w map[string]any
		if json.Unmarshal([]byte(got[i]), &g) != nil || json.Unmarshal([]byte(want[i]), &w) != nil {
			t.Fatalf("line %d is not JSON: %q", i, got[i])
		}
		delete(g, "time")
		delete(w, "time")
		if fmt.Sprint(g) != fmt.Sprint(w) || g["subject"] != fmt.Sprintf("s\"%d\n\x00\ufffd<", i) {
			t.Fatalf("line %d: %v, want %v", i, g, w)
		}
	}
}

// TestLogWriterWarnsAtOnce: a warning is written before Warn returns,
// after the lines before it; Close writes what waits; lines after Close
// are written as they come.
func TestLogWriterWarnsAtOnce(t *testing.T) {
	var out writes
	lw := newLogWriter(&out)
	log, err := newLogger(lw, "text")
	if err != nil {
		t.Fatal(err)
	}
	log.With("part", "x").Info("first")
	log.WithGroup("g").Warn("second", "k", 1)
	k, all := out.get()
	if k != 1 || !strings.Contains(all, "msg=first part=x\n") || !strings.HasSuffix(all, "msg=second g.k=1\n") {
		t.Fatalf("after a warning: %d writes %q, want one with both lines", k, all)
	}
	log.Info("third")
	log.Debug("not logged")
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	if k, all = out.get(); k != 2 || !strings.HasSuffix(all, "msg=third\n") {
		t.Fatalf("after Close: %d writes %q", k, all)
	}
	log.Info("fourth")
	if k, all = out.get(); k != 3 || !strings.HasSuffix(all, "msg=fourth\n") {
		t.Fatalf("a line after Close: %d writes %q", k, all)
	}
}

// TestLogWriterBound: lines past logBufMax are written by the line that
// crosses it, not kept.
func TestLogWriterBound(t *testing.T) {
	var out writes
	lw := newLogWriter(&out)
	defer lw.Close()
	line := []byte(strings.Repeat("x", 1023) + "\n")
	for range logBufMax / len(line) {
		_, _ = lw.Write(line)
	}
	k, all := out.get()
	if k != 1 || len(all) != logBufMax {
		t.Fatalf("%d writes of %d bytes after %d bytes, want 1 of all of them", k, len(all), logBufMax)
	}
}

// TestLogWriterConcurrent: lines logged from many goroutines are each
// written whole, once.
func TestLogWriterConcurrent(t *testing.T) {
	var out writes
	lw := newLogWriter(&out)
	log, _ := newLogger(lw, "json")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 300 {
				callLine(log, g*1000+i)
				if i%100 == 0 {
					log.Warn("w")
				}
			}
		})
	}
	wg.Wait()
	_ = lw.Close()
	_, all := out.get()
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(all, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("a line that is not whole: %q", l)
		}
		if m["msg"] == "call" {
			s := m["subject"].(string)
			if seen[s] {
				t.Fatalf("line %q twice", l)
			}
			seen[s] = true
		}
	}
	if len(seen) != 8*300 {
		t.Fatalf("%d call lines, want %d", len(seen), 8*300)
	}
}

// BenchmarkCallLine is the per-call line's cost, through serve's logger
// and through a plain JSON handler, both onto a file.
func BenchmarkCallLine(b *testing.B) {
	for _, buffered := range []bool{false, true} {
		b.Run(fmt.Sprintf("buffered=%v", buffered), func(b *testing.B) {
			f, err := os.Create(b.TempDir() + "/log")
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			log := slog.New(slog.NewJSONHandler(f, nil))
			if buffered {
				lw := newLogWriter(f)
				defer lw.Close()
				log, _ = newLogger(lw, "json")
			}
			for i := 0; b.Loop(); i++ {
				callLine(log, i)
			}
		})
	}
}
