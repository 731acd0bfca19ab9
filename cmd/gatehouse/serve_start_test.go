package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeSaysItStarts: the first thing serve logs, before it opens the
// store or connects a server, is that it is starting (with its version
// and config); it says it is connecting servers before it does; and it
// says where it serves once it does.
func TestServeSaysItStarts(t *testing.T) {
	dir := writeTree(t, map[string]string{"gatehouse.yaml": "listen: 127.0.0.1:0\nstore: sqlite:./gh.db\n"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"serve", "--config", filepath.Join(dir, "gatehouse.yaml")}, &bytes.Buffer{}, &logs)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "gatehouse: serving") {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("serve did not say it serves within 30s:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("serve exited %d after its context ended", code)
	}
	lines := strings.Split(logs.String(), "\n")
	if !strings.Contains(lines[0], `msg="gatehouse: starting"`) || !strings.Contains(lines[0], "version=") || !strings.Contains(lines[0], "gatehouse.yaml") {
		t.Errorf("first line %q: want gatehouse: starting with the version and the config", lines[0])
	}
	out := logs.String()
	if c, r := strings.Index(out, "gateway: connecting servers"), strings.Index(out, "gateway: ready"); c < 0 || r < 0 || c > r {
		t.Errorf("connecting servers at %d, ready at %d: want connecting said first:\n%s", c, r, out)
	}
}
