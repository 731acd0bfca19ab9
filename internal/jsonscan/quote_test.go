package jsonscan_test

import (
	"encoding/json"
	"testing"

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
	})
}
