package projection

import (
	"errors"
	"fmt"
	"slices"
)

// ErrFilterConflict is returned (wrapped) by Filter.Validate when both Allow
// and Block are set.
var ErrFilterConflict = errors.New("projection: allow and block filters are mutually exclusive")

// Filter keeps or drops a server's tools by remote or projected name. Allow
// and Block are mutually exclusive. An empty (nil or zero-length) list is
// "not set": a Filter with neither keeps every tool.
type Filter struct {
	// Allow, when set, keeps only the tools named here (by remote or
	// projected name).
	Allow []string
	// Block, when set, drops the tools named here (by remote or projected
	// name).
	Block []string
}

// Validate returns an error wrapping ErrFilterConflict when both Allow and
// Block are set.
func (f Filter) Validate() error {
	if len(f.Allow) > 0 && len(f.Block) > 0 {
		return fmt.Errorf("%w: set allow (%d names) or block (%d names), not both", ErrFilterConflict, len(f.Allow), len(f.Block))
	}
	return nil
}

// Keep reports whether the tool with the given remote and projected names
// passes the filter. When Allow is set a tool is kept if either name is in
// Allow; otherwise it is kept unless either name is in Block. Keep assumes a
// valid filter; with both lists set, Allow decides and Block also drops.
func (f Filter) Keep(remote, projected string) bool {
	in := func(list []string) bool {
		return slices.Contains(list, remote) || slices.Contains(list, projected)
	}
	if len(f.Allow) > 0 && !in(f.Allow) {
		return false
	}
	return !in(f.Block)
}
