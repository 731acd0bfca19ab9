package callargs

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzNormalizeArgs: raw arguments from a caller (often a model) are either
// refused or passed on as exactly one valid JSON object (or nothing).
func FuzzNormalizeArgs(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, ` {"a":[1,2]} `, `null`, ``, `[1]`, `"s"`, `{`, `{"a":1}{"b":2}`, "{\"a\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := bytes.Clone(b)
		v, err := Normalize(json.RawMessage(b))
		if !bytes.Equal(orig, b) {
			t.Fatal("input modified")
		}
		if err != nil {
			if v != nil {
				t.Fatal("value with error")
			}
			return
		}
		if v == nil {
			if t := bytes.TrimSpace(b); len(t) != 0 && string(t) != "null" {
				panic("non-empty input accepted as nothing: " + string(b))
			}
			return
		}
		raw, ok := v.(json.RawMessage)
		if !ok {
			t.Fatalf("got %T", v)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			t.Fatalf("accepted %q, not one JSON object: %v", raw, err)
		}
	})
}
