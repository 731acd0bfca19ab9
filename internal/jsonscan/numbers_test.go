package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestNumbersFit(t *testing.T) {
	for in, want := range map[string]bool{
		`{}`:                                     true,
		`{"a":1,"b":[-0.5,2e10,1E-400]}`:         true,
		`{"a":1e308}`:                            true,
		`{"a":1.7976931348623157e308}`:           true,
		`{"a":1e309}`:                            false,
		`{"a":-1e400}`:                           false,
		`[1,2,{"x":[1e999]}]`:                    false,
		`{"a":"1e999"}`:                          true, // a string, not a number
		`{"1e999":0}`:                            true, // a key
		`{"a":"\"1e999"}`:                        true, // escaped quote inside a string
		`{"a":` + strings.Repeat("9", 308) + `}`: true,
		`{"a":` + strings.Repeat("9", 309) + `}`: false,
		`{"a":` + strings.Repeat("9", 400) + `}`: false,
		`"x"`:                                    true,
		`12`:                                     true,
	} {
		if got := NumbersFit([]byte(in)); got != want {
			t.Errorf("NumbersFit(%.40s) = %v, want %v", in, got, want)
		}
	}
}

// FuzzNumbersFit: NumbersFit agrees with encoding/json decoding into an
// interface value, on every valid document.
func FuzzNumbersFit(f *testing.F) {
	for _, s := range []string{`{"a":1e309}`, `[0.1,-2,3e-999]`, `{"k":"1e999","n":1}`, `1e308`, `-1.5E+308`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !Valid(b) {
			return
		}
		var v any
		err := json.Unmarshal(b, &v)
		if got := NumbersFit(b); got != (err == nil) {
			t.Fatalf("NumbersFit(%q) = %v, encoding/json says %v", b, got, err)
		}
	})
}
