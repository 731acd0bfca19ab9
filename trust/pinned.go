package trust

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/trust/internal/judge"
)

// Pinned is a listing given as pinned entries: what a publisher that is no
// MCP server holds (a plugin's skills), each entry already made a pin by
// its owner (package skills makes a skill's contract one). It is judged,
// recorded, enforced and trusted like a server's listing, in the same
// store rows, baselines and drift record.
type Pinned struct {
	// Row is the store row the listing is pinned under, created on first
	// sight (nothing connects to it: its Type says what it is).
	Row store.Server
	// Kind is the baseline kind of the entries, Change their pin.Change
	// kind (store.KindSkill, pin.ChangeSkill).
	Kind   store.BaselineKind
	Change string
	// Marker names the marker entry every baseline of the row holds, even
	// with no entries: a listing trusted with none has a baseline, so an
	// entry it gains later is new after trust, not first sight. It also
	// names the listing's fingerprint domain ("gatehouse/<Marker>-listing/v1").
	Marker string
	// Entries are the pins by name: the fingerprint (Value) and the
	// contract view an operator reviews (Contract, JSON).
	Entries map[string]store.BaselineEntry
}

// PinnedVerdict is a Pinned listing judged: the changes against the trusted
// baseline (changed, added, removed; what this instance records) and the
// entries other instances recorded as changed that this listing still has
// as trusted, with the observation that says so (enforced here too).
type PinnedVerdict struct {
	Changes   []pin.Change
	Elsewhere map[string]store.Observation
}

// baseline is the listing as a baseline: its entries under Kind, and the
// marker.
func (p Pinned) baseline() store.Baseline {
	b := store.Baseline{p.markerKey(): {Value: store.PinnedMarker}}
	for name, e := range p.Entries {
		b[store.BaselineKey{Kind: p.Kind, Name: name}] = e
	}
	return b
}

func (p Pinned) markerKey() store.BaselineKey {
	return store.BaselineKey{Kind: store.KindMarker, Name: p.Marker}
}

// Print names the listing: the SHA-256 (hex) of its entries' kinds, names
// and fingerprints (not the contract views) and its marker, sorted and
// length-prefixed, in a domain of its own (no Pinned listing shares a
// fingerprint with a server's). It is what `gatehouse trust ROW --listing`
// takes.
func (p Pinned) Print() string {
	return judge.DomainFingerprint("gatehouse/"+p.Marker+"-listing/v1", p.baseline())
}

// ensureRow creates the row when the store has none.
func (l *Ledger) ensureRow(ctx context.Context, row store.Server) error {
	_, err := l.st.GetServer(ctx, row.ID)
	if errors.Is(err, store.ErrNotFound) {
		return l.st.PutServer(ctx, row)
	}
	return err
}

// JudgePinned judges p against its row's trusted baseline and records what
// this instance saw: the first sight of the row records p as its baseline
// (trusted on first use, even with no entries); afterwards a listing that
// differs is recorded as an observation with the changes (once per
// instance and listing), and so is a return to the baseline after this
// instance recorded drift. The verdict holds the changes and what other
// instances recorded as changed. An error means p could not be judged (a
// store failure, or another instance's record that does not parse):
// nothing of it is to be trusted.
func (l *Ledger) JudgePinned(ctx context.Context, p Pinned) (PinnedVerdict, error) {
	id := p.Row.ID
	if err := l.ensureRow(ctx, p.Row); err != nil {
		return PinnedVerdict{}, fmt.Errorf("its store row %s: %w", pin.SanitizeName(id), err)
	}
	version, base, err := readBaseline(ctx, l.st, id)
	if err != nil {
		return PinnedVerdict{}, fmt.Errorf("reading its baseline: %w", err)
	}
	entries := p.baseline()
	if _, pinned := base[p.markerKey()]; !pinned {
		// First sight. Saving is insert-only, so when another process
		// recorded first, what it recorded counts: read it back.
		if _, err := l.st.SaveBaseline(ctx, id, entries); err != nil {
			return PinnedVerdict{}, fmt.Errorf("recording its baseline: %w", err)
		}
		if version, base, err = readBaseline(ctx, l.st, id); err != nil {
			return PinnedVerdict{}, fmt.Errorf("reading its baseline: %w", err)
		}
	}
	v := PinnedVerdict{Changes: p.diff(base), Elsewhere: map[string]store.Observation{}}
	obs, err := l.st.OpenObservations(ctx, id, false)
	if err != nil {
		return PinnedVerdict{}, fmt.Errorf("reading the recorded drift: %w", err)
	}
	var mine *store.Observation
	for i := range obs {
		if obs[i].SeenBy == l.instance && obs[i].BaselineVersion == version {
			mine = &obs[i]
		}
	}
	drifted := len(v.Changes) > 0
	print := p.Print()
	if (drifted || mine != nil && mine.Drifted) && (mine == nil || mine.Listing != print) {
		raw, err := json.Marshal(v.Changes)
		if err != nil {
			return PinnedVerdict{}, fmt.Errorf("encoding the drift: %w", err)
		}
		if _, _, err := l.st.ObserveListing(ctx, store.Observation{ServerID: id, Listing: print, BaselineVersion: version,
			SeenBy: l.instance, Entries: entries, Changes: raw, Drifted: drifted}); err != nil {
			return PinnedVerdict{}, fmt.Errorf("recording the drift: %w", err)
		}
	}
	var bad []error
	for _, o := range obs {
		if !o.Drifted || o.SeenBy == l.instance {
			continue
		}
		var cs []pin.Change
		if err := json.Unmarshal(o.Changes, &cs); err != nil {
			bad = append(bad, fmt.Errorf("observation %d of %s: its changes do not parse: %w", o.ID, pin.SanitizeName(o.ServerID), err))
			continue
		}
		for _, c := range cs {
			if c.Kind != p.Change || c.Change != pin.ChangeChanged {
				continue
			}
			if _, listed := p.Entries[c.Name]; listed {
				if _, seen := v.Elsewhere[c.Name]; !seen {
					v.Elsewhere[c.Name] = o
				}
			}
		}
	}
	return v, errors.Join(bad...)
}

// TrustPinned makes p its row's trusted baseline in one store transaction
// (store.ServerStore.ReplaceBaseline), whatever was trusted before and
// whatever drift was recorded; the baseline version moves, so every
// instance re-judges the row. It returns what the trust accepted (the
// changes from the baseline it replaced) and how many entries it cleared.
func (l *Ledger) TrustPinned(ctx context.Context, p Pinned) (changes []pin.Change, cleared int64, err error) {
	id := p.Row.ID
	if err := l.ensureRow(ctx, p.Row); err != nil {
		return nil, 0, fmt.Errorf("its store row: %w", err)
	}
	old, err := l.st.GetBaseline(ctx, id)
	if err != nil {
		return nil, 0, fmt.Errorf("reading its baseline: %w", err)
	}
	if cleared, err = l.st.ReplaceBaseline(ctx, id, p.baseline()); err != nil {
		return nil, 0, fmt.Errorf("recording its baseline: %w", err)
	}
	return p.diff(old), cleared, nil
}

// diff lists the changes from the trusted baseline base to p, by name:
// entries changed, added and removed.
func (p Pinned) diff(base store.Baseline) []pin.Change {
	was := map[string]store.BaselineEntry{}
	for k, e := range base {
		if k.Kind == p.Kind {
			was[k.Name] = e
		}
	}
	names := make([]string, 0, len(was)+len(p.Entries))
	for n := range was {
		names = append(names, n)
	}
	for n := range p.Entries {
		if _, ok := was[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := []pin.Change{}
	for _, n := range names {
		b, inBase := was[n]
		a, inNow := p.Entries[n]
		c := pin.Change{Kind: p.Change, Name: n}
		switch {
		case inBase && inNow && b.Value == a.Value:
			continue
		case inBase && inNow:
			c.Change, c.Before, c.After = pin.ChangeChanged, side(b), side(a)
		case inNow:
			c.Change, c.Before, c.After = pin.ChangeAdded, json.RawMessage("null"), side(a)
		default:
			c.Change, c.Before, c.After = pin.ChangeRemoved, side(b), json.RawMessage("null")
		}
		out = append(out, c)
	}
	return out
}

// side is an entry's contract view for a change: the kept contract, or
// only its fingerprint when none was kept (or it is not JSON).
func side(e store.BaselineEntry) json.RawMessage {
	if len(e.Contract) > 0 && json.Valid(e.Contract) {
		return e.Contract
	}
	return pin.FingerprintView(e.Value)
}
