package jsonscan_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/jsonscan"
)

// quoteCases are strings whose JSON form exercises every rule of
// AppendString.
var quoteCases = []string{
	"", "plain", `quote " and backslash \`, "\b\f\n\r\t", "\x00\x01\x1f\x7f", "<script>&amp;</script>",
	"caf\u00e9 \u65e5\u672c \U0001F600", "\u2028line\u2029para", "bad \xff byte", "cut \xe6\x97", "\xed\xa0\x80 surrogate",
	"k\u00e9y-" + string(rune(0x10FFFF)), "ends in \\",
}

func TestAppendStringIsMarshal(t *testing.T) {
	for _, s := range quoteCases {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonscan.AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got[1:], want)
		}
	}
}

func TestAppendStringAllocates(t *testing.T) {
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { buf = jsonscan.AppendString(buf[:0], "caf\u00e9 <\"x\">\n") }); n != 0 {
		t.Fatalf("%v allocations into a buffer large enough", n)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range quoteCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got := jsonscan.AppendString(nil, s)
		if string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%s does not decode: %v", got, err)
		}
		if got, want := jsonscan.AppendSlogString(nil, s), slogString(s); string(got) != want {
			t.Fatalf("AppendSlogString(%q) = %s, want %s", s, got, want)
		}
	})
}

// slogString is s as log/slog's JSON handler writes it: the message of a
// record without a time, cut out of its line.
func slogString(s string) string {
	var buf bytes.Buffer
	_ = slog.NewJSONHandler(&buf, nil).Handle(context.Background(), slog.NewRecord(time.Time{}, slog.LevelInfo, s, 0))
	line := buf.String()
	const pre = `{"level":"INFO","msg":`
	return line[len(pre) : len(line)-2] // the message, without "}\n"
}

func TestAppendSlogStringIsSlogs(t *testing.T) {
	for _, s := range quoteCases {
		if got, want := jsonscan.AppendSlogString([]byte("x"), s), slogString(s); string(got) != "x"+want {
			t.Errorf("AppendSlogString(%q) = %s, want %s", s, got[1:], want)
		}
	}
	// The two forms differ where slog does: HTML characters and \b, \f.
	if a, b := string(jsonscan.AppendString(nil, "<\b")), string(jsonscan.AppendSlogString(nil, "<\b")); a == b {
		t.Errorf("the two forms agree on %s", a)
	}
}
