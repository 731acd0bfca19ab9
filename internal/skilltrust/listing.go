package skilltrust

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/pin"
	"github.com/gatehouse-dev/gatehouse/skills"
	"github.com/gatehouse-dev/gatehouse/store"
)

// OwnerPrefix starts the store row ID (and name) under which a plugin's
// skills are pinned: Owner(plugin).
const OwnerPrefix = "skills:"

// OwnerType is the transport type kept in the row of a plugin's skills: it
// is no server, and nothing connects to it.
const OwnerType = "skills"

// Owner returns the store row ID, and name, of the baseline that pins the
// skills of plugin: "skills:" followed by the plugin's name.
func Owner(plugin string) string { return OwnerPrefix + plugin }

// PluginOf returns the plugin whose skills the row id pins, and whether id
// is such a row's (Owner's inverse).
func PluginOf(id string) (string, bool) {
	p, ok := strings.CutPrefix(id, OwnerPrefix)
	if !ok || p == "" {
		return "", false
	}
	return p, true
}

// markerKey is the entry every pinned plugin's baseline holds, even with no
// skills: a plugin whose skills were trusted when it had none still has a
// baseline, so a skill it gains later is new after trust, not first sight.
var markerKey = store.BaselineKey{Kind: store.KindMarker, Name: "skills"}

// listing is one plugin's skills as the catalog has them, made pins.
type listing struct {
	plugin string
	// entries is the listing as a baseline: each pinned skill (its
	// fingerprint, its contract view) and the marker.
	entries store.Baseline
	// unpinnable are the skills that have no pin (a name no store can
	// hold, a contract that cannot be fingerprinted).
	unpinnable []string
	// print is the listing's fingerprint (listingPrint).
	print string
}

// maxViewBody bounds the body a contract view keeps for review (its
// first bytes, cut at a rune); the pin covers all of SKILL.md whatever its
// size.
const maxViewBody = 64 << 10

// contractView is a skill's contract as a pin.Change shows it (Before and
// After) and a baseline entry keeps it: the pinned fields, and the body as a
// model reads it (sanitized), so an operator reviews a change of the text
// line by line. The body is shown, not pinned: the fingerprint covers
// SKILL.md's bytes (BodySHA256).
type contractView struct {
	Fingerprint string `json:"fingerprint"`
	Plugin      string `json:"plugin"`
	Name        string `json:"name"`
	Description string `json:"description"`
	// Body is absent when it could not be read (changed on disk since the
	// catalog was built: the catalog will not serve it either).
	Body          *string             `json:"body,omitempty"`
	BodyTruncated bool                `json:"bodyTruncated,omitempty"`
	BodySHA256    string              `json:"bodySha256"`
	Files         map[string]fileView `json:"files"`
}

// fileView is one file of a skill in its contract view, keyed by its path.
type fileView struct {
	Kind   string `json:"kind,omitempty"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// view is the JSON object a change and a baseline entry keep for c, with
// the body read from cat.
func view(ctx context.Context, cat *skills.Catalog, c skills.Contract, fp string) ([]byte, error) {
	v := contractView{Fingerprint: fp, Plugin: c.Plugin, Name: c.Name, Description: c.Description,
		BodySHA256: c.BodySHA256, Files: make(map[string]fileView, len(c.Files))}
	if body, err := cat.Body(ctx, c.Plugin, c.Name); err == nil {
		if len(body) > maxViewBody {
			cut := maxViewBody
			for cut > 0 && !utf8.RuneStart(body[cut]) {
				cut--
			}
			body, v.BodyTruncated = body[:cut], true
		}
		v.Body = &body
	} else if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	for _, f := range c.Files {
		v.Files[f.Path] = fileView{Kind: f.Kind, Size: f.Size, SHA256: f.SHA256}
	}
	return json.Marshal(v)
}

// listSkills makes the skills of plugin in cat (names, in order) a
// listing.
func listSkills(ctx context.Context, cat *skills.Catalog, plugin string, names []string) (listing, error) {
	l := listing{plugin: plugin, entries: store.Baseline{markerKey: {Value: store.PinnedMarker}}}
	for _, name := range names {
		key := store.BaselineKey{Kind: store.KindSkill, Name: name}
		c, ok := cat.Contract(plugin, name)
		if !ok || key.Validate() != nil {
			l.unpinnable = append(l.unpinnable, name)
			continue
		}
		fp := c.Fingerprint()
		v, err := view(ctx, cat, c, fp)
		if ctx.Err() != nil {
			return listing{}, ctx.Err()
		}
		if fp == "" || err != nil {
			l.unpinnable = append(l.unpinnable, name)
			continue
		}
		l.entries[key] = store.BaselineEntry{Value: fp, Contract: v}
	}
	l.print = listingPrint(l.entries)
	return l, nil
}

// listingPrint names a listing made a baseline: the SHA-256 (hex) of its
// entries' kinds, names and values (the fingerprints, not the contract
// views), sorted and length-prefixed, so no choice of names makes two
// listings hash alike. Its domain is its own: a skills listing never shares
// a fingerprint with a server's.
func listingPrint(b store.Baseline) string {
	keys := make([]store.BaselineKey, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Kind != keys[j].Kind {
			return keys[i].Kind < keys[j].Kind
		}
		return keys[i].Name < keys[j].Name
	})
	h := sha256.New()
	h.Write([]byte("gatehouse/skills-listing/v1\n"))
	for _, k := range keys {
		for _, s := range []string{string(k.Kind), k.Name, b[k].Value} {
			n := len(s)
			h.Write([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
			h.Write([]byte(s))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// skillsOf returns the skill entries of a baseline, by name.
func skillsOf(b store.Baseline) map[string]store.BaselineEntry {
	out := map[string]store.BaselineEntry{}
	for k, e := range b {
		if k.Kind == store.KindSkill {
			out[k.Name] = e
		}
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

// diff lists the changes from the trusted baseline base to the listing
// entries, by name: skills changed, added and removed.
func diff(base, entries store.Baseline) []pin.Change {
	was, now := skillsOf(base), skillsOf(entries)
	names := make([]string, 0, len(was)+len(now))
	for n := range was {
		names = append(names, n)
	}
	for n := range now {
		if _, ok := was[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := []pin.Change{}
	for _, n := range names {
		b, inBase := was[n]
		a, inNow := now[n]
		c := pin.Change{Kind: pin.ChangeSkill, Name: n}
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

// changesOf reads an observation's changes.
func changesOf(o store.Observation) ([]pin.Change, error) {
	var cs []pin.Change
	if err := json.Unmarshal(o.Changes, &cs); err != nil {
		return nil, fmt.Errorf("observation %d of %s: its changes do not parse: %w", o.ID, pin.SanitizeName(o.ServerID), err)
	}
	return cs, nil
}
