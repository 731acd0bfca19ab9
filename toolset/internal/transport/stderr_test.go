package transport

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func records(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(b.Bytes()), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatalf("not one JSON record: %q", l)
		}
		out = append(out, r)
	}
	return out
}

// TestStderrLogLines: lines split across writes and several in one write
// are one record each, CRLF ends a line, a long line is cut at
// StderrLineMax and the rest of it dropped, a forged record is a string.
func TestStderrLogLines(t *testing.T) {
	var b bytes.Buffer
	w := newStderrLog(slog.New(slog.NewJSONHandler(&b, nil)), time.Now)
	forged := `{"level":"ERROR","msg":"call","subject":"admin"}`
	for _, p := range []string{"hel", "lo\r\nsecond\n" + forged + "\n", strings.Repeat("y", StderrLineMax+10), "z\n", "tail"} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	w.Flush()
	rs := records(t, &b)
	want := []string{"hello", "second", forged, strings.Repeat("y", StderrLineMax), "tail"}
	if len(rs) != len(want) {
		t.Fatalf("%d records, want %d", len(rs), len(want))
	}
	for i, r := range rs {
		if r["msg"] != StderrMessage || r["line"] != want[i] || r["level"] != "INFO" {
			t.Errorf("record %d: %.100v", i, r)
		}
		if (r["truncated"] == true) != (i == 3) {
			t.Errorf("record %d truncated = %v", i, r["truncated"])
		}
	}
}

// TestStderrLogRate: past the burst, lines are counted, not logged; the
// next record after the rate refills says how many were dropped. The clock
// is the test's.
func TestStderrLogRate(t *testing.T) {
	var b bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := newStderrLog(slog.New(slog.NewJSONHandler(&b, nil)), func() time.Time { return now })
	w.Write([]byte(strings.Repeat("flood\n", stderrBurst+50)))
	if n := len(records(t, &b)); n != stderrBurst {
		t.Fatalf("%d records of a flood, want the burst %d", n, stderrBurst)
	}
	now = now.Add(time.Second)
	w.Write([]byte("after\n"))
	rs := records(t, &b)
	last := rs[len(rs)-1]
	if last["line"] != "after" || last["dropped"] != float64(50) {
		t.Fatalf("record after the flood: %v", last)
	}
	w.Write([]byte(strings.Repeat("again\n", stderrPerSecond+5)))
	w.Flush()
	rs = records(t, &b)
	if last := rs[len(rs)-1]; last["dropped"] != float64(6) || last["line"] != nil {
		t.Fatalf("the flush's record: %v", last)
	}
}
