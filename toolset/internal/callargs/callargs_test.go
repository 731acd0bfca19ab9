package callargs

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestNormalize(t *testing.T) {
	m := map[string]any{"a": 1}
	if v, err := Normalize(m); err != nil || reflect.ValueOf(v).Pointer() != reflect.ValueOf(m).Pointer() {
		t.Errorf("a map is passed as is: %v %v", v, err)
	}
	type in struct {
		A int `json:"a"`
	}
	for name, tc := range map[string]struct {
		args any
		want string // "" for nil
	}{
		"nil":              {nil, ""},
		"raw object":       {json.RawMessage(` {"a":[1,2]} `), `{"a":[1,2]}`},
		"bytes object":     {[]byte(`{"a":1}`), `{"a":1}`},
		"raw null":         {json.RawMessage(`null`), ""},
		"blank bytes":      {[]byte(" \n"), ""},
		"struct":           {in{A: 2}, `{"a":2}`},
		"map of strings":   {map[string]string{"k": "v"}, `{"k":"v"}`},
		"nil struct ptr":   {(*in)(nil), ""},
		"raw with escapes": {json.RawMessage(`{"a":"\u00e9"}`), `{"a":"\u00e9"}`},
	} {
		v, err := Normalize(tc.args)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if tc.want == "" {
			if v != nil {
				t.Errorf("%s: got %v, want nil", name, v)
			}
			continue
		}
		raw, ok := v.(json.RawMessage)
		if !ok || string(raw) != tc.want {
			t.Errorf("%s: got %T %s, want %s", name, v, v, tc.want)
		}
	}
	for name, args := range map[string]any{
		"array":          json.RawMessage(`[1]`),
		"string":         "s",
		"number":         7,
		"slice":          []int{1},
		"two objects":    []byte(`{"a":1}{"b":2}`),
		"truncated":      []byte(`{`),
		"not encodable":  func() {},
		"map, bad value": map[string]func(){"f": nil},
	} {
		if v, err := Normalize(args); err == nil || v != nil {
			t.Errorf("%s: accepted as %v (%v)", name, v, err)
		}
	}
	b := []byte(` {"a":1} `)
	if _, err := Normalize(b); err != nil || string(b) != ` {"a":1} ` {
		t.Errorf("input modified: %q %v", b, err)
	}
}

func TestMeta(t *testing.T) {
	in := map[string]any{"trace": "t1", ReservedMetaPrefix + "related-task": "spoofed"}
	got := Meta(in, "run1", "call7")
	want := map[string]any{"trace": "t1", "idempotencyKey": "run1:call7"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if len(in) != 2 {
		t.Errorf("meta modified: %v", in)
	}
	got["x"] = 1
	if again := Meta(in, "run1", "call7"); len(again) != 2 {
		t.Errorf("not a fresh map: %v", again)
	}
	if got := Meta(in, "run1", ""); !reflect.DeepEqual(got, map[string]any{"trace": "t1"}) {
		t.Errorf("without a tool call ID: %v", got)
	}
	if got := Meta(nil, "", "call7"); got != nil {
		t.Errorf("without a run ID: %v", got)
	}
	if got := Meta(map[string]any{ReservedMetaPrefix + "x": 1}, "", ""); got != nil {
		t.Errorf("only reserved keys: %v", got)
	}
	if got := Meta(nil, "r", "c"); !reflect.DeepEqual(got, map[string]any{"idempotencyKey": "r:c"}) {
		t.Errorf("key only: %v", got)
	}
}
