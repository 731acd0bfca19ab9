package sqlstore

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
)

// ErrDamagedEntries is what DecodeEntries returns (wrapped, with what is
// wrong and where) for bytes it did not write: an observation whose stored
// listing cannot be read is reported, never guessed at.
var ErrDamagedEntries = errors.New("store: damaged observation entries")

// entryJSON is one baseline entry as the observations.entries column holds
// it. The pointers tell a missing field from an empty one.
type entryJSON struct {
	Kind     *string `json:"kind"`
	Name     *string `json:"name"`
	Value    *string `json:"value"`
	Contract []byte  `json:"contract"` // base64: the store keeps it opaque
}

// EncodeEntries writes b as the observations.entries column holds it: a
// JSON array of {"kind", "name", "value", "contract"} objects, ordered by
// kind then name (so one baseline has one encoding), the contract in
// base64 or null. b must pass store.Baseline.Validate (then the encoding
// cannot fail and DecodeEntries reads back b exactly).
func EncodeEntries(b store.Baseline) ([]byte, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	keys := slices.SortedFunc(maps.Keys(b), func(x, y store.BaselineKey) int {
		return cmp.Or(cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Name, y.Name))
	})
	out := make([]entryJSON, len(keys))
	for i, k := range keys {
		e := b[k]
		kind, name, value := string(k.Kind), k.Name, e.Value
		out[i] = entryJSON{Kind: &kind, Name: &name, Value: &value, Contract: norm.Bytes(e.Contract)}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("store: encoding observation entries: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func damaged(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrDamagedEntries, fmt.Sprintf(format, args...))
}

// DecodeEntries reads an observations.entries column (EncodeEntries). It is
// strict: anything but valid UTF-8 holding one JSON array of objects with
// exactly the fields kind, name and value (strings) and an optional
// contract (base64 or null), each key a valid and distinct
// store.BaselineKey and each value one a store can hold, is an error
// wrapping ErrDamagedEntries that says what is wrong and where. An empty
// contract reads back as nil.
func DecodeEntries(data []byte) (store.Baseline, error) {
	if !utf8.Valid(data) {
		return nil, damaged("not UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	tok, err := dec.Token()
	if err == io.EOF {
		return nil, damaged("empty (want a JSON array)")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: not JSON: %w", ErrDamagedEntries, err)
	}
	if tok != json.Delim('[') {
		return nil, damaged("%s where a JSON array was expected", describeToken(tok))
	}
	out := store.Baseline{}
	for i := 0; dec.More(); i++ {
		var e entryJSON
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %w", ErrDamagedEntries, i, err)
		}
		switch {
		case e.Kind == nil:
			return nil, damaged("entry %d has no kind", i)
		case e.Name == nil:
			return nil, damaged("entry %d (kind %q) has no name", i, *e.Kind)
		case e.Value == nil:
			return nil, damaged("entry %d (%s %q) has no value", i, *e.Kind, *e.Name)
		}
		k := store.BaselineKey{Kind: store.BaselineKind(*e.Kind), Name: *e.Name}
		one := store.Baseline{k: {Value: *e.Value}}
		if err := one.Validate(); err != nil {
			return nil, damaged("entry %d: %v", i, err)
		}
		if _, dup := out[k]; dup {
			return nil, damaged("entry %d repeats the key %s", i, k)
		}
		out[k] = store.BaselineEntry{Value: *e.Value, Contract: norm.Bytes(e.Contract)}
	}
	if _, err := dec.Token(); err == io.EOF { // the closing bracket
		return nil, damaged("the array ends without its closing bracket, after %d entries", len(out))
	} else if err != nil {
		return nil, fmt.Errorf("%w: after %d entries: %w", ErrDamagedEntries, len(out), err)
	}
	if tok, err := dec.Token(); err != io.EOF {
		if err != nil {
			return nil, fmt.Errorf("%w: after the array: %w", ErrDamagedEntries, err)
		}
		return nil, damaged("%s after the array", describeToken(tok))
	}
	return out, nil
}

// describeToken names a JSON token for an error message.
func describeToken(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", string(v))
	case string:
		return "a string"
	case nil:
		return "null"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}
