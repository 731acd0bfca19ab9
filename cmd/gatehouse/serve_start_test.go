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

// TestServeConfigMistakes: a mistake in the config is one line naming the
// file, the field's YAML path, what was wrong and the fix (a near-miss
// key suggested), exit 2, and no pointer at --help, which has nothing to
// add; a bad store address says store: once, with where it came from.
func TestServeConfigMistakes(t *testing.T) {
	for _, tc := range []struct {
		yaml, env string
		want      []string
	}{
		{"ratelimit: {maxCalls: 5}\n", "", []string{"gh.yaml: ratelimit: unknown field \"ratelimit\" (fix: did you mean rateLimit?)"}},
		{"rateLimit: {maxCalls: 5, window: 5 minutes}\n", "", []string{"gh.yaml: rateLimit.window: \"5 minutes\" is not a duration", "500ms, 90s, 5m"}},
		{"store: 'bogus:x'\n", "", []string{"gh.yaml: store: invalid DSN: unknown DSN scheme"}},
		{"listen: 127.0.0.1:0\n", "bogus:x", []string{"$GATEHOUSE_STORE: invalid DSN: unknown DSN scheme"}},
	} {
		dir := writeTree(t, map[string]string{"gh.yaml": tc.yaml})
		t.Setenv("GATEHOUSE_STORE", tc.env)
		code, _, errOut := run(t, "serve", "--config", filepath.Join(dir, "gh.yaml"))
		var lines []string
		for l := range strings.Lines(errOut) {
			if !strings.Contains(l, "level=") { // the log's lines (starting) are not the error
				lines = append(lines, l)
			}
		}
		if code != 2 || len(lines) != 1 {
			t.Errorf("%q: exit %d, %d lines: %q; want 2 and one line", tc.yaml, code, len(lines), errOut)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(lines[0], w) {
				t.Errorf("%q: %q does not say %q", tc.yaml, lines[0], w)
			}
		}
		if strings.Count(lines[0], "store:") > 1 || strings.Contains(lines[0], "--help") {
			t.Errorf("%q: %q", tc.yaml, lines[0])
		}
	}
}
