package toolset

import (
	"fmt"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/internal/pin"
)

// DriftKind is what drifted.
type DriftKind string

// Drift kinds.
const (
	DriftTool         DriftKind = "tool"
	DriftPrompt       DriftKind = "prompt"
	DriftTemplate     DriftKind = "template"
	DriftInstructions DriftKind = "instructions"
)

// DriftEvent is one drift decision of a server's last judged listing: a
// tool, prompt or resource template that changed after it was trusted
// (quarantined), appeared after trust or cannot be fingerprinted
// (withheld), or disappeared (removed); or instructions that changed.
// Each is also a tool-drift diagnostic, worded for a person: branch on the
// typed fields, never on the wording.
type DriftEvent struct {
	// Server is the configured server name, ServerID its store row ID.
	Server, ServerID string
	// Kind is what drifted.
	Kind DriftKind
	// Decision is the pin decision. Decision.Tool names the item on its
	// server (a tool's or prompt's name, a template's URI template; empty
	// for instructions), Decision.Action is pin.Quarantined, pin.Withheld
	// or pin.Removed. Changed instructions are pin.Quarantined: the new
	// ones are not trusted (and never reach a model either way).
	Decision pin.Decision
	// Diagnostic is the tool-drift diagnostic that reports the event.
	Diagnostic diag.Diagnostic
}

// newDrift returns a drift event of server and its diagnostic, worded by
// format and args.
func newDrift(server string, kind DriftKind, d pin.Decision, format string, args ...any) DriftEvent {
	return DriftEvent{Server: server, Kind: kind, Decision: d,
		Diagnostic: diag.New(diag.ToolDrift, "", server, "%s", fmt.Sprintf(format, args...))}
}

// Drift returns the drift events of every server's last judged listing, in
// server order (what Diagnostics reports as tool-drift diagnostics).
func (t *Toolset) Drift() []DriftEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cat == nil {
		return nil
	}
	return append([]DriftEvent(nil), t.cat.drift...)
}
