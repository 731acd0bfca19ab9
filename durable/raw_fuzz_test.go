package durable

import (
	"bytes"
	"encoding/json"
	"github.com/gatehouse-dev/gatehouse/internal/rawresult"
	"testing"

	"github.com/gatehouse-dev/gatehouse/store"
)

// FuzzRawOutcome checks rawObject and the outcome classify records for
// result bytes against encoding/json: bytes are taken iff they are one
// JSON object, and the outcome then holds them unchanged, as valid JSON
// that replays; anything else is refused with one of the two errors.
// The seed corpus is in testdata/fuzz/FuzzRawOutcome.
func FuzzRawOutcome(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		var m map[string]json.RawMessage
		object := json.Unmarshal(b, &m) == nil && m != nil
		err := rawObject(b)
		if object != (err == nil) {
			t.Fatalf("rawObject(%q) = %v, encoding/json says object=%v", b, err, object)
		}
		if err != nil {
			if err != errRawInvalid && err != errRawNotObject {
				t.Fatalf("rawObject(%q): unexpected error %v", b, err)
			}
			return
		}
		for _, isErr := range []bool{false, true} {
			st, out, known := classify(answer{raw: rawresult.Result{JSON: b, IsError: isErr}}, nil)
			if !known || (st == store.StateFailed) != isErr {
				t.Fatalf("classify(%q, isError %v) = %s %v", b, isErr, st, known)
			}
			var o outcome
			if err := json.Unmarshal(out, &o); err != nil || o.Error != nil {
				t.Fatalf("outcome %q does not decode: %v", out, err)
			}
			if !bytes.Equal(o.Result, bytes.Trim(b, " \t\r\n")) {
				t.Fatalf("outcome holds %q, want %q", o.Result, b)
			}
		}
	})
}
