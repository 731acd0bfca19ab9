package pin

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func mustCanonical(t *testing.T, in string) string {
	t.Helper()
	out, err := Canonical([]byte(in))
	if err != nil {
		t.Fatalf("Canonical(%q): %v", in, err)
	}
	return string(out)
}

// RFC 8785 §3.2.2, the example of the whole transformation.
func TestCanonicalRFC8785Example(t *testing.T) {
	in := `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
	want := `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
	if got := mustCanonical(t, in); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// RFC 8785 §3.2.3, the sorting example: keys ordered by UTF-16 code units,
// so the emoji (a surrogate pair, 0xD83D...) sorts before U+FB33.
func TestCanonicalRFC8785Sorting(t *testing.T) {
	in := `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`
	want := `{"\r":"Carriage Return","1":"One","` + "\u0080" + `":"Control","ö":"Latin Small Letter O With Diaeresis",` +
		`"€":"Euro Sign","😀":"Emoji: Grinning Face","` + "\ufb33" + `":"Hebrew Letter Dalet With Dagesh"}`
	if got := mustCanonical(t, in); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// RFC 8785 Appendix B: IEEE 754 bit patterns and their JCS text.
func TestNumberAppendixB(t *testing.T) {
	cases := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"}, // minus zero
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, c := range cases {
		f := math.Float64frombits(c.bits)
		if got := string(appendNumber(nil, f)); got != c.want {
			t.Errorf("%016x: got %s, want %s", c.bits, got, c.want)
		}
		// The same through the parser: the text reads back to itself.
		if got := mustCanonical(t, c.want); got != c.want {
			t.Errorf("Canonical(%s) = %s", c.want, got)
		}
	}
	// Appendix B's NaN and Infinity rows have no JCS form.
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := CanonicalValue(f); !errors.Is(err, ErrNumberRange) {
			t.Errorf("CanonicalValue(%v): err %v, want ErrNumberRange", f, err)
		}
	}
}

func TestCanonicalNumbers(t *testing.T) {
	cases := map[string]string{
		"0":                       "0",
		"-0":                      "0",
		"-0.0e5":                  "0",
		"0.0":                     "0",
		"1e21":                    "1e+21",
		"1e20":                    "100000000000000000000",
		"1e-7":                    "1e-7",
		"1E-7":                    "1e-7",
		"1.5e-7":                  "1.5e-7",
		"333333333.33333329":      "333333333.3333333",
		"1E30":                    "1e+30",
		"4.50":                    "4.5",
		"2e-3":                    "0.002",
		"0.000001":                "0.000001",
		"0.0000012":               "0.0000012",
		"9007199254740992":        "9007199254740992",
		"9007199254740993":        "9007199254740992", // beyond 2^53: JCS reads doubles
		"295147905179352830000":   "295147905179352830000",
		"1E+2":                    "100",
		"100":                     "100",
		"-12.5":                   "-12.5",
		"123456789012345678901":   "123456789012345680000",
		"1234567890123456789012":  "1.2345678901234568e+21",
		"1e-400":                  "0", // underflow rounds to zero, as JSON.parse does
		"-1e-400":                 "0",
		"0e999999999999":          "0",
		"2.4703282292062328e-324": "5e-324",
	}
	for in, want := range cases {
		if got := mustCanonical(t, in); got != want {
			t.Errorf("Canonical(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestCanonicalStrings(t *testing.T) {
	cases := []struct{ in, want string }{
		{`"\u0000"`, `"\u0000"`},
		{`"\u001F"`, `"\u001f"`},
		{`"\b\f\n\r\t"`, `"\b\f\n\r\t"`},
		{`"\u0008\u000C\u000a\u000D\u0009"`, `"\b\f\n\r\t"`},
		{`"\/"`, `"/"`},
		{`"\u007f"`, "\"\x7f\""},
		{`"\u2028\u2029"`, "\"\u2028\u2029\""},
		{`"\u00e9"`, `"é"`},
		{`"é"`, `"é"`},
		{`"\uD83D\uDE00"`, `"😀"`},
		{`"😀"`, `"😀"`},
		{`"\"\\"`, `"\"\\"`},
		{`"<&>"`, `"<&>"`},
		{`"\u003c"`, `"<"`},
		{`"\ufffd"`, "\"\uFFFD\""},
		{`""`, `""`},
	}
	for _, c := range cases {
		if got := mustCanonical(t, c.in); got != c.want {
			t.Errorf("Canonical(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestCanonicalStructure(t *testing.T) {
	cases := []struct{ in, want string }{
		{" \t\r\n{ \"b\" : [ 1 , 2 , { } , [ ] ] ,\n \"a\" : null }\r\n ", `{"a":null,"b":[1,2,{},[]]}`},
		{`true`, `true`},
		{` false `, `false`},
		{`null`, `null`},
		{`"x"`, `"x"`},
		{`[]`, `[]`},
		{`{}`, `{}`},
		{`{"a":1,"\u0062":2,"A":3,"":4}`, `{"":4,"A":3,"a":1,"b":2}`},
		{`{"z":{"y":1,"x":2},"a":[{"d":1,"c":2}]}`, `{"a":[{"c":2,"d":1}],"z":{"x":2,"y":1}}`},
		// Keys that differ only after a shared multi-byte prefix.
		{`{"éb":1,"éa":2,"é":3}`, `{"é":3,"éa":2,"éb":1}`},
	}
	for _, c := range cases {
		if got := mustCanonical(t, c.in); got != c.want {
			t.Errorf("Canonical(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestCanonicalDepth(t *testing.T) {
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if got := mustCanonical(t, ok); got != ok {
		t.Fatal("nesting at MaxDepth changed")
	}
	deep := strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1)
	if _, err := Canonical([]byte(deep)); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("err %v, want ErrTooDeep", err)
	}
}

// Every way the input can be wrong, and the error it gets.
func TestCanonicalErrors(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		want   error
		offset int // -2: don't check
	}{
		{"empty", ``, ErrSyntax, 0},
		{"only whitespace", "  \n", ErrSyntax, 3},
		{"unclosed object", `{`, ErrSyntax, 1},
		{"unclosed array", `[1`, ErrSyntax, 2},
		{"trailing comma in array", `[1,]`, ErrSyntax, 3},
		{"trailing comma in object", `{"a":1,}`, ErrSyntax, 7},
		{"unquoted key", `{a:1}`, ErrSyntax, 1},
		{"missing colon", `{"a" 1}`, ErrSyntax, 5},
		{"missing value", `{"a":}`, ErrSyntax, 5},
		{"missing comma", `[1 2]`, ErrSyntax, 3},
		{"single quotes", `'a'`, ErrSyntax, 0},
		{"NaN literal", `NaN`, ErrSyntax, 0},
		{"Infinity literal", `Infinity`, ErrSyntax, 0},
		{"negative Infinity", `-Infinity`, ErrSyntax, 1},
		{"bad literal", `tru`, ErrSyntax, 0},
		{"bad literal prefix", `nulL`, ErrSyntax, 0},
		{"lone minus", `-`, ErrSyntax, 1},
		{"plus sign", `+1`, ErrSyntax, 0},
		{"leading zero", `01`, ErrSyntax, 1},
		{"leading zero negative", `-012`, ErrSyntax, 2},
		{"bare decimal point", `1.`, ErrSyntax, 2},
		{"leading decimal point", `.5`, ErrSyntax, 0},
		{"empty exponent", `1e`, ErrSyntax, 2},
		{"signed empty exponent", `1e+`, ErrSyntax, 3},
		{"hex number", `0x10`, ErrTrailingData, 1},
		{"unterminated string", `"abc`, ErrSyntax, 4},
		{"raw control in string", "\"a\x01b\"", ErrSyntax, 2},
		{"raw newline in string", "\"a\nb\"", ErrSyntax, 2},
		{"bad escape", `"\x"`, ErrSyntax, 1},
		{"unterminated escape", `"\`, ErrSyntax, 1},
		{"short unicode escape", `"\u12"`, ErrSyntax, 1},
		{"non-hex unicode escape", `"\u12G4"`, ErrSyntax, 1},
		{"bad escape after high surrogate", `"\ud800\u12g4"`, ErrSyntax, 7},
		{"byte order mark", "\xef\xbb\xbf{}", ErrSyntax, 0},
		{"two values", `{} {}`, ErrTrailingData, 3},
		{"two numbers", `1 2`, ErrTrailingData, 2},
		{"garbage after array", `[]x`, ErrTrailingData, 2},
		{"comma after value", `null,`, ErrTrailingData, 4},
		{"NUL after value", "1\x00", ErrTrailingData, 1},
		{"duplicate key", `{"a":1,"a":2}`, ErrDuplicateKey, 7},
		{"duplicate key by escape", `{"a":1,"\u0061":2}`, ErrDuplicateKey, 7},
		{"duplicate key nested", `[{"x":{"b":1,"c":0,"b":1}}]`, ErrDuplicateKey, 19},
		{"invalid UTF-8 byte", "\"\xff\"", ErrInvalidUTF8, 1},
		{"truncated UTF-8", "\"\xc3\"", ErrInvalidUTF8, 1},
		{"overlong UTF-8", "\"\xc0\xaf\"", ErrInvalidUTF8, 1},
		{"UTF-8 encoded surrogate", "\"\xed\xa0\x80\"", ErrInvalidUTF8, 1},
		{"invalid UTF-8 in key", "{\"\xfe\":1}", ErrInvalidUTF8, 2},
		{"invalid UTF-8 outside string", "\xff", ErrSyntax, 0},
		{"lone high surrogate", `"\ud800"`, ErrLoneSurrogate, 1},
		{"lone low surrogate", `"\udc00"`, ErrLoneSurrogate, 1},
		{"high surrogate then BMP escape", `"\ud800\u0041"`, ErrLoneSurrogate, 1},
		{"high surrogate then text", `"\ud800x"`, ErrLoneSurrogate, 1},
		{"two high surrogates", `"\ud800\ud800"`, ErrLoneSurrogate, 1},
		{"reversed pair", `"\ude00\ud83d"`, ErrLoneSurrogate, 1},
		{"overflow", `1e400`, ErrNumberRange, 0},
		{"negative overflow", `[-1e400]`, ErrNumberRange, 1},
		{"just over max double", `1.8e308`, ErrNumberRange, 0},
		{"too deep", strings.Repeat("[", MaxDepth+1), ErrTooDeep, MaxDepth},
	}
	sentinels := []error{ErrSyntax, ErrTrailingData, ErrDuplicateKey, ErrInvalidUTF8, ErrLoneSurrogate, ErrNumberRange, ErrTooDeep}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := Canonical([]byte(c.in))
			if err == nil {
				t.Fatalf("Canonical(%q) = %s, want error %v", c.in, out, c.want)
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("Canonical(%q): %v, want %v", c.in, err, c.want)
			}
			for _, s := range sentinels {
				if s != c.want && errors.Is(err, s) {
					t.Fatalf("error %v also matches %v", err, s)
				}
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not *Error", err)
			}
			if c.offset != -2 && e.Offset != c.offset {
				t.Fatalf("offset %d, want %d (%v)", e.Offset, c.offset, err)
			}
			if !strings.HasPrefix(err.Error(), "pin: ") {
				t.Fatalf("message %q", err)
			}
		})
	}
}

func TestCanonicalValue(t *testing.T) {
	type inner struct {
		Z int    `json:"z"`
		A string `json:"a"`
	}
	cases := []struct {
		name string
		in   any
		want string
	}{
		{"nil", nil, `null`},
		{"bool", true, `true`},
		{"float", 4.50, `4.5`},
		{"negative zero", math.Copysign(0, -1), `0`},
		{"number", json.Number("1E30"), `1e+30`},
		{"raw", json.RawMessage(`{"b":1, "a":2}`), `{"a":2,"b":1}`},
		{"string", "\u2028<\x1f>", "\"\u2028<\\u001f>\""},
		{"map", map[string]any{"\ufb33": 1.0, "\U0001F600": 2.0, "b": []any{nil, false, "x"}},
			`{"b":[null,false,"x"],"😀":2,"` + "\ufb33" + `":1}`},
		{"struct", inner{Z: 1, A: "<"}, `{"a":"<","z":1}`},
		{"nested struct", map[string]any{"k": []any{inner{}}}, `{"k":[{"a":"","z":0}]}`},
		{"int64 beyond 2^53", int64(9007199254740993), `9007199254740992`},
		{"string map", map[string]string{"b": "1", "a": "2"}, `{"a":"2","b":"1"}`},
	}
	for _, c := range cases {
		got, err := CanonicalValue(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}

	// A decoded document canonicalizes like its text.
	raw := `{"numbers":[333333333.33333329,1E30,4.50,2e-3],"s":"\u20ac\n","l":[null,true,{"y":1,"x":2}]}`
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatal(err)
	}
	fromValue, err := CanonicalValue(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := mustCanonical(t, raw); string(fromValue) != want {
		t.Fatalf("CanonicalValue %s != Canonical %s", fromValue, want)
	}
}

func TestCanonicalValueErrors(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	list := []any{nil}
	list[0] = list
	cases := []struct {
		name string
		in   any
		want error
	}{
		{"NaN", math.NaN(), ErrNumberRange},
		{"+Inf", math.Inf(1), ErrNumberRange},
		{"NaN nested", map[string]any{"a": []any{math.Inf(-1)}}, ErrNumberRange},
		{"invalid UTF-8 string", "a\xffb", ErrInvalidUTF8},
		{"invalid UTF-8 key", map[string]any{"\xff": 1.0}, ErrInvalidUTF8},
		{"bad json.Number", json.Number("abc"), ErrSyntax},
		{"json.Number with trailing text", json.Number("1 "), ErrSyntax},
		{"empty json.Number", json.Number(""), ErrSyntax},
		{"overflowing json.Number", json.Number("1e999"), ErrNumberRange},
		{"bad raw message", json.RawMessage(`{"a":1,"a":2}`), ErrDuplicateKey},
		{"channel", make(chan int), ErrUnsupportedValue},
		{"func in map", map[string]any{"f": func() {}}, ErrUnsupportedValue},
		{"cyclic map", cyclic, ErrTooDeep},
		{"cyclic slice", list, ErrTooDeep},
	}
	for _, c := range cases {
		out, err := CanonicalValue(c.in)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %q, %v; want %v", c.name, out, err, c.want)
		}
	}
}

func TestCompareUTF16(t *testing.T) {
	// In UTF-8 (code point) order U+FB33 < U+1F600; in UTF-16 order the
	// surrogate 0xD83D comes first.
	if compareUTF16("\ufb33", "\U0001F600") <= 0 {
		t.Fatal("U+FB33 must sort after U+1F600")
	}
	if compareUTF16("\U0001F600", "\U0001F601") >= 0 || compareUTF16("a", "ab") >= 0 || compareUTF16("b", "a") <= 0 || compareUTF16("x", "x") != 0 {
		t.Fatal("basic order")
	}
	if compareUTF16("\U00010000", "\U0010FFFF") >= 0 || compareUTF16("\uE000", "\U00010000") <= 0 || compareUTF16("\uD7FF", "\U00010000") >= 0 {
		t.Fatal("boundary order")
	}
}

// appendNumber agrees with encoding/json's ECMAScript-style formatting (its
// only difference, "-0", aside) on random doubles and on every power of ten
// and its neighbours, where the notation switches.
func TestNumberAgainstEncodingJSON(t *testing.T) {
	check := func(f float64) {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return
		}
		ref, _ := json.Marshal(f)
		want := string(ref)
		if want == "-0" {
			want = "0"
		}
		if got := string(appendNumber(nil, f)); got != want {
			t.Fatalf("%v (%016x): got %s, want %s", f, math.Float64bits(f), got, want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 30000; i++ {
		check(math.Float64frombits(r.Uint64()))
		check(float64(r.Int64N(1<<54) - 1<<53))
		check(r.Float64() * math.Pow(10, float64(r.IntN(60)-30)))
	}
	for e := -324; e <= 308; e++ {
		p := math.Pow(10, float64(e))
		check(p)
		check(-p)
		check(math.Nextafter(p, 0))
		check(math.Nextafter(p, math.Inf(1)))
	}
}

func BenchmarkCanonical(b *testing.B) {
	in := []byte(`{"type":"object","properties":{
		"owner":{"type":"string","description":"Repository owner (user or organization)"},
		"repo":{"type":"string","description":"Repository name"},
		"labels":{"type":"array","items":{"type":"string"},"description":"Labels to apply, \u00e9\u20ac"},
		"milestone":{"type":"integer","minimum":1,"maximum":1e6}},
		"required":["owner","repo"],"additionalProperties":false}`)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Canonical(in); err != nil {
			b.Fatal(err)
		}
	}
}

// Hostile shapes: deep nesting and many keys sharing a long prefix. Their
// cost per byte should stay close to the typical input's.
func BenchmarkCanonicalHostile(b *testing.B) {
	deep := strings.Repeat(`{"b":0,"a":`, MaxDepth-1) + "1" + strings.Repeat("}", MaxDepth-1)
	var keys strings.Builder
	keys.WriteString("{")
	prefix := strings.Repeat("k", 1000)
	for i := 0; i < 1000; i++ {
		if i > 0 {
			keys.WriteString(",")
		}
		fmt.Fprintf(&keys, `"%s%04d":%d`, prefix, 999-i, i)
	}
	keys.WriteString("}")
	for name, in := range map[string]string{"deep": deep, "longkeys": keys.String()} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				if _, err := Canonical([]byte(in)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
