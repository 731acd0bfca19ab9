package main

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// logFlushEvery is how long a log line of serve may wait in memory before
// it is written to stderr: what a crash (SIGKILL, a runtime fatal error, a
// panic off the command's goroutine) may lose of the log.
const logFlushEvery = 100 * time.Millisecond

// logBufMax is how many bytes of lines may wait: past it, the line that
// crosses it is written at once, with those before it.
const logBufMax = 64 << 10

// logWriter is serve's stderr for the log: lines wait in memory for up to
// logFlushEvery and are written together, one write(2) for many lines
// instead of one a line (the per-call line was about a tenth of the
// gateway's CPU, most of it the system call). Flush writes what waits at
// once (serve's logger does after every warning and error); Close writes
// it and passes later lines straight through.
type logWriter struct {
	w     io.Writer
	timer *time.Timer // fires flush; armed while lines wait

	wmu   sync.Mutex // orders the writes to w
	mu    sync.Mutex // guards what follows
	buf   []byte     // the lines waiting
	spare []byte     // the other buffer, while not being written
	armed bool
	done  bool
}

// newLogWriter returns a logWriter over w; Close it.
func newLogWriter(w io.Writer) *logWriter {
	l := &logWriter{w: w, buf: make([]byte, 0, 4096), spare: make([]byte, 0, 4096)}
	l.timer = time.AfterFunc(time.Hour, l.Flush)
	l.timer.Stop()
	return l
}

// Write keeps a copy of p (one or more whole lines, as a slog handler
// writes them) to be written within logFlushEvery. It never fails: an
// error of the underlying writer drops lines, as a log must not stop the
// gateway.
func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	if l.done {
		l.mu.Unlock()
		l.wmu.Lock()
		defer l.wmu.Unlock()
		_, _ = l.w.Write(p)
		return len(p), nil
	}
	l.buf = append(l.buf, p...)
	full := len(l.buf) >= logBufMax
	if !full && !l.armed {
		l.armed = true
		l.timer.Reset(logFlushEvery)
	}
	l.mu.Unlock()
	if full {
		l.Flush()
	}
	return len(p), nil
}

// Flush writes the lines waiting, if any, in one write.
func (l *logWriter) Flush() {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	b := l.buf
	l.buf, l.spare = l.spare[:0], nil
	if l.armed {
		l.armed = false
		l.timer.Stop()
	}
	l.mu.Unlock()
	if len(b) > 0 {
		_, _ = l.w.Write(b)
	}
	l.mu.Lock()
	if cap(b) > logBufMax*2 {
		b = make([]byte, 0, 4096) // a burst's buffer is not kept
	}
	l.spare = b[:0]
	l.mu.Unlock()
}

// Close writes what waits; later lines are written as they come.
func (l *logWriter) Close() error {
	l.Flush()
	l.mu.Lock()
	l.done = true
	l.timer.Stop()
	l.mu.Unlock()
	// A line written between the Flush and done waits still: write it.
	l.Flush()
	return nil
}

// flushHandler is a slog.Handler that writes the lines waiting in its
// logWriter after every record at Warn or above: a warning or an error is
// on stderr when the call that logs it returns, with everything before
// it, and is not lost to a crash that follows it.
type flushHandler struct {
	slog.Handler
	w *logWriter
}

func (h flushHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		h.w.Flush()
	}
	return err
}

func (h flushHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushHandler{h.Handler.WithAttrs(attrs), h.w}
}

func (h flushHandler) WithGroup(name string) slog.Handler {
	return flushHandler{h.Handler.WithGroup(name), h.w}
}
