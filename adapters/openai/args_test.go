package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// TestArgs: every way a model's arguments can be wrong becomes recordable
// JSON the executor answers (not an object), and goes back to the model
// as it wrote it.
func TestArgs(t *testing.T) {
	cases := []struct {
		in, args, back string
	}{
		{"", "", "{}"},                                               // none: the executor reads {}
		{`{"a": 1}`, `{"a":1}`, `{"a":1}`},                           // an object, compacted
		{"  {\n\"a\":1}\n", `{"a":1}`, `{"a":1}`},                    // whitespace around
		{`{"a":`, `"{\"a\":"`, `{"a":`},                              // cut short
		{`not json`, `"not json"`, `not json`},                       // not JSON
		{`[1,2]`, `"[1,2]"`, `[1,2]`},                                // an array
		{`"s"`, `"\"s\""`, `"s"`},                                    // a JSON string
		{`42`, `"42"`, `42`},                                         // a number
		{`null`, `"null"`, `null`},                                   // null
		{`{"a":1}{"b":2}`, `"{\"a\":1}{\"b\":2}"`, `{"a":1}{"b":2}`}, // two values
	}
	for _, c := range cases {
		got := argsOf(c.in)
		if string(got) != c.args {
			t.Errorf("argsOf(%q) = %s, want %s", c.in, got, c.args)
		}
		if back := argsText(got); back != c.back {
			t.Errorf("argsText(argsOf(%q)) = %q, want %q", c.in, back, c.back)
		}
	}
}

// FuzzArgs: whatever the model writes, the arguments are nil or valid
// JSON that survives the journal's encoding unchanged, an object stays
// an object, and argsText gives the model's text back (compacted for an
// object, with what encoding/json escapes in strings escaped).
func FuzzArgs(f *testing.F) {
	for _, s := range []string{"", `{"a":1}`, " {\"a\" : [1, 2]} ", `{"a":`, "x", `"s"`, `[1]`, `null`, `{}{}`, `{"a":"\u00e9\ud800"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip("the SDK hands over decoded JSON strings: valid UTF-8")
		}
		a := argsOf(s)
		if s == "" {
			if a != nil {
				t.Fatalf("argsOf(\"\") = %s", a)
			}
			return
		}
		if !json.Valid(a) {
			t.Fatalf("argsOf(%q) = %s: not JSON", s, a)
		}
		b, err := json.Marshal(loop.ModelResponse{ToolCalls: []loop.ToolCall{{ID: "c", Name: "f", Args: a}}})
		if err != nil {
			t.Fatalf("not recordable: %v", err)
		}
		var back loop.ModelResponse
		if err := json.Unmarshal(b, &back); err != nil || !bytes.Equal(back.ToolCalls[0].Args, a) {
			t.Fatalf("recorded %s, replayed %s (%v)", a, back.ToolCalls[0].Args, err)
		}
		text := argsText(a)
		if a[0] == '{' {
			var buf, esc bytes.Buffer
			if err := json.Compact(&buf, []byte(s)); err != nil {
				t.Fatalf("object %q: %v", s, err)
			}
			if json.HTMLEscape(&esc, buf.Bytes()); text != esc.String() {
				t.Fatalf("object %q back as %q", s, text)
			}
		} else if text != s {
			t.Fatalf("%q back as %q", s, text)
		}
	})
}

// FuzzSchema: a schema is refused with ErrSchema or sent as it is (plus
// "type": "object" when it has no type, and its top-level combinators
// merged by toolset.ProviderSchema), numbers exact, by both APIs.
func FuzzSchema(f *testing.F) {
	for _, s := range []string{`{"type":"object"}`, `{"properties":{"a":{"type":"integer","maximum":9007199254740993}}}`,
		`{"$defs":{"p":{"type":"number"}},"oneOf":[{"$ref":"#/$defs/p"}]}`, `[]`, `null`, `{"a":1e400,"b":-0.0}`, `{`, `{} {}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		defs := []loop.ToolDef{{Name: "f", InputSchema: schema}}
		rt, err := ResponsesTools(defs, nil)
		ct, cerr := ChatTools(defs, nil)
		if (err == nil) != (cerr == nil) {
			t.Fatalf("the APIs disagree: %v / %v", err, cerr)
		}
		var want map[string]any
		dec := json.NewDecoder(bytes.NewReader(schema))
		dec.UseNumber()
		if dec.Decode(&want) != nil || want == nil || len(schema) == 0 || !json.Valid(schema) {
			if len(schema) == 0 {
				return // none: {"type":"object"}
			}
			if !errors.Is(err, ErrSchema) {
				t.Fatalf("schema %q: err %v, want ErrSchema", schema, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("schema %q refused: %v", schema, err)
		}
		want, _ = toolset.ProviderSchema(want)
		if _, ok := want["type"]; !ok {
			want["type"] = "object"
		}
		for _, v := range []any{rt[0], ct[0]} {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			var sent struct {
				Parameters json.RawMessage `json:"parameters"`
				Function   struct {
					Parameters json.RawMessage `json:"parameters"`
				} `json:"function"`
			}
			if err := json.Unmarshal(b, &sent); err != nil {
				t.Fatal(err)
			}
			p := sent.Parameters
			if p == nil {
				p = sent.Function.Parameters
			}
			var got map[string]any
			d := json.NewDecoder(bytes.NewReader(p))
			d.UseNumber()
			if err := d.Decode(&got); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("schema %s sent as %s (%v)", schema, p, err)
			}
		}
	})
}
