package sqlstore

import (
	"bytes"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/store"
)

func equalBaselines(a, b store.Baseline) bool {
	return maps.EqualFunc(a, b, func(x, y store.BaselineEntry) bool {
		return x.Value == y.Value && bytes.Equal(x.Contract, y.Contract) && (x.Contract == nil) == (y.Contract == nil)
	})
}

// The stored form is pinned: a change to it is a change of the schema.
func TestEncodeEntriesFormat(t *testing.T) {
	b := store.Baseline{
		{Kind: store.KindTool, Name: "b <&>"}:           {Value: "fp-b", Contract: []byte(`{}`)},
		{Kind: store.KindTool, Name: "a"}:               {Value: "fp-a"},
		store.BaselineKey{Kind: store.KindInstructions}: {Value: "fp-i", Contract: []byte{}},
		{Kind: store.KindMarker, Name: "prompts"}:       {Value: store.PinnedMarker},
		{Kind: store.KindPrompt, Name: "a"}:             {Value: "fp-p", Contract: []byte{0, 0xff}},
		{Kind: store.KindTemplate, Name: "x://{id}"}:    {Value: "fp-t"},
		{Kind: store.KindTool, Name: "\u200bhidden"}:    {Value: "fp-h"},
	}
	got, err := EncodeEntries(b)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"kind":"instructions","name":"","value":"fp-i","contract":null},` +
		`{"kind":"marker","name":"prompts","value":"v1","contract":null},` +
		`{"kind":"prompt","name":"a","value":"fp-p","contract":"AP8="},` +
		`{"kind":"template","name":"x://{id}","value":"fp-t","contract":null},` +
		`{"kind":"tool","name":"a","value":"fp-a","contract":null},` +
		`{"kind":"tool","name":"b <&>","value":"fp-b","contract":"e30="},` +
		`{"kind":"tool","name":"` + "\u200b" + `hidden","value":"fp-h","contract":null}]`
	if string(got) != want {
		t.Fatalf("EncodeEntries =\n%s\nwant\n%s", got, want)
	}
	back, err := DecodeEntries(got)
	if err != nil {
		t.Fatal(err)
	}
	b[store.BaselineKey{Kind: store.KindInstructions}] = store.BaselineEntry{Value: "fp-i"} // empty reads back as nil
	if !equalBaselines(back, b) {
		t.Fatalf("DecodeEntries(EncodeEntries(b)) = %v, want %v", back, b)
	}
	if empty, err := EncodeEntries(nil); err != nil || string(empty) != "[]" {
		t.Fatalf("EncodeEntries(nil) = %s, %v", empty, err)
	}
	if back, err := DecodeEntries([]byte("[]")); err != nil || back == nil || len(back) != 0 {
		t.Fatalf("DecodeEntries([]) = %#v, %v; want empty, non-nil", back, err)
	}
	// Whitespace around and inside is JSON, and a missing contract is nil.
	if back, err := DecodeEntries([]byte(" [ {\"value\":\"v\", \"name\":\"n\", \"kind\":\"tool\"} ]\n")); err != nil || back[store.BaselineKey{Kind: store.KindTool, Name: "n"}].Value != "v" {
		t.Fatalf("spaced entries = %v, %v", back, err)
	}
	if _, err := EncodeEntries(store.Baseline{{Kind: "nope"}: {}}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("EncodeEntries of an invalid baseline = %v, want ErrInvalid", err)
	}
}

const okEntry = `{"kind":"tool","name":"a","value":"v"}`

// damagedEntries are stored blobs DecodeEntries must refuse, by what is
// wrong with them, and a word its error must contain.
var damagedEntries = []struct {
	name, in, want string
}{
	{"not UTF-8", "[{\"kind\":\"tool\",\"name\":\"a\xff\",\"value\":\"v\"}]", "UTF-8"},
	{"empty", "", "empty"},
	{"only spaces", "  \n", "empty"},
	{"not JSON", "kind=tool", "not JSON"},
	{"an object", `{"kind":"tool"}`, `"{"`},
	{"null", `null`, "null"},
	{"a string", `"[]"`, "a string"},
	{"a number", `42`, "a number"},
	{"a boolean", `true`, "a boolean"},
	{"unterminated", `[`, "closing bracket, after 0 entries"},
	{"truncated entry", `[{"kind":"tool","name":`, "entry 0"},
	{"truncated after an entry", `[` + okEntry, "closing bracket, after 1 entries"},
	{"trailing comma", `[` + okEntry + `,]`, "entry 1"},
	{"missing comma", `[` + okEntry + ` ` + okEntry + `]`, "entry"},
	{"entry is a number", `[1]`, "entry 0"},
	{"entry is a string", `["tool a"]`, "entry 0"},
	{"entry is an array", `[[]]`, "entry 0"},
	{"entry is null", `[null]`, "no kind"},
	{"no kind", `[{"name":"a","value":"v"}]`, "no kind"},
	{"no name", `[{"kind":"tool","value":"v"}]`, "no name"},
	{"null name", `[{"kind":"tool","name":null,"value":"v"}]`, "no name"},
	{"no value", `[{"kind":"tool","name":"a"}]`, "no value"},
	{"kind not a string", `[{"kind":1,"name":"a","value":"v"}]`, "entry 0"},
	{"value not a string", `[{"kind":"tool","name":"a","value":{}}]`, "entry 0"},
	{"unknown field", `[{"kind":"tool","name":"a","value":"v","extra":1}]`, "extra"},
	{"unknown kind", `[{"kind":"tools","name":"a","value":"v"}]`, "unknown kind"},
	{"empty kind", `[{"kind":"","name":"a","value":"v"}]`, "unknown kind"},
	{"instructions with a name", `[{"kind":"instructions","name":"a","value":"v"}]`, "instructions"},
	{"NUL in a name", `[{"kind":"tool","name":"a\u0000b","value":"v"}]`, "NUL"},
	{"NUL in a value", `[{"kind":"tool","name":"a","value":"\u0000"}]`, "NUL"},
	{"contract not base64", `[{"kind":"tool","name":"a","value":"v","contract":"!!"}]`, "entry 0"},
	{"contract an object", `[{"kind":"tool","name":"a","value":"v","contract":{}}]`, "entry 0"},
	{"repeated key", `[` + okEntry + `,` + okEntry + `]`, "repeats"},
	{"a second array", `[][]`, `"["`},
	{"trailing text", `[] x`, "after the array"},
	{"trailing bracket", `[]]`, "after the array"},
}

func TestDecodeEntriesRefusesDamage(t *testing.T) {
	for _, tc := range damagedEntries {
		t.Run(tc.name, func(t *testing.T) {
			b, err := DecodeEntries([]byte(tc.in))
			if !errors.Is(err, ErrDamagedEntries) {
				t.Fatalf("DecodeEntries(%q) = %v, %v; want ErrDamagedEntries", tc.in, b, err)
			}
			if b != nil {
				t.Fatalf("DecodeEntries(%q) returned %v with its error", tc.in, b)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DecodeEntries(%q) error %q does not say %q", tc.in, err, tc.want)
			}
		})
	}
}

// FuzzDecodeEntries: whatever DecodeEntries accepts is a baseline every
// store holds, and it has one encoding, which reads back the same.
func FuzzDecodeEntries(f *testing.F) {
	f.Add([]byte(`[]`))
	f.Add([]byte(`[` + okEntry + `]`))
	f.Add([]byte(`[{"kind":"instructions","name":"","value":"fp","contract":null},{"kind":"prompt","name":"a b","value":"p","contract":"e30="}]`))
	for _, tc := range damagedEntries {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeEntries(data)
		if err != nil {
			if !errors.Is(err, ErrDamagedEntries) || b != nil {
				t.Fatalf("DecodeEntries(%q) = %v, %v", data, b, err)
			}
			return
		}
		if err := b.Validate(); err != nil {
			t.Fatalf("DecodeEntries(%q) accepted a baseline no store holds: %v", data, err)
		}
		enc, err := EncodeEntries(b)
		if err != nil {
			t.Fatalf("EncodeEntries(DecodeEntries(%q)): %v", data, err)
		}
		again, err := DecodeEntries(enc)
		if err != nil || !equalBaselines(again, b) {
			t.Fatalf("%q decodes to %v; its encoding %q decodes to %v, %v", data, b, enc, again, err)
		}
		if enc2, _ := EncodeEntries(again); !bytes.Equal(enc2, enc) {
			t.Fatalf("two encodings of one baseline: %q and %q", enc, enc2)
		}
	})
}
