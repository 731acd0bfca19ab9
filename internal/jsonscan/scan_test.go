package jsonscan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"
)

func nest(open, close string, n int, inner string) string {
	return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
}

func TestValid(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		// Accepted.
		{"null", "null", true},
		{"true", "true", true},
		{"false", "false", true},
		{"zero", "0", true},
		{"neg zero", "-0", true},
		{"int", "-123", true},
		{"frac", "1.25", true},
		{"exp", "1e5", true},
		{"exp signs", "1E+5 ", true},
		{"frac exp", "-0.5e-10", true},
		{"string", `"abc"`, true},
		{"escapes", `"\"\\\/\b\f\n\r\t\u00e9\uABCD"`, true},
		{"invalid utf8 in string", "\"\xff\xfe\"", true},
		{"long string", `"` + strings.Repeat("abcdefgh", 100) + `"`, true},
		{"surrounding ws", " \t\r\n{\"a\" : [1, 2 ,{}] }\n ", true},
		{"empty object", "{}", true},
		{"empty array", "[ ]", true},
		{"nested", `{"a":{"b":[{"c":null}]},"d":[[],[{}]]}`, true},
		{"depth 1000 arrays", nest("[", "]", MaxDepth, ""), true},
		{"depth 1000 objects", nest(`{"a":`, "}", MaxDepth-1, "{}"), true},

		// Empty input and whitespace.
		{"empty", "", false},
		{"whitespace only", " \t\r\n", false},
		{"form feed is not ws", "\f1", false},
		{"nbsp is not ws", "\u00a01", false},
		// Trailing garbage and multiple values.
		{"trailing garbage", "1 x", false},
		{"two values", "1 2", false},
		{"two objects", "{}{}", false},
		{"trailing comma top", "1,", false},
		{"nul byte after", "1\x00", false},
		// Bad literals.
		{"tru", "tru", false},
		{"nul", "nul", false},
		{"falsey", "falsey", false},
		{"True", "True", false},
		{"nulll", "nulll", false},
		// Numbers.
		{"leading zero", "01", false},
		{"neg leading zero", "-01", false},
		{"minus only", "-", false},
		{"minus space", "- 1", false},
		{"dot end", "1.", false},
		{"dot start", ".5", false},
		{"exp empty", "1e", false},
		{"exp sign empty", "1e+", false},
		{"frac exp empty", "1.5E-", false},
		{"plus", "+1", false},
		{"hex", "0x1F", false},
		{"dot exp", "1.e5", false},
		{"NaN", "NaN", false},
		{"Infinity", "-Infinity", false},
		// Strings.
		{"unterminated", `"abc`, false},
		{"unterminated long", `"` + strings.Repeat("x", 40), false},
		{"lone quote", `"`, false},
		{"raw newline", "\"a\nb\"", false},
		{"raw tab", "\"a\tb\"", false},
		{"raw nul late", "\"" + strings.Repeat("x", 17) + "\x00\"", false},
		{"raw 0x1f", "\"\x1f\"", false},
		{"bad escape x", `"\x41"`, false},
		{"bad escape quote'", `"\'"`, false},
		{"short u", `"\u12"`, false},
		{"short u at end", `"\u12`, false},
		{"bad hex u", `"\u12G4"`, false},
		{"lone backslash at end", `"\`, false},
		{"backslash before end", `"abc\"`, false},
		{"single quotes", `'a'`, false},
		// Objects.
		{"missing colon", `{"a" 1}`, false},
		{"trailing comma obj", `{"a":1,}`, false},
		{"non-string key", `{1:1}`, false},
		{"bare key", `{a:1}`, false},
		{"missing value", `{"a":}`, false},
		{"missing value end", `{"a":`, false},
		{"missing comma obj", `{"a":1 "b":2}`, false},
		{"unclosed object", `{"a":1`, false},
		{"leading comma obj", `{,"a":1}`, false},
		{"obj closed by bracket", `{"a":1]`, false},
		{"lone open brace", `{`, false},
		{"key only", `{"a"}`, false},
		// Arrays.
		{"trailing comma arr", `[1,]`, false},
		{"missing comma arr", `[1 2]`, false},
		{"leading comma arr", `[,1]`, false},
		{"double comma", `[1,,2]`, false},
		{"unclosed array", `[1`, false},
		{"arr closed by brace", `[1}`, false},
		{"lone close", `]`, false},
		{"colon in array", `[1:2]`, false},
		// Depth.
		{"depth 1001 arrays", nest("[", "]", MaxDepth+1, ""), false},
		{"depth 1001 objects", nest(`{"a":`, "}", MaxDepth, "{}"), false},
		{"depth 1001 mixed", nest(`[{"a":`, "}]", 500, "[0]"), false},
		{"a million [", strings.Repeat("[", 1_000_000), false},
		{"deep in object", `{"a":` + nest("[", "]", MaxDepth, "") + `}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := []byte(tt.in)
			if got := Valid(b); got != tt.want {
				t.Errorf("Valid(%.60q) = %v, want %v", tt.in, got, tt.want)
			}
			// Cross-check the table itself against encoding/json, except for
			// the depth cases where the limits differ on purpose.
			if !strings.HasPrefix(tt.name, "depth 1001") && tt.name != "deep in object" {
				if std := json.Valid(b); std != tt.want {
					t.Errorf("encoding/json.Valid(%.60q) = %v, table says %v", tt.in, std, tt.want)
				}
			}
			_, rest, ok := Value(b)
			if ok && len(bytes.TrimLeft(rest, " \t\r\n")) == 0 != tt.want {
				t.Errorf("Value(%.60q) disagrees with Valid: ok=%v rest=%q", tt.in, ok, rest)
			}
		})
	}
}

func TestHasSpecial(t *testing.T) {
	// Every byte value at every position of a word of plain bytes.
	for pos := 0; pos < 8; pos++ {
		for c := 0; c < 256; c++ {
			var w [8]byte
			for i := range w {
				w[i] = 'a'
			}
			w[pos] = byte(c)
			x := binary.LittleEndian.Uint64(w[:])
			if got := hasSpecial(x); got != strSpecial[c] {
				t.Fatalf("hasSpecial(byte %#x at %d) = %v, want %v", c, pos, got, strSpecial[c])
			}
		}
	}
	// Neighbours that could trigger borrows: 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x80, 0xff.
	for _, c := range []byte{0x20, 0x21, 0x23, 0x5b, 0x5d, 0x80, 0xff, 0x7f} {
		if hasSpecial(ones * uint64(c)) {
			t.Errorf("hasSpecial(all %#x) = true", c)
		}
	}
}

func TestValue(t *testing.T) {
	tests := []struct {
		in, v, rest string
		ok          bool
	}{
		{"  {\"a\": [1, {\"b\":2}]} , 7", `{"a": [1, {"b":2}]}`, " , 7", true},
		{"\n[1,[2,[3]]]]", "[1,[2,[3]]]", "]", true},
		{`"a\"b"xyz`, `"a\"b"`, "xyz", true},
		{"-1.5e3,", "-1.5e3", ",", true},
		{"true}", "true", "}", true},
		{"null", "null", "", true},
		{"01", "0", "1", true},
		{"", "", "", false},
		{"   ", "", "", false},
		{"[1,", "", "", false},
		{`{"a":1`, "", "", false},
		{"tru", "", "", false},
		{"}", "", "", false},
		{nest("[", "]", MaxDepth+1, ""), "", "", false},
	}
	for _, tt := range tests {
		v, rest, ok := Value([]byte(tt.in))
		if ok != tt.ok || string(v) != tt.v || string(rest) != tt.rest {
			t.Errorf("Value(%.40q) = %q, %q, %v; want %q, %q, %v", tt.in, v, rest, ok, tt.v, tt.rest, tt.ok)
		}
	}
	// v and rest alias the input.
	in := []byte(` {"k":1} x`)
	v, rest, _ := Value(in)
	if &v[0] != &in[1] || &rest[0] != &in[8] {
		t.Error("Value did not return sub-slices of its input")
	}
}

type member struct {
	key     string
	escaped bool
	val     string
}

func collect(obj string, stopAfter int) ([]member, bool) {
	var ms []member
	ok := Object([]byte(obj), func(k []byte, esc bool, v []byte) bool {
		ms = append(ms, member{string(k), esc, string(v)})
		return len(ms) != stopAfter
	})
	return ms, ok
}

func TestObject(t *testing.T) {
	in := " \n{ \"jsonrpc\" : \"2.0\",\"id\":7, \"params\":{\"arguments\":{\"x\":[1,{\"y\":\"}\"}]}} ,\"a\\\"b\":null,\"\\u0041\":-0.5e1}\t"
	want := []member{
		{"jsonrpc", false, `"2.0"`},
		{"id", false, "7"},
		{"params", false, `{"arguments":{"x":[1,{"y":"}"}]}}`},
		{`a\"b`, true, "null"},
		{`\u0041`, true, "-0.5e1"},
	}
	got, ok := collect(in, -1)
	if !ok {
		t.Fatal("Object rejected a valid object")
	}
	if len(got) != len(want) {
		t.Fatalf("got %d members %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("member %d = %+v, want %+v", i, got[i], want[i])
		}
	}

	// Early stop: fn not called again, result still reports validity.
	got, ok = collect(in, 2)
	if !ok || len(got) != 2 || got[1].key != "id" {
		t.Errorf("early stop: got %+v ok=%v, want 2 members and ok", got, ok)
	}
	got, ok = collect(`{"a":1,"b":2,"c":}`, 1)
	if ok || len(got) != 1 {
		t.Errorf("early stop on invalid object: got %+v ok=%v, want 1 member and !ok", got, ok)
	}

	// Empty objects.
	for _, s := range []string{"{}", " { } "} {
		if got, ok := collect(s, -1); !ok || len(got) != 0 {
			t.Errorf("Object(%+v) = %+v, %v; want no members, true", s, got, ok)
		}
	}

	// Not one valid object.
	bad := []string{
		"", " ", "[]", `"{}"`, "null", "1", "{", "}", "{}{}", "{} x", "{},",
		`{"a"}`, `{"a" 1}`, `{"a":1,}`, `{1:1}`, `{"a":}`, `{"a":1 "b":2}`,
		`{"a":1]`, `{"a":[1}`, `{"a`, `{"a":"\x"}`, `{"\q":1}`, "{\"a\":\"\n\"}",
		`{"a":` + nest("[", "]", MaxDepth, "") + `}`,
	}
	for _, s := range bad {
		if _, ok := collect(s, -1); ok {
			t.Errorf("Object(%.40q) = true, want false", s)
		}
	}
	// Depth: the object itself counts as one level.
	if _, ok := collect(`{"a":`+nest("[", "]", MaxDepth-1, "")+`}`, -1); !ok {
		t.Error("Object rejected nesting of exactly MaxDepth")
	}

	// Keys and values alias the input.
	b := []byte(`{"k":[1]}`)
	Object(b, func(k []byte, _ bool, v []byte) bool {
		if &k[0] != &b[2] || &v[0] != &b[5] {
			t.Error("Object did not pass sub-slices of its input")
		}
		return true
	})
}

func TestNoAllocs(t *testing.T) {
	doc := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2.5e3,true,null,"\u00e9\n"]}}}`)
	deep := []byte(nest("[", "]", MaxDepth, ""))
	var sink int
	fn := func(k []byte, _ bool, v []byte) bool { sink += len(k) + len(v); return true }
	allocs := testing.AllocsPerRun(100, func() {
		if !Valid(doc) || !Valid(deep) {
			t.Fatal("not valid")
		}
		if _, _, ok := Value(doc); !ok {
			t.Fatal("Value failed")
		}
		if !Object(doc, fn) {
			t.Fatal("Object failed")
		}
	})
	if allocs != 0 {
		t.Errorf("allocs per run = %v, want 0", allocs)
	}
	_ = sink
}

func benchDoc() []byte {
	return []byte(`{"message":"` + strings.Repeat("The quick brown fox jumps over the lazy dog. ", 16384/45+1)[:16384] + `"}`)
}

func BenchmarkValid(b *testing.B) {
	doc := benchDoc()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if !Valid(doc) {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkStdValid(b *testing.B) {
	doc := benchDoc()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if !json.Valid(doc) {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkObjectRPC(b *testing.B) {
	doc := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"search","arguments":{"query":"hello world","limit":10,"filters":[{"k":"lang","v":"go"}]}}}`)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		var method []byte
		if !Object(doc, func(k []byte, _ bool, v []byte) bool {
			if string(k) == "method" {
				method = v
			}
			return true
		}) || method == nil {
			b.Fatal("bad")
		}
	}
}
