package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"math"
	"regexp"
	"testing"
	"time"
)

// bothLines logs the same calls through jsonHandler and slog.JSONHandler
// (each With'd by with, then log called with the logger) and returns the
// two outputs.
func bothLines(with []any, log func(*slog.Logger)) (fast, std string) {
	var a, b bytes.Buffer
	la := slog.New(newJSONHandler(&a))
	lb := slog.New(slog.NewJSONHandler(&b, nil))
	if len(with) > 0 {
		la, lb = la.With(with...), lb.With(with...)
	}
	log(la)
	log(lb)
	// Each line's own time is the clock's when it was logged: compare the
	// rest (an attribute's time is compared whole).
	return recordTime.ReplaceAllString(a.String(), `{"time":"T"`), recordTime.ReplaceAllString(b.String(), `{"time":"T"`)
}

var recordTime = regexp.MustCompile(`(?m)^\{"time":"[^"]*"`)

type stringer struct{}

func (stringer) String() string { return "s" }

// TestJSONHandlerLines: what jsonHandler writes is what slog.JSONHandler
// writes, for plain records (which it writes itself) and for every other
// kind of record (which it hands on), with and without the logger's own
// attributes and groups.
func TestJSONHandlerLines(t *testing.T) {
	at := time.Date(2026, 12, 6, 18, 0, 0, 123456789, time.FixedZone("x", 3600))
	cases := map[string]struct {
		with []any
		log  func(*slog.Logger)
	}{
		"the call line": {[]any{"instance", "gw-1"}, func(l *slog.Logger) {
			l.LogAttrs(context.Background(), slog.LevelInfo, "call", slog.String("subject", "alice"), slog.String("tool", "pay"),
				slog.String("outcome", "ok"), slog.Bool("replayed", false), slog.Float64("duration_ms", 0.234),
				slog.String("front", "latest"), slog.String("sender", "bytes"))
		}},
		"strings to escape": {nil, func(l *slog.Logger) {
			l.Info("a \"q\" \\ <b> & \n\r\t\x00\x1f\x7f é \u2028\u2029 \xff\xfe end", "k\"\n", "v<&>\x01", "", "empty key")
		}},
		"numbers": {nil, func(l *slog.Logger) {
			l.Warn("n", "i", -42, "u", uint64(math.MaxUint64), "f", 1.5, "f0", 0.0, "fneg0", math.Copysign(0, -1),
				"fsmall", 1e-6, "fbig", 1e20+1, "fint", 3.0, "d", 1500*time.Millisecond, "b", true)
		}},
		"floats encoding/json writes with an exponent": {nil, func(l *slog.Logger) {
			l.Info("e", "tiny", 1e-7, "huge", 1e21, "neg", -3e-9)
		}},
		"not finite": {nil, func(l *slog.Logger) { l.Info("nan", "nan", math.NaN(), "inf", math.Inf(1)) }},
		"times": {nil, func(l *slog.Logger) {
			l.Info("t", "at", at, "utc", at.UTC(), "far", time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC))
		}},
		"a record without a time": {nil, func(l *slog.Logger) {
			r := slog.NewRecord(time.Time{}, slog.LevelError+2, "no time", 0)
			r.AddAttrs(slog.Int("n", 1))
			_ = l.Handler().Handle(context.Background(), r)
		}},
		"an error, a stringer, a map": {nil, func(l *slog.Logger) {
			l.Error("x", "err", errors.New("boom <>"), "s", stringer{}, "m", map[string]int{"a": 1}, "nil", nil)
		}},
		"a group attribute":     {nil, func(l *slog.Logger) { l.Info("g", slog.Group("grp", "a", 1, "b", "c"), "after", 2) }},
		"a LogValuer":           {nil, func(l *slog.Logger) { l.Info("lv", "v", slog.AnyValue(stringer{})) }},
		"With an error":         {[]any{"err", errors.New("e")}, func(l *slog.Logger) { l.Info("after a With error", "n", 1) }},
		"With plain, then more": {[]any{"a", 1, "b", "two"}, func(l *slog.Logger) { l.With("c", 3.5).Info("m", "d", false) }},
		"WithGroup": {[]any{"a", 1}, func(l *slog.Logger) {
			l.WithGroup("g").With("b", 2).Info("grouped", "c", 3)
			l.WithGroup("g").Info("grouped, no attrs")
		}},
		"no attributes":   {nil, func(l *slog.Logger) { l.Info("bare") }},
		"below the level": {nil, func(l *slog.Logger) { l.Debug("not written", "a", 1) }},
	}
	for name, c := range cases {
		fast, std := bothLines(c.with, c.log)
		if fast != std {
			t.Errorf("%s:\n jsonHandler wrote %q\nslog writes      %q", name, fast, std)
		}
	}
}

// TestJSONHandlerWritesPlainLinesItself: the call line, and a line of
// every plain kind, are written by jsonHandler's own line (not handed on),
// so that the comparison above is of its bytes; others are handed on.
func TestJSONHandlerWritesPlainLinesItself(t *testing.T) {
	h := newJSONHandler(&bytes.Buffer{}).WithAttrs([]slog.Attr{slog.String("instance", "gw")}).(*jsonHandler)
	r := slog.NewRecord(time.Now(), slog.LevelInfo, "call", 0)
	r.AddAttrs(slog.String("s", "x"), slog.Int64("i", 1), slog.Uint64("u", 2), slog.Float64("f", 0.5),
		slog.Bool("b", true), slog.Duration("d", time.Second), slog.Time("t", time.Now()))
	if _, ok := h.line(nil, r); !ok || !h.plain {
		t.Fatal("a plain record was not written by the handler's own line")
	}
	for _, a := range []slog.Attr{slog.Any("e", errors.New("x")), slog.Float64("nan", math.NaN()), slog.Group("g", "a", 1)} {
		r := slog.NewRecord(time.Now(), slog.LevelInfo, "m", 0)
		r.AddAttrs(a)
		if _, ok := h.line(nil, r); ok {
			t.Errorf("%v: written as plain", a)
		}
	}
	if g := h.WithGroup("g").(*jsonHandler); g.plain {
		t.Error("after WithGroup the handler still writes lines itself")
	}
}

// FuzzJSONHandler: for records built from the input (a message, the
// logger's attributes and the record's, of every plain kind and an error),
// jsonHandler writes what slog.JSONHandler writes.
func FuzzJSONHandler(f *testing.F) {
	f.Add([]byte("call\x00subject\x00alice\x01duration_ms\x00\x3f\xce\x1a\x9f\xbe\x76\xc8\xb4"))
	f.Add([]byte("m\"\n\xff\x00k\x00<&>\x02t\x00\x00\x00\x00\x00\x00\x00\x00\x01"))
	f.Add([]byte("\u2028\x00a\x00b\x03n\x00\x80\x00\x00\x00\x00\x00\x00\x00\x04e\x00x"))
	f.Fuzz(func(t *testing.T, in []byte) {
		parts := bytes.Split(in, []byte{0})
		msg := string(parts[0])
		var attrs []any
		for i := 1; i+1 < len(parts); i += 2 {
			key, val := string(parts[i]), parts[i+1]
			kind := byte(0)
			if len(val) > 0 {
				kind, val = val[0]%7, val[1:]
			}
			var n uint64
			if len(val) >= 8 {
				n = binary.BigEndian.Uint64(val)
			}
			switch kind {
			case 0:
				attrs = append(attrs, slog.String(key, string(val)))
			case 1:
				attrs = append(attrs, slog.Float64(key, math.Float64frombits(n)))
			case 2:
				attrs = append(attrs, slog.Time(key, time.Unix(0, int64(n)).In(time.FixedZone("z", int(int8(n))*900))))
			case 3:
				attrs = append(attrs, slog.Int64(key, int64(n)), slog.Uint64(key+"u", n))
			case 4:
				attrs = append(attrs, slog.Any(key, errors.New(string(val))))
			case 5:
				attrs = append(attrs, slog.Duration(key, time.Duration(n)), slog.Bool(key+"b", n%2 == 1))
			case 6:
				attrs = append(attrs, slog.Float64(key, float64(int64(n)%1e9)/1000))
			}
		}
		half := len(attrs) / 2
		fast, std := bothLines(attrs[:half], func(l *slog.Logger) { l.Info(msg, attrs[half:]...) })
		if fast != std {
			t.Fatalf("jsonHandler wrote %q\nslog writes      %q", fast, std)
		}
	})
}
