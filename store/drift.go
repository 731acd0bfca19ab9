package store

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// storable explains why a string cannot be stored as text by every
// implementation ("" when it can): PostgreSQL text holds neither a NUL byte
// nor invalid UTF-8, so no store accepts them.
func storable(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "holds a NUL byte"
	}
	return ""
}

// Validate reports whether every store can hold k, with an error wrapping
// ErrInvalid when not: its Kind must be one of the six; the instructions'
// Name must be ""; any other Name may be any string that is valid UTF-8
// and holds no NUL byte (PostgreSQL text can hold no other, so no store
// accepts one, and a caller can tell in advance which names it must keep
// out of a baseline).
func (k BaselineKey) Validate() error {
	if !k.Kind.Valid() {
		return fmt.Errorf("%w: baseline entry %q: unknown kind %q (want tool, prompt, template, instructions, marker or skill)", ErrInvalid, k.Name, string(k.Kind))
	}
	if k.Kind == KindInstructions && k.Name != "" {
		return fmt.Errorf("%w: baseline entry %s: the instructions entry has the name \"\", not %q", ErrInvalid, k, k.Name)
	}
	if why := storable(k.Name); why != "" {
		return fmt.Errorf("%w: baseline entry %s: the name %s", ErrInvalid, k, why)
	}
	return nil
}

// Validate reports whether every store can hold b (an error wrapping
// ErrInvalid when not): each key passes BaselineKey.Validate and each
// Value is valid UTF-8 without a NUL byte. Contracts are opaque bytes.
func (b Baseline) Validate() error {
	for k, e := range b {
		if err := k.Validate(); err != nil {
			return err
		}
		if why := storable(e.Value); why != "" {
			return fmt.Errorf("%w: baseline entry %s: the value %s", ErrInvalid, k, why)
		}
	}
	return nil
}

// Clone returns a deep copy of b (a nil b gives an empty, non-nil
// Baseline). An empty Contract is copied as nil, as every store reads it
// back.
func (b Baseline) Clone() Baseline {
	out := make(Baseline, len(b))
	for k, e := range b {
		if len(e.Contract) == 0 {
			e.Contract = nil
		} else {
			e.Contract = bytes.Clone(e.Contract)
		}
		out[k] = e
	}
	return out
}

// Validate reports what DriftStore.ObserveListing refuses, with an error
// wrapping ErrInvalid: an empty ServerID, Listing or SeenBy, a Listing or
// SeenBy that is not valid UTF-8 or holds a NUL byte, a negative
// BaselineVersion, or Entries that fail Baseline.Validate.
func (o Observation) Validate() error {
	switch {
	case o.ServerID == "":
		return fmt.Errorf("%w: observation: the server ID is empty", ErrInvalid)
	case o.Listing == "":
		return fmt.Errorf("%w: observation of server %q: the listing fingerprint is empty", ErrInvalid, o.ServerID)
	case o.SeenBy == "":
		return fmt.Errorf("%w: observation of server %q: no observing instance (SeenBy)", ErrInvalid, o.ServerID)
	case o.BaselineVersion < 0:
		return fmt.Errorf("%w: observation of server %q: negative baseline version %d", ErrInvalid, o.ServerID, o.BaselineVersion)
	}
	if why := storable(o.Listing); why != "" {
		return fmt.Errorf("%w: observation of server %q: the listing fingerprint %q %s", ErrInvalid, o.ServerID, o.Listing, why)
	}
	if why := storable(o.SeenBy); why != "" {
		return fmt.Errorf("%w: observation of server %q: the instance name %q %s", ErrInvalid, o.ServerID, o.SeenBy, why)
	}
	if err := o.Entries.Validate(); err != nil {
		return fmt.Errorf("observation of server %q: %w", o.ServerID, err)
	}
	return nil
}
