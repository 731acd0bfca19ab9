package skills

import (
	"bytes"
	"testing"
)

// TestSplitBody: one case per way a SKILL.md's framing can be wrong, and
// the forms plugin.Load accepts (CRLF, a closing line at the very end).
func TestSplitBody(t *testing.T) {
	for _, c := range []struct {
		in, body string
		ok       bool
	}{
		{"---\nname: a\n---\nBody.\n", "Body.\n", true},
		{"---\r\nname: a\r\n---\r\nBody.\r\n", "Body.\r\n", true},
		{"---\nname: a\n---", "", true},
		{"---\n---\n", "", true},
		{"---\nname: a\n---\n---\nmore\n", "---\nmore\n", true},
		{"", "", false},
		{"Body.\n", "", false},
		{"---", "", false},
		{"--- \nname: a\n---\n", "", false},
		{"\n---\nname: a\n---\n", "", false},
		{"---\nname: a\n", "", false},
		{"---\nname: a\n----\nBody.\n", "", false},
		{"---\nname: a\n --- \nBody.\n", "", false},
	} {
		body, ok := splitBody([]byte(c.in))
		if ok != c.ok || string(body) != c.body {
			t.Errorf("splitBody(%q) = %q, %v; want %q, %v", c.in, body, ok, c.body, c.ok)
		}
	}
}

// FuzzSplitBody: a body is always the tail of its file after a "---" line
// pair, and the file starts with "---".
func FuzzSplitBody(f *testing.F) {
	for _, s := range []string{"---\nname: a\n---\nBody.\n", "---\r\n---\r\n", "---\nx", "---\n---"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		body, ok := splitBody(data)
		if !ok {
			return
		}
		if !bytes.HasPrefix(data, []byte("---")) || !bytes.HasSuffix(data, body) {
			t.Fatalf("splitBody(%q) = %q", data, body)
		}
		head := data[:len(data)-len(body)]
		if !bytes.HasSuffix(bytes.TrimSuffix(bytes.TrimSuffix(head, []byte("\n")), []byte("\r")), []byte("---")) {
			t.Fatalf("splitBody(%q): the head %q does not end with a --- line", data, head)
		}
	})
}
