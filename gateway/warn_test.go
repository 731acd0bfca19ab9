package gateway

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartWarningsNameConfigFields: a protection the config leaves off
// is warned of by the config field that turns it on, never by the Go
// option behind it; one that is on is not warned of.
func TestStartWarningsNameConfigFields(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		want, not   []string
	}{
		{"off", "", []string{"rateLimit is not set", "sessions.maxPerSubject is not set"}, nil},
		{"on", "rateLimit: {maxCalls: 10, window: 60s}\nsessions: {maxPerSubject: 4}\n", nil, []string{"rateLimit is not set", "sessions.maxPerSubject"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			yml := "store: sqlite:" + filepath.Join(dir, "gh.db") + "\n" + tc.extra
			cfg, err := ParseConfig([]byte(yml), filepath.Join(dir, "gatehouse.yaml"), dir)
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			g, err := New(context.Background(), cfg, &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := g.Handler(); err != nil { // the HTTP front is made too
				t.Fatal(err)
			}
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			out := logs.String()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("no warning %q in:\n%s", w, out)
				}
			}
			for _, n := range append(tc.not, "Options.", "HTTPOptions.") {
				if strings.Contains(out, n) {
					t.Errorf("the log says %q:\n%s", n, out)
				}
			}
		})
	}
}
