package transport

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"time"
)

// Bounds of a stdio server's stderr in the log.
const (
	// StderrLineMax is the longest stderr line logged, in bytes; the rest
	// of a longer line is dropped and the record says "truncated".
	StderrLineMax = 4 << 10
	// stderrBurst lines are logged at once; then stderrPerSecond lines a
	// second. Lines over the rate are counted, not logged, and the next
	// record (or the child's last) says how many were dropped.
	stderrBurst     = 100
	stderrPerSecond = 20
)

// StderrMessage is the message of the log records that carry a stdio
// server's stderr lines.
const StderrMessage = "upstream stderr"

// stderrLog writes a child's stderr to a logger as data: each line is the
// value of one attribute ("line") of one INFO record, so a child that prints a
// log line of its own (JSON, ANSI escapes, a fake level) produces a string
// the handler quotes, never a record. Lines are bounded (StderrLineMax) and
// so is their rate.
type stderrLog struct {
	log *slog.Logger
	now func() time.Time

	mu        sync.Mutex
	buf       []byte // the current line, at most StderrLineMax bytes
	truncated bool   // the current line was longer
	tokens    float64
	last      time.Time
	dropped   int
}

func newStderrLog(log *slog.Logger, now func() time.Time) *stderrLog {
	return &stderrLog{log: log, now: now, tokens: stderrBurst}
}

// Write implements io.Writer. It never fails: the child must not block or
// die because of its stderr.
func (w *stderrLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := StderrLineMax - len(w.buf); len(chunk) > room {
			w.buf = append(w.buf, chunk[:room]...)
			w.truncated = true
		} else {
			w.buf = append(w.buf, chunk...)
		}
		if i < 0 {
			break
		}
		w.emitLocked()
		p = p[i+1:]
	}
	return n, nil
}

// Flush logs a last line without a newline, and how many lines were
// dropped since the last record.
func (w *stderrLog) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 || w.truncated {
		w.emitLocked()
	}
	if w.dropped > 0 {
		w.log.LogAttrs(context.Background(), slog.LevelWarn, StderrMessage, slog.Int("dropped", w.dropped))
		w.dropped = 0
	}
}

func (w *stderrLog) emitLocked() {
	line := string(bytes.TrimSuffix(w.buf, []byte{'\r'}))
	truncated := w.truncated
	w.buf, w.truncated = w.buf[:0], false
	now := w.now()
	if !w.last.IsZero() {
		w.tokens = min(stderrBurst, w.tokens+now.Sub(w.last).Seconds()*stderrPerSecond)
	}
	w.last = now
	if w.tokens < 1 {
		w.dropped++
		return
	}
	w.tokens--
	attrs := []slog.Attr{slog.String("line", line)}
	if truncated {
		attrs = append(attrs, slog.Bool("truncated", true))
	}
	if w.dropped > 0 {
		attrs = append(attrs, slog.Int("dropped", w.dropped))
		w.dropped = 0
	}
	// INFO: stderr is where MCP stdio servers write their logs (the
	// specification says so); a line is not a fault of the server's.
	w.log.LogAttrs(context.Background(), slog.LevelInfo, StderrMessage, attrs...)
}
