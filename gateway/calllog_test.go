package gateway

import (
	"bytes"
	"context"
	"log/slog"
	"regexp"
	"testing"
	"time"
)

// TestCallLogLine: logCall writes what Logger.LogAttrs wrote for the call
// line, byte for byte but the time, in JSON and in text, with the
// logger's own attributes and strings to escape; below Info, nothing.
func TestCallLogLine(t *testing.T) {
	times := regexp.MustCompile(`("time":"[^"]*"|time=\S+)`)
	out := &callOutcome{label: "ok", replayed: true, sender: "bytes"}
	for _, format := range []string{"json", "text"} {
		var got, want bytes.Buffer
		mk := func(buf *bytes.Buffer, level slog.Level) *slog.Logger {
			o := &slog.HandlerOptions{Level: level}
			if format == "json" {
				return slog.New(slog.NewJSONHandler(buf, o)).With("instance", "gw-1")
			}
			return slog.New(slog.NewTextHandler(buf, o)).With("instance", "gw-1")
		}
		d := 1234567 * time.Nanosecond
		logCall(mk(&got, slog.LevelInfo), "alice \"q\"", "pay\n", "latest", out, d)
		mk(&want, slog.LevelInfo).LogAttrs(context.Background(), slog.LevelInfo, "call",
			slog.String("subject", "alice \"q\""), slog.String("tool", "pay\n"), slog.String("outcome", "ok"),
			slog.Bool("replayed", true), slog.Float64("duration_ms", 1.234),
			slog.String("front", "latest"), slog.String("sender", "bytes"))
		g, w := times.ReplaceAllString(got.String(), "T"), times.ReplaceAllString(want.String(), "T")
		if g != w || g == "" {
			t.Errorf("%s: logCall wrote\n%s\nLogAttrs writes\n%s", format, got.String(), want.String())
		}
		got.Reset()
		logCall(mk(&got, slog.LevelWarn), "alice", "pay", "latest", out, d)
		if got.Len() != 0 {
			t.Errorf("%s at Warn: wrote %q", format, got.String())
		}
	}
}
