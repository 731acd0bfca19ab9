package projection

import (
	"encoding/json"
	"math"
	"testing"
)

func TestJSONSizeMatchesMarshal(t *testing.T) {
	values := []map[string]any{
		{},
		{"a": nil, "b": true, "c": false, "d": "x"},
		{"esc": "quote\" back\\ nl\n cr\r tab\t bs\b ff\f nul\x00 us\x1f <tag> & amp", "u": "é 検索 💸 \u2028\u2029", "bad": "a\xffb\xc3"},
		{"n": []any{0.0, math.Copysign(0, -1), 1.0, -1.5, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, 5e-324, math.MaxFloat64, 1.0 / 3}},
		{"i": 42, "i64": int64(-7), "num": json.Number("12.50"), "strs": []string{"a", "<b>"}, "nilstrs": []string(nil)},
		{"nested": map[string]any{"x": []any{map[string]any{}, []any{}, nil}}, "nilmap": map[string]any(nil), "nilslice": []any(nil)},
		{"other": []int{1, 2, 3}, "raw": json.RawMessage(`{"z": 1}`)},
	}
	for _, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonSize(v); got != len(b) {
			t.Errorf("jsonSize = %d, len(Marshal) = %d for %s", got, len(b), b)
		}
	}
	if jsonSize(nil) != 4 {
		t.Errorf("nil map")
	}
}

func FuzzJSONSize(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"string","description":"<x> & \u2028"}}}`)
	f.Add(`{"n":[1e21,1e-7,0.1,-0,123456789012345678901234567890]}`)
	f.Add(`{"s":"\u0000\ud800"}`)
	f.Fuzz(func(t *testing.T, doc string) {
		var v map[string]any
		if json.Unmarshal([]byte(doc), &v) != nil || v == nil {
			return
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonSize(v); got != len(b) {
			t.Fatalf("jsonSize = %d, len(Marshal) = %d for %s", got, len(b), b)
		}
	})
}
