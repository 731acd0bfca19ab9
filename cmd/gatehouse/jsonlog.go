package main

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/jsonscan"
)

// jsonHandler is serve's --log-format json handler: the lines
// slog.JSONHandler writes (with nil options), byte for byte, written
// without its machinery for the records whose attributes, and the
// logger's own (With), are all plain values: strings, integers, finite
// floats, booleans, durations and times. Every line the gateway logs per
// call is one. Any other record (an error, a LogValuer, a group, any other
// value, a year outside 0-9999) goes to the slog.JSONHandler beside it,
// as does everything after a WithGroup.
//
// What it saves: slog.JSONHandler writes a float through encoding/json (an
// encoder, reflection and a buffer a line) and keeps a handler state a
// record; the per-call line was 2.7% of a plain call's gateway CPU, the
// float alone 0.8% (docs/BENCHMARKS.md). TestJSONHandlerLines and
// FuzzJSONHandler hold it to slog.JSONHandler's bytes.
type jsonHandler struct {
	slow slog.Handler
	w    io.Writer
	// pre is the With attributes as written (",\"k\":v" each); plain
	// says that every one was plain and no group is open.
	pre   []byte
	plain bool
}

// newJSONHandler returns the handler writing lines to w, which must take
// each Write whole (serve's logWriter does).
func newJSONHandler(w io.Writer) *jsonHandler {
	return &jsonHandler{slow: slog.NewJSONHandler(w, nil), w: w, plain: true}
}

func (h *jsonHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.slow.Enabled(ctx, l) }

var jsonLineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func (h *jsonHandler) Handle(ctx context.Context, r slog.Record) error {
	if !h.plain {
		return h.slow.Handle(ctx, r)
	}
	bp := jsonLineBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 16<<10 {
			jsonLineBufs.Put(bp)
		}
	}()
	b, ok := h.line((*bp)[:0], r)
	*bp = b
	if !ok {
		return h.slow.Handle(ctx, r)
	}
	_, err := h.w.Write(b)
	return err
}

// line appends r's line to b; false when r is not plain.
func (h *jsonHandler) line(b []byte, r slog.Record) ([]byte, bool) {
	b = append(b, '{')
	if !r.Time.IsZero() {
		t := r.Time.Round(0)
		if y := t.Year(); y < 0 || y >= 10000 {
			return b, false
		}
		b = append(b, `"time":"`...)
		b = t.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `",`...)
	}
	b = append(b, `"level":`...)
	b = jsonscan.AppendSlogString(b, r.Level.String())
	b = append(b, `,"msg":`...)
	b = jsonscan.AppendSlogString(b, r.Message)
	b = append(b, h.pre...)
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		b, ok = appendPlainAttr(b, a)
		return ok
	})
	if !ok {
		return b, false
	}
	return append(b, '}', '\n'), true
}

func (h *jsonHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	n := &jsonHandler{slow: h.slow.WithAttrs(attrs), w: h.w, plain: h.plain}
	if n.plain {
		pre := append([]byte(nil), h.pre...)
		for _, a := range attrs {
			var ok bool
			if pre, ok = appendPlainAttr(pre, a); !ok {
				n.plain = false
				break
			}
		}
		n.pre = pre
	}
	return n
}

func (h *jsonHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &jsonHandler{slow: h.slow.WithGroup(name), w: h.w}
}

// appendPlainAttr appends ,"key":value for a plain a, as slog.JSONHandler
// writes it; false (b unspecified) for any other.
func appendPlainAttr(b []byte, a slog.Attr) ([]byte, bool) {
	v := a.Value
	switch v.Kind() {
	case slog.KindString, slog.KindInt64, slog.KindUint64, slog.KindBool, slog.KindDuration:
	case slog.KindFloat64:
		// encoding/json's form, which slog.JSONHandler uses: 'f' between
		// 1e-6 and 1e21; the rest (and NaN, Inf) is not plain here.
		f := math.Abs(v.Float64())
		if math.IsNaN(f) || f != 0 && (f < 1e-6 || f >= 1e21) {
			return b, false
		}
	case slog.KindTime:
		if y := v.Time().Year(); y < 0 || y >= 10000 {
			return b, false
		}
	default:
		return b, false
	}
	b = append(b, ',')
	b = jsonscan.AppendSlogString(b, a.Key)
	b = append(b, ':')
	switch v.Kind() {
	case slog.KindString:
		b = jsonscan.AppendSlogString(b, v.String())
	case slog.KindInt64:
		b = strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		b = strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindBool:
		b = strconv.AppendBool(b, v.Bool())
	case slog.KindDuration:
		b = strconv.AppendInt(b, int64(v.Duration()), 10)
	case slog.KindFloat64:
		b = strconv.AppendFloat(b, v.Float64(), 'f', -1, 64)
	case slog.KindTime:
		b = append(b, '"')
		b = v.Time().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	return b, true
}
