package relist

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestSkippedLog: a server that is retried gets one Warn that says so
// with the schedule, a Debug a failed try with its number, one Info when
// it joined with its tries; one refused on a try gets a Warn that it is
// retried no more; one never retried a Warn that says why, and no Tries.
func TestSkippedLog(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	records := func() []map[string]any {
		var out []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var r map[string]any
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatalf("%v: %q", err, l)
			}
			out = append(out, r)
		}
		buf.Reset()
		return out
	}

	tries := Skipped(log, "late", "connection-failure", "down", Retried, time.Minute)
	if tries == nil {
		t.Fatal("a retried server has no Tries")
	}
	tries.Try()
	if tries.Failed("connection-failure", "still down", true) {
		t.Fatal("an unreachable server's tries ended")
	}
	tries.Try()
	tries.Joined()
	rs := records()
	want := []map[string]any{
		{"level": "WARN", "msg": MsgWillRetry, "server": "late", "rule": "connection-failure", "reason": "down",
			"retry": "after 1s, then doubling the wait up to every 1m0s (jittered) while the toolset is open"},
		{"level": "DEBUG", "msg": MsgTryFailed, "server": "late", "try": 1.0, "rule": "connection-failure", "reason": "still down"},
		{"level": "INFO", "msg": MsgJoined, "server": "late", "tries": 2.0},
	}
	if len(rs) != len(want) {
		t.Fatalf("records %v", rs)
	}
	for i, w := range want {
		for k, v := range w {
			if rs[i][k] != v {
				t.Errorf("record %d: %s = %v, want %v (%v)", i, k, rs[i][k], v, rs[i])
			}
		}
	}
	if after, _ := rs[2]["after"].(string); after == "" {
		t.Errorf("joined without after: %v", rs[2])
	}

	tries = Skipped(log, "rebound", "connection-failure", "down", Retried, 500*time.Millisecond)
	tries.Try()
	if !tries.Failed("unsafe-address", "refused", false) {
		t.Fatal("a refused try did not end the tries")
	}
	rs = records()
	if len(rs) != 2 || rs[0]["retry"] != "every 500ms (jittered) while the toolset is open" ||
		rs[1]["level"] != "WARN" || rs[1]["msg"] != MsgNotRetried || rs[1]["try"] != 1.0 ||
		!strings.HasPrefix(rs[1]["retry"].(string), "no more: the configuration decides") {
		t.Fatalf("records %v", rs)
	}

	for why, text := range map[Why]string{Refused: "never: the configuration decides", Unwoken: "never: a wake never connects"} {
		if Skipped(log, "x", "host-not-allowed", "refused", why, time.Minute) != nil {
			t.Fatalf("%v: a server not retried has Tries", why)
		}
		rs = records()
		if len(rs) != 1 || rs[0]["level"] != "WARN" || rs[0]["msg"] != MsgNotRetried || !strings.HasPrefix(rs[0]["retry"].(string), text) {
			t.Fatalf("%v: records %v", why, rs)
		}
	}
}

// TestWhyOf: only an unreachable server neither refused by Open nor left
// unwoken is retried; Longest is a minute or a shorter recheck.
func TestWhyOf(t *testing.T) {
	for _, c := range []struct {
		decided, unwoken, unreachable bool
		want                          Why
	}{
		{false, false, true, Retried},
		{false, false, false, Refused},
		{true, false, true, Refused},
		{false, true, true, Unwoken},
	} {
		if got := WhyOf(c.decided, c.unwoken, c.unreachable); got != c.want {
			t.Errorf("WhyOf(%v, %v, %v) = %v, want %v", c.decided, c.unwoken, c.unreachable, got, c.want)
		}
	}
	if Longest(0) != time.Minute || Longest(time.Hour) != time.Minute || Longest(10*time.Second) != 10*time.Second {
		t.Error("Longest")
	}
}
