package relay

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"
)

// refEvents is a plain reading of an SSE stream (lines split on LF, one
// trailing CR dropped, data lines joined by LF, events without data
// skipped, an unterminated last event dropped): what scanEvents must
// agree with.
func refEvents(stream []byte) [][]byte {
	var out [][]byte
	var data [][]byte
	lines := bytes.Split(stream, []byte("\n"))
	for _, line := range lines[:len(lines)-1] { // the last piece has no LF
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			if ev := bytes.Join(data, []byte("\n")); len(ev) > 0 {
				out = append(out, ev)
			}
			data = nil
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if string(field) == "data" {
			data = append(data, bytes.TrimPrefix(value, []byte(" ")))
		}
	}
	return out
}

// chunked reads its data n bytes at a time.
type chunked struct {
	b []byte
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.b))
	copy(p, c.b[:k])
	c.b = c.b[k:]
	return k, nil
}

// FuzzScanEvents checks the byte path's SSE reader against refEvents, for
// any stream and any read size.
func FuzzScanEvents(f *testing.F) {
	f.Add([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\"}\n\n"), uint8(7))
	f.Add([]byte("id: 1\r\nretry: 10\r\ndata: a\r\ndata: b\r\n\r\n: comment\n\ndata:\n\n"), uint8(1))
	f.Add([]byte("data: x\n\ndata: unterminated"), uint8(3))
	f.Add([]byte("data\n\ndata:\ndata:\n\n"), uint8(200))
	f.Fuzz(func(t *testing.T, stream []byte, size uint8) {
		var got [][]byte
		buf := make([]byte, 0, int(size%8)*16) // small buffers grow
		_, done, err := scanEvents(&chunked{b: stream, n: int(size%64) + 1}, &buf,
			func(b []byte) (json.RawMessage, bool, error) {
				got = append(got, append([]byte(nil), b...))
				return nil, false, nil
			}, func(string) {}, func(time.Duration) {})
		if done || err != nil {
			t.Fatalf("done=%v err=%v", done, err)
		}
		want := refEvents(stream)
		if len(got) != len(want) {
			t.Fatalf("%d events, want %d\ngot  %q\nwant %q", len(got), len(want), got, want)
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("event %d: %q, want %q", i, got[i], want[i])
			}
		}
	})
}
