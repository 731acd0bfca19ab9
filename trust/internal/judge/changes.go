package judge

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/trust/internal/stored"
)

// Changes lists the reviewable drift of a verdict (see Verdict.Drifted)
// with the contracts before (from base, the stored baseline the verdict
// was judged against) and after (from the listing), by kind then name.
func Changes(fp Prints, base store.Baseline, v Verdict) []pin.Change {
	out := []pin.Change{}
	before := func(k store.BaselineKind, name, print string) json.RawMessage {
		if e, ok := base[store.BaselineKey{Kind: k, Name: name}]; ok && len(e.Contract) > 0 && json.Valid(e.Contract) {
			return e.Contract
		}
		return pin.FingerprintView(print)
	}
	add := func(kind string, d pin.Decision, b func() json.RawMessage, a func() json.RawMessage) {
		c := pin.Change{Kind: kind, Name: d.Tool}
		switch d.Action {
		case pin.Quarantined:
			c.Change, c.Before, c.After = pin.ChangeChanged, b(), a()
		case pin.Withheld:
			c.Change, c.Before, c.After = pin.ChangeAdded, json.RawMessage("null"), a()
		case pin.Removed:
			c.Change, c.Before, c.After = pin.ChangeRemoved, b(), json.RawMessage("null")
		}
		out = append(out, c)
	}
	for _, d := range sortedDecisions(v.Decisions) {
		if !reviewable(d) {
			continue
		}
		add(pin.ChangeTool, d,
			func() json.RawMessage { return before(store.KindTool, d.Tool, d.BaselineFingerprint) },
			func() json.RawMessage { return fp.toolView(d.Tool, d.Fingerprint) })
	}
	for k := stored.Kind(0); k < stored.NumKinds; k++ {
		for _, d := range sortedDecisions(v.Items[k].Decisions) {
			if !reviewable(d) {
				continue
			}
			add(k.Change(), d,
				func() json.RawMessage { return before(k.Store(), d.Tool, d.BaselineFingerprint) },
				func() json.RawMessage { return fp.itemView(k, d.Tool, d.Fingerprint) })
		}
	}
	for _, ev := range v.Events {
		if ev.Kind == pin.ChangeInstructions {
			out = append(out, pin.Change{Kind: pin.ChangeInstructions, Change: pin.ChangeChanged,
				Before: pin.FingerprintView(ev.Decision.BaselineFingerprint), After: pin.FingerprintView(ev.Decision.Fingerprint)})
		}
	}
	return out
}

func sortedDecisions(m map[string]pin.Decision) []pin.Decision {
	out := make([]pin.Decision, 0, len(m))
	for _, d := range m {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tool < out[j].Tool })
	return out
}

// Enforce applies the drift other instances recorded (the open
// observations of the server, see store.DriftStore) to a verdict of this
// instance's own listing: a tool, prompt or template one of them saw
// changed is quarantined here too, even where this listing still matches
// its pin, until an operator trusts the server. Added items are withheld
// here anyway (they are not in the baseline) and removals need nothing.
// Observations by self (this instance's earlier ones, which its new
// listing supersedes) and those that did not drift are skipped. It returns
// the events of what it quarantined, and an error naming an observation
// whose changes do not parse (the others still apply).
func Enforce(server, self string, v *Verdict, obs []store.Observation) ([]Event, error) {
	var evs []Event
	var bad error
	sname := pin.SanitizeName(server)
	for _, o := range obs {
		if !o.Drifted || o.SeenBy == self || o.ServerID == "" {
			continue
		}
		var changes []pin.Change
		if err := json.Unmarshal(o.Changes, &changes); err != nil {
			bad = fmt.Errorf("observation %d of server %s: its changes do not parse: %w", o.ID, sname, err)
			continue
		}
		for _, c := range changes {
			if c.Change != pin.ChangeChanged {
				continue
			}
			var decisions map[string]pin.Decision
			var enforced map[string]bool
			noun := "tool"
			switch c.Kind {
			case pin.ChangeTool:
				decisions = v.Decisions
			case pin.ChangePrompt, pin.ChangeTemplate:
				k := stored.Prompt
				if c.Kind == pin.ChangeTemplate {
					k = stored.Template
				}
				if v.Items[k].Decisions == nil {
					v.Items[k].Decisions = map[string]pin.Decision{}
				}
				if v.Items[k].Enforced == nil {
					v.Items[k].Enforced = map[string]bool{}
				}
				decisions, enforced, noun = v.Items[k].Decisions, v.Items[k].Enforced, k.Noun()
			default:
				continue
			}
			d, ok := decisions[c.Name]
			if ok && d.Action != pin.Trusted {
				continue // already not served as published
			}
			if !ok {
				// Not in this listing (a kind not listed here): remember
				// the quarantine for when it is.
				d = pin.Decision{Tool: c.Name}
			}
			d.Action = pin.Quarantined
			decisions[c.Name] = d
			if enforced != nil {
				enforced[c.Name] = true
			}
			ev := Event{Kind: c.Kind, Decision: d, Message: fmt.Sprintf(
				"the contract of %s %s on server %s changed after it was trusted, as instance %s observed at %s; it is quarantined on every instance until %s",
				noun, pin.SanitizeName(c.Name), sname, pin.SanitizeName(o.SeenBy), o.SeenAt.UTC().Format(time.RFC3339), pin.TrustRemedy(sname, ""))}
			evs = append(evs, ev)
			v.Events = append(v.Events, ev)
		}
	}
	return evs, bad
}

// Record is what a re-trust of server (row ID id) recorded: the listing fp
// (with its instructions' fingerprint) as the new baseline, cleared entries
// of the old one removed, and the changes it accepted. Tools, prompts and
// templates are sorted by name.
func Record(id, server string, cleared int64, instructions string, fp Prints, changes []pin.Change) stored.TrustRecord {
	return stored.TrustRecord{ServerID: id, Server: server, Cleared: cleared, Instructions: instructions,
		Tools: pinList(fp.Tools), Prompts: pinList(fp.Items[stored.Prompt].Prints),
		ResourceTemplates: pinList(fp.Items[stored.Template].Prints),
		Listing:           ListingFingerprint(fp), Changes: changes}
}

// pinList lists pins for a TrustRecord, sorted by name.
func pinList(prints []pin.ToolPrint) []stored.TrustedTool {
	out := []stored.TrustedTool{}
	for name, p := range pin.BaselineOf(prints) {
		out = append(out, stored.TrustedTool{Name: name, Fingerprint: p.Fingerprint})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
