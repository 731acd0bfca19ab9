package pin

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ToolPrint is what Compare needs of one tool of a listing.
type ToolPrint struct {
	// Name is the tool's name as the server published it.
	Name string
	// Fingerprint is ToolFingerprint of its contract.
	Fingerprint string
	// Unnamed is UnnamedFingerprint of its contract ("" disables rename
	// detection for this tool).
	Unnamed string
}

// NewToolPrint computes both fingerprints of c.
func NewToolPrint(c Contract) (ToolPrint, error) {
	fp, err := ToolFingerprint(c)
	if err != nil {
		return ToolPrint{}, err
	}
	un, err := UnnamedFingerprint(c)
	if err != nil {
		return ToolPrint{}, err
	}
	return ToolPrint{Name: c.Name, Fingerprint: fp, Unnamed: un}, nil
}

// Pin is what a trust baseline keeps for one tool. Its String form is one
// string a store can keep per tool, and ParsePin reads it back.
type Pin struct {
	// Fingerprint is the trusted ToolFingerprint.
	Fingerprint string
	// Unnamed is the trusted UnnamedFingerprint, or "" when unknown (a pin
	// stored by something that kept only the fingerprint); such a pin is
	// never the source of a detected rename.
	Unnamed string
}

// String returns "FINGERPRINT:UNNAMED", or "FINGERPRINT" when Unnamed is
// empty.
func (p Pin) String() string {
	if p.Unnamed == "" {
		return p.Fingerprint
	}
	return p.Fingerprint + ":" + p.Unnamed
}

// ErrBadPin is wrapped by ParsePin's errors.
var ErrBadPin = errors.New("pin: malformed stored pin")

// ParsePin reads a Pin from its String form: 64 lower-case hex digits,
// optionally followed by ":" and 64 more. Anything else (other lengths,
// upper-case or non-hex digits, more parts, surrounding space) is an error
// wrapping ErrBadPin: a store that finds one should treat the baseline as
// damaged, never as absent.
func ParsePin(s string) (Pin, error) {
	named, unnamed, two := strings.Cut(s, ":")
	if !isFingerprint(named) {
		return Pin{}, fmt.Errorf("%w: %q: the fingerprint is not 64 lower-case hex digits", ErrBadPin, clip(s))
	}
	if !two {
		return Pin{Fingerprint: named}, nil
	}
	if !isFingerprint(unnamed) {
		return Pin{}, fmt.Errorf("%w: %q: the unnamed fingerprint is not 64 lower-case hex digits", ErrBadPin, clip(s))
	}
	return Pin{Fingerprint: named, Unnamed: unnamed}, nil
}

func isFingerprint(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Baseline is a server's trusted tool contracts, by tool name. A nil or empty
// Baseline means none has been recorded yet (first sight).
type Baseline map[string]Pin

// BaselineOf returns the baseline that trusts the listing current as it is:
// what to record on first sight (every decision New) or on an explicit
// re-trust. A name listed more than once with different fingerprints is left
// out (it is not trustworthy as one contract; Compare withholds it).
func BaselineOf(current []ToolPrint) Baseline {
	b := make(Baseline, len(current))
	conflict := map[string]bool{}
	for _, t := range current {
		if old, ok := b[t.Name]; ok && old.Fingerprint != t.Fingerprint {
			conflict[t.Name] = true
		}
		b[t.Name] = Pin{Fingerprint: t.Fingerprint, Unnamed: t.Unnamed}
	}
	for name := range conflict {
		delete(b, name)
	}
	return b
}

// Action is what happens to one tool after a listing is compared with the
// baseline.
type Action string

// The actions. Only Trusted and New tools are exposed as published.
const (
	// Trusted: the contract is the one in the baseline.
	Trusted Action = "trusted"
	// Quarantined: the baseline has this name with another contract. The tool
	// keeps its name; its description is replaced (QuarantineDescription),
	// its schema emptied and its calls refused until a re-trust.
	Quarantined Action = "quarantined"
	// Withheld: a baseline exists and does not have this name. The tool is
	// not exposed until a re-trust.
	Withheld Action = "withheld"
	// Removed: the baseline has this name and the listing does not.
	Removed Action = "removed"
	// New: no baseline existed at all; this is first sight and the listing
	// is to be recorded (BaselineOf) and exposed.
	New Action = "new"
)

// Decision is the outcome of Compare for one tool name.
type Decision struct {
	// Tool is the tool's name.
	Tool string
	// Action is what happens to it.
	Action Action
	// Fingerprint is the tool's fingerprint in the listing ("" when Removed,
	// or when Conflict).
	Fingerprint string
	// BaselineFingerprint is the trusted fingerprint ("" when the baseline
	// has no such tool).
	BaselineFingerprint string
	// RenamedFrom is set on a Withheld tool whose contract, name aside, is
	// exactly that of a tool the listing no longer has; the two are paired
	// only when the match is unique both ways.
	RenamedFrom string
	// RenamedTo is set on the Removed tool of such a pair.
	RenamedTo string
	// Conflict reports that the listing published this name more than once
	// with different contracts. Such a tool is never trusted by this
	// listing: it is Quarantined if the baseline has the name and Withheld
	// otherwise (even on first sight), and BaselineOf leaves it out.
	Conflict bool
}

// Callable reports whether the tool is exposed as published (Trusted or
// New).
func (d Decision) Callable() bool { return d.Action == Trusted || d.Action == New }

// Compare decides every tool of a listing against a baseline. The result
// has one Decision per distinct name in current or baseline, sorted by name:
//
//   - baseline empty: every tool New (Conflict ones Withheld);
//   - same name, same fingerprint: Trusted;
//   - same name, other fingerprint: Quarantined;
//   - name not in the baseline: Withheld, with RenamedFrom when it pairs
//     uniquely, by unnamed fingerprint, with a Removed tool;
//   - baseline name not in the listing: Removed.
//
// Duplicate entries of one name with equal fingerprints count once. Compare
// is a pure function: the same inputs in any order give the same output.
func Compare(baseline Baseline, current []ToolPrint) []Decision {
	type entry struct {
		print    ToolPrint
		conflict bool
	}
	seen := make(map[string]*entry, len(current))
	names := make([]string, 0, len(current))
	for _, t := range current {
		if e, ok := seen[t.Name]; ok {
			if e.print.Fingerprint != t.Fingerprint {
				e.conflict = true
			}
			continue
		}
		seen[t.Name] = &entry{print: t}
		names = append(names, t.Name)
	}

	first := len(baseline) == 0
	out := make([]Decision, 0, len(names)+len(baseline))
	for _, name := range names {
		e := seen[name]
		d := Decision{Tool: name, Fingerprint: e.print.Fingerprint, Conflict: e.conflict}
		pin, known := baseline[name]
		if known {
			d.BaselineFingerprint = pin.Fingerprint
		}
		switch {
		case e.conflict:
			d.Fingerprint = ""
			d.Action = Withheld
			if known {
				d.Action = Quarantined
			}
		case first:
			d.Action = New
		case !known:
			d.Action = Withheld
		case pin.Fingerprint == e.print.Fingerprint:
			d.Action = Trusted
		default:
			d.Action = Quarantined
		}
		out = append(out, d)
	}
	for name, pin := range baseline {
		if _, ok := seen[name]; !ok {
			out = append(out, Decision{Tool: name, Action: Removed, BaselineFingerprint: pin.Fingerprint})
		}
	}
	slices.SortFunc(out, func(a, b Decision) int { return strings.Compare(a.Tool, b.Tool) })

	// Rename detection: pair a Withheld tool with a Removed one when their
	// unnamed fingerprints match and the match is unique on both sides.
	withheldBy := map[string][]int{}
	removedBy := map[string][]int{}
	for i, d := range out {
		switch {
		case d.Action == Withheld && !d.Conflict:
			if u := seen[d.Tool].print.Unnamed; u != "" {
				withheldBy[u] = append(withheldBy[u], i)
			}
		case d.Action == Removed:
			if u := baseline[d.Tool].Unnamed; u != "" {
				removedBy[u] = append(removedBy[u], i)
			}
		}
	}
	for u, w := range withheldBy {
		r := removedBy[u]
		if len(w) == 1 && len(r) == 1 {
			out[w[0]].RenamedFrom = out[r[0]].Tool
			out[r[0]].RenamedTo = out[w[0]].Tool
		}
	}
	return out
}
