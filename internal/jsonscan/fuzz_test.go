package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// nestDepth returns the deepest nesting of '[' and '{' outside strings. It
// is only meaningful for valid JSON.
func nestDepth(b []byte) int {
	depth, deepest, inStr := 0, 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inStr && c == '\\':
			i++
		case inStr && c == '"':
			inStr = false
		case inStr:
		case c == '"':
			inStr = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

func isWS(b []byte) bool { return len(bytes.TrimLeft(b, " \t\r\n")) == 0 }

func FuzzValid(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`,
		`[1,-0.5e+3,true,false,null,"a\u00e9\n",{}]`,
		" {\"a\\\"b\" : [ ] }\n",
		"\"\xff\xfe\xc0\"",
		`{"a":1,}`,
		`01`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := Valid(b)
		std := json.Valid(b)
		if got != std {
			if !(std && !got && nestDepth(b) > MaxDepth) {
				t.Fatalf("Valid(%q) = %v, encoding/json.Valid = %v", b, got, std)
			}
		}

		// Value agrees with Valid.
		v, rest, ok := Value(b)
		if ok {
			if !Valid(v) {
				t.Fatalf("Value(%q) returned invalid v %q", b, v)
			}
			if len(v)+len(rest) > len(b) || !bytes.HasSuffix(b, append(append([]byte{}, v...), rest...)) {
				t.Fatalf("Value(%q) = %q, %q: not the tail of the input", b, v, rest)
			}
			if !isWS(b[:len(b)-len(v)-len(rest)]) {
				t.Fatalf("Value(%q) skipped non-whitespace", b)
			}
		}
		if got != (ok && isWS(rest)) {
			t.Fatalf("Valid(%q) = %v but Value ok=%v rest=%q", b, got, ok, rest)
		}

		// Object agrees with Valid, and its members with encoding/json.
		type m struct {
			key     []byte
			escaped bool
			val     []byte
		}
		var ms []m
		objOK := Object(b, func(k []byte, esc bool, val []byte) bool {
			ms = append(ms, m{k, esc, val})
			return true
		})
		isObj := got && bytes.TrimLeft(b, " \t\r\n")[0] == '{'
		if objOK != isObj {
			t.Fatalf("Object(%q) = %v, Valid = %v", b, objOK, got)
		}
		if !objOK {
			return
		}
		// Early stop must not change the result.
		if !Object(b, func([]byte, bool, []byte) bool { return false }) {
			t.Fatalf("Object(%q) with early stop = false", b)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		if _, err := dec.Token(); err != nil {
			t.Fatalf("decoder: %v", err)
		}
		i := 0
		for ; dec.More(); i++ {
			tok, err := dec.Token()
			if err != nil {
				t.Fatalf("decoder key: %v", err)
			}
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				t.Fatalf("decoder value: %v", err)
			}
			if i >= len(ms) {
				t.Fatalf("Object(%q) gave %d members, decoder more", b, len(ms))
			}
			if !bytes.Equal(raw, ms[i].val) {
				t.Fatalf("Object(%q) member %d value %q, decoder %q", b, i, ms[i].val, raw)
			}
			if ms[i].escaped != (bytes.IndexByte(ms[i].key, '\\') >= 0) {
				t.Fatalf("Object(%q) member %d escaped=%v for key %q", b, i, ms[i].escaped, ms[i].key)
			}
			if !ms[i].escaped && utf8.Valid(ms[i].key) && tok.(string) != string(ms[i].key) {
				t.Fatalf("Object(%q) member %d key %q, decoder %q", b, i, ms[i].key, tok)
			}
			if ms[i].escaped {
				var k string
				if err := json.Unmarshal(append(append([]byte{'"'}, ms[i].key...), '"'), &k); err != nil || k != tok.(string) {
					t.Fatalf("Object(%q) member %d key %q decodes to %q (%v), decoder %q", b, i, ms[i].key, k, err, tok)
				}
			}
		}
		if i != len(ms) {
			t.Fatalf("Object(%q) gave %d members, decoder %d", b, len(ms), i)
		}
	})
}
