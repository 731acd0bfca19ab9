package judge

import (
	"fmt"
	"maps"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/trust/internal/stored"
)

// Event is one drift decision, worded for a person (names through
// pin.SanitizeName; never a description or a schema).
type Event struct {
	// Kind is pin.ChangeTool, ChangePrompt, ChangeTemplate or
	// ChangeInstructions.
	Kind string
	// Decision is the pin decision; Decision.Tool names the item.
	Decision pin.Decision
	// Message says what happened and what an operator can do.
	Message string
}

// ItemVerdict is a listing's view of one kind of forwarded item: its pins
// and the decisions of the listing (nil when the kind was not listed or
// not pinned).
type ItemVerdict struct {
	stored.Items
	Decisions map[string]pin.Decision
	// Enforced are the items quarantined by the fleet's record (Enforce)
	// rather than by this listing.
	Enforced map[string]bool
}

// Verdict is a listing judged against a baseline.
type Verdict struct {
	// Decisions are the tools' decisions, by name on the server.
	Decisions map[string]pin.Decision
	// Removed are the trusted tools the listing no longer has.
	Removed []string
	// Events are every drift, in order: tools that could not be
	// fingerprinted, tool decisions, prompts and templates, instructions.
	Events []Event
	// Base is the trusted tool pins the listing was judged against.
	Base pin.Baseline
	// Items are the prompts' and templates' pins and decisions.
	Items [stored.NumKinds]ItemVerdict
	// Instructions is the trusted instructions fingerprint.
	Instructions string
}

// rejected words the items of a listing that have no print: they cannot be
// trusted, so they are withheld. noun names their kind.
func rejected(server, kind, noun string, rs []stored.Rejected) []Event {
	var evs []Event
	for _, r := range rs {
		evs = append(evs, Event{Kind: kind, Decision: pin.Decision{Tool: r.Name, Action: pin.Withheld},
			Message: fmt.Sprintf("%s %s of server %s cannot be fingerprinted, so it cannot be trusted; it is withheld", noun, pin.SanitizeName(r.Name), pin.SanitizeName(server))})
	}
	return evs
}

// Judge compares a listing with a baseline. exists says whether a
// baseline was recorded at all (even one with no tools: then every tool is
// new to it, and withheld).
func Judge(server string, fp Prints, tb stored.Baseline, exists bool) Verdict {
	v := Verdict{Decisions: map[string]pin.Decision{}, Base: tb.Tools, Instructions: tb.Instructions}
	v.Events = append(v.Events, fp.Rejected...)
	sname := pin.SanitizeName(server)
	for _, d := range pin.Compare(tb.Tools, fp.Tools) {
		if d.Action == pin.New && exists {
			d.Action = pin.Withheld
		}
		v.Decisions[d.Tool] = d
		tname := pin.SanitizeName(d.Tool)
		var msg string
		switch d.Action {
		case pin.Quarantined:
			if d.Conflict {
				msg = fmt.Sprintf("server %s publishes tool %s more than once with different contracts; it is quarantined until %s", sname, tname, pin.TrustRemedy(sname, ""))
			} else {
				msg = fmt.Sprintf("the contract of tool %s on server %s changed after it was trusted; it is quarantined (our description, an empty schema, calls refused) until %s", tname, sname, pin.TrustRemedy(sname, ""))
			}
		case pin.Withheld:
			switch {
			case d.RenamedFrom != "":
				msg = fmt.Sprintf("tool %s of server %s was renamed to %s (same contract); the new name is withheld until %s", pin.SanitizeName(d.RenamedFrom), sname, tname, pin.TrustRemedy(sname, ""))
			case d.Conflict:
				msg = fmt.Sprintf("server %s publishes tool %s more than once with different contracts; it is withheld", sname, tname)
			default:
				msg = fmt.Sprintf("server %s published a new tool %s after it was trusted; it is withheld until %s", sname, tname, pin.TrustRemedy(sname, ""))
			}
		case pin.Removed:
			v.Removed = append(v.Removed, d.Tool)
			if d.RenamedTo != "" {
				continue // reported with the new name
			}
			msg = fmt.Sprintf("server %s no longer publishes its trusted tool %s; it is dropped", sname, tname)
		default:
			continue
		}
		v.Events = append(v.Events, Event{Kind: pin.ChangeTool, Decision: d, Message: msg})
	}
	for k := stored.Kind(0); k < stored.NumKinds; k++ {
		v.Items[k] = ItemVerdict{Items: tb.Items[k]}
		judgeItems(server, &v, k, fp.Items[k])
	}
	if tb.Instructions != "" && fp.Instructions != "" && tb.Instructions != fp.Instructions {
		v.Events = append(v.Events, Event{Kind: pin.ChangeInstructions,
			Decision: pin.Decision{Action: pin.Quarantined, Fingerprint: fp.Instructions, BaselineFingerprint: tb.Instructions},
			Message:  fmt.Sprintf("the instructions of server %s changed after they were trusted (instructions never reach the model); they are recorded when %s", sname, pin.TrustRemedy(sname, ""))})
	}
	return v
}

// judgeItems compares a listing of one kind with its pins.
func judgeItems(server string, v *Verdict, k stored.Kind, it Items) {
	st := &v.Items[k]
	v.Events = append(v.Events, it.Rejected...)
	if !it.Listed || !st.Pinned {
		return
	}
	st.Decisions = map[string]pin.Decision{}
	sname, noun := pin.SanitizeName(server), k.Noun()
	for _, d := range pin.Compare(st.Base, it.Prints) {
		if d.Action == pin.New {
			d.Action = pin.Withheld // the kind is pinned: new is new after trust
		}
		st.Decisions[d.Tool] = d
		iname := pin.SanitizeName(d.Tool)
		var msg string
		switch d.Action {
		case pin.Quarantined:
			if d.Conflict {
				msg = fmt.Sprintf("server %s publishes %s %s more than once with different contents; it is quarantined until %s", sname, noun, iname, pin.TrustRemedy(sname, ""))
			} else {
				msg = fmt.Sprintf("the %s %s on server %s changed after it was trusted; it is quarantined (not listed, its requests refused) until %s", noun, iname, sname, pin.TrustRemedy(sname, ""))
			}
		case pin.Withheld:
			if d.Conflict {
				msg = fmt.Sprintf("server %s publishes %s %s more than once with different contents; it is withheld", sname, noun, iname)
			} else {
				msg = fmt.Sprintf("server %s published a new %s %s after it was trusted; it is withheld until %s", sname, noun, iname, pin.TrustRemedy(sname, ""))
			}
		case pin.Removed:
			msg = fmt.Sprintf("server %s no longer publishes its trusted %s %s; it is dropped", sname, noun, iname)
		default:
			continue
		}
		v.Events = append(v.Events, Event{Kind: k.Change(), Decision: d, Message: msg})
	}
}

// reviewable reports whether a decision is drift an operator can review
// and trust away (a conflicting name, listed twice with different
// contracts, can never be trusted, and New is first sight).
func reviewable(d pin.Decision) bool {
	switch d.Action {
	case pin.Quarantined, pin.Withheld:
		return !d.Conflict
	case pin.Removed:
		return true
	}
	return false
}

// Drifted reports whether the verdict holds drift an operator can review:
// what Changes lists.
func (v *Verdict) Drifted() bool {
	for _, d := range v.Decisions {
		if reviewable(d) {
			return true
		}
	}
	for _, it := range v.Items {
		for _, d := range it.Decisions {
			if reviewable(d) {
				return true
			}
		}
	}
	for _, ev := range v.Events {
		if ev.Kind == pin.ChangeInstructions {
			return true
		}
	}
	return false
}

// Quarantines reports whether the verdict quarantines a tool, prompt or
// resource template: a trusted name published with another contract (or
// twice, with different ones). Items added or removed, or that cannot be
// fingerprinted, are withheld or dropped rather than served otherwise;
// changed instructions are reported, never served to a model.
func (v *Verdict) Quarantines() bool {
	quarantines := func(m map[string]pin.Decision) bool {
		for _, d := range m {
			if d.Action == pin.Quarantined {
				return true
			}
		}
		return false
	}
	if quarantines(v.Decisions) {
		return true
	}
	for _, it := range v.Items {
		if quarantines(it.Decisions) {
			return true
		}
	}
	return false
}

// Same reports whether two verdicts decide alike: the same decisions for
// every tool, prompt and template, the same items enforced from the
// fleet's record, and the same events. Re-applying a record that changes
// nothing is then no change at all.
func (v *Verdict) Same(o *Verdict) bool {
	if !maps.Equal(v.Decisions, o.Decisions) || len(v.Events) != len(o.Events) {
		return false
	}
	for k := range v.Items {
		if !maps.Equal(v.Items[k].Decisions, o.Items[k].Decisions) || !maps.Equal(v.Items[k].Enforced, o.Items[k].Enforced) {
			return false
		}
	}
	for i := range v.Events {
		if v.Events[i] != o.Events[i] {
			return false
		}
	}
	return true
}

// Admission is how a live listing of one kind is served: the items whose
// fingerprint is pinned (by identity), and the ones whose pin they no
// longer match. Everything else is absent. Unjudged says the listing
// differs from the last judged one (re-list it, so its drift is reported).
type Admission struct {
	Trusted, Quarantined map[string]bool
	Unjudged             bool
}

// Admit judges a live listing against a verdict's pins of its kind.
func Admit(st ItemVerdict, it Items) Admission {
	a := Admission{Trusted: map[string]bool{}, Quarantined: map[string]bool{}}
	if !st.Pinned {
		// Not pinned yet (a baseline from before they were pinned, or a
		// listing that failed): nothing is served until a listing pins
		// them, so ask for one.
		a.Unjudged = len(it.Prints) > 0
		return a
	}
	for _, d := range pin.Compare(st.Base, it.Prints) {
		switch d.Action {
		case pin.Trusted:
			if st.Enforced[d.Tool] {
				// Quarantined by the fleet's record (Enforce) although it
				// matches its pin here: the stricter decision holds.
				a.Quarantined[d.Tool] = true
				continue
			}
			a.Trusted[d.Tool] = true
			continue
		case pin.Removed:
			continue
		case pin.Quarantined:
			a.Quarantined[d.Tool] = true
		case pin.New:
			d.Action = pin.Withheld // as judgeItems: the kind is pinned
		}
		if last, ok := st.Decisions[d.Tool]; !ok || last.Action != d.Action || last.Fingerprint != d.Fingerprint {
			a.Unjudged = true
		}
	}
	return a
}

// Admit is Admit of the verdict's items of kind k.
func (v *Verdict) Admit(k stored.Kind, it Items) Admission { return Admit(v.Items[k], it) }
