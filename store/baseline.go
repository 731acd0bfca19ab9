package store

import (
	"context"
	"fmt"
	"time"
)

// BaselineKind is what a baseline entry pins. Baselines have kinds so that
// any name a server publishes can be pinned: a tool named like a prompt, or
// with a space, is still a tool.
type BaselineKind string

// The baseline kinds.
const (
	// KindTool: a tool's pin (pin.Pin.String()), by tool name.
	KindTool BaselineKind = "tool"
	// KindPrompt: a prompt's fingerprint (pin.PromptFingerprint), by name.
	KindPrompt BaselineKind = "prompt"
	// KindTemplate: a resource template's fingerprint
	// (pin.TemplateFingerprint), by URI template.
	KindTemplate BaselineKind = "template"
	// KindInstructions: the server's instructions fingerprint; Name is "".
	KindInstructions BaselineKind = "instructions"
	// KindMarker: a kind was pinned (MarkerPrompts, MarkerTemplates), even
	// when the server had none of it, so a baseline recorded before that
	// kind was pinned is told apart from one that pinned an empty list.
	// Value is PinnedMarker.
	KindMarker BaselineKind = "marker"
	// KindSkill: a skill's fingerprint (its contract: name, description,
	// the body's hash and the file list with hashes), by skill name, in
	// the baseline of the plugin whose skills it pins (package
	// skills, through package trust).
	KindSkill BaselineKind = "skill"
)

// Valid reports whether k is one of the six kinds.
func (k BaselineKind) Valid() bool {
	switch k {
	case KindTool, KindPrompt, KindTemplate, KindInstructions, KindMarker, KindSkill:
		return true
	}
	return false
}

// Names of the KindMarker entries, and their value.
const (
	MarkerPrompts   = "prompts"
	MarkerTemplates = "templates"
	PinnedMarker    = "v1"
)

// BaselineKey names one baseline entry.
type BaselineKey struct {
	Kind BaselineKind
	// Name is the item's identity on its server: a tool's or prompt's
	// name, a template's URI template, a marker's name; "" for the
	// instructions. Any string is allowed, spaces and all, that is valid
	// UTF-8 and holds no NUL byte (see BaselineKey.Validate).
	Name string
}

// String is the key as messages show it: "instructions", or the kind and
// its quoted name (tool "echo").
func (k BaselineKey) String() string {
	if k.Kind == KindInstructions {
		return string(k.Kind)
	}
	return fmt.Sprintf("%s %q", k.Kind, k.Name)
}

// BaselineEntry is one trusted pin.
type BaselineEntry struct {
	// Value is the pin as the toolset writes it (a fingerprint, or
	// PinnedMarker for a marker). The store treats it as opaque text.
	Value string
	// Contract is the item's contract as it was trusted (JSON; the
	// toolset's form), shown as "before" when the item drifts. It is nil
	// for entries recorded before contracts were kept (a baseline
	// migrated from schema version 4). The store treats it as opaque;
	// an empty one reads back as nil.
	Contract []byte
}

// Baseline is a server's trusted pins, by key.
type Baseline map[BaselineKey]BaselineEntry

// Observation is one listing of a server as an instance saw it, judged
// against the server's baseline: the fleet's record of drift. The toolset
// writes one when a listing differs from the baseline (and when one that
// differed returns to it); every replica enforces the drift the open
// observations record, and an operator trusts one by its Listing.
type Observation struct {
	// ID is assigned by ObserveListing; it orders observations.
	ID int64
	// ServerID is the server's row ID.
	ServerID string
	// Listing is the observed listing's fingerprint (SHA-256 hex of the
	// baseline it would be, see the toolset).
	Listing string
	// BaselineVersion is the server's baseline version the listing was
	// judged against. Only observations made under the current version
	// are open: a trust (any change of the baseline) closes the others.
	BaselineVersion int64
	// SeenBy names the observing instance.
	SeenBy string
	// SeenAt is when it was first seen (from the store's clock when zero);
	// LastSeenAt when that instance last saw the same listing again.
	SeenAt     time.Time
	LastSeenAt time.Time
	// Entries is the observed listing as a baseline: what TrustListing
	// makes the server's baseline.
	Entries Baseline
	// Changes is the drift against the baseline, a JSON array (the
	// toolset's form, pin.Change); opaque to the store.
	Changes []byte
	// Drifted says Changes holds at least one change. An observation that
	// did not drift records a return to the baseline.
	Drifted bool
	// TrustedAt is when TrustListing accepted it; zero until then.
	TrustedAt time.Time
}

// DriftHead is a cheap summary of one server's trust state, for polling:
// a replica re-reads a server whose head moved.
type DriftHead struct {
	ServerID        string
	BaselineVersion int64
	// LastObservation is the highest observation ID of the server (0 when
	// there is none).
	LastObservation int64
}

// DriftStore records what instances observe of their servers' listings.
type DriftStore interface {
	// ObserveListing records o (ID, SeenAt and LastSeenAt are filled by
	// the store) unless the latest observation by o.SeenBy of o.ServerID
	// made under o.BaselineVersion has the same Listing: then it only
	// moves that one's LastSeenAt and returns it with added false.
	// ErrNotFound if the server row does not exist; ErrInvalid (checked
	// first, nothing written) for what Observation.Validate refuses: an
	// empty ServerID, Listing or SeenBy, or Entries that fail
	// Baseline.Validate.
	ObserveListing(ctx context.Context, o Observation) (stored Observation, added bool, err error)
	// OpenObservations returns, for serverID (every server when ""), the
	// latest observation of each instance made under the server's current
	// baseline version and not trusted, by ascending ID. With entries
	// false, Entries is left nil (the cheap form replicas poll). The slice
	// is empty, not nil, when nothing is open; ErrNotFound when serverID
	// names no server row.
	OpenObservations(ctx context.Context, serverID string, entries bool) ([]Observation, error)
	// GetObservation returns one observation, Entries included, or
	// ErrNotFound.
	GetObservation(ctx context.Context, id int64) (Observation, error)
	// TrustListing makes the listing an operator reviewed the server's
	// baseline, in one transaction: when the server's latest open
	// observation (the highest ID among OpenObservations) has that
	// Listing, the baseline is replaced by its Entries (the version bumped
	// once) and the observation is marked trusted and returned. Otherwise
	// nothing changes and the error is a *StaleListingError (errors.Is
	// ErrStaleListing); ErrNotFound when the server row does not exist;
	// ErrInvalid for an empty serverID or listing. TrustedAt is from the
	// store's clock. Two concurrent calls for one listing: one succeeds,
	// the other is stale (the first moved the version).
	TrustListing(ctx context.Context, serverID, listing string) (Observation, error)
	// DriftHeads returns the head of every server, ordered by ID, in one
	// query.
	DriftHeads(ctx context.Context) ([]DriftHead, error)
}
