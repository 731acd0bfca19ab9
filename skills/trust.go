package skills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/trust"
)

// A plugin's skills are pinned the way a toolset pins the tools of MCP
// servers, through package trust: a skill is text a model will follow, like
// a tool description, so a skill that changes on disk after it was trusted
// is drift, withheld until an operator trusts it again. Each skill's
// contract (contract) is a pin (contract.fingerprint) with a contract view
// for review, and a plugin's skills are one trust.Pinned listing under the
// row Owner(plugin); trust judges, records, enforces and trusts it like a
// server's listing (see doc.go).

// ownerPrefix starts the store row ID (and name) under which a plugin's
// skills are pinned: Owner(plugin).
const ownerPrefix = "skills:"

// ownerType is the transport type kept in the row of a plugin's skills: it
// is no server, and nothing connects to it.
const ownerType = "skills"

// Owner returns the store row ID, and name, of the baseline that pins the
// skills of plugin: "skills:" followed by the plugin's name.
func Owner(plugin string) string { return ownerPrefix + plugin }

// PluginOf returns the plugin whose skills the row id pins, and whether id
// is such a row's (Owner's inverse).
func PluginOf(id string) (string, bool) {
	p, ok := strings.CutPrefix(id, ownerPrefix)
	if !ok || p == "" {
		return "", false
	}
	return p, true
}

// pinMarker names the marker entry every pinned plugin's baseline holds,
// even with no skills, and the domain of its listing's fingerprint
// ("gatehouse/skills-listing/v1").
const pinMarker = "skills"

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
func view(ctx context.Context, cat *Catalog, c contract, fp string) ([]byte, error) {
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

// pinned makes the skills of plugin in cat (names, in order) a trust.Pinned
// listing, and lists the skills that have no pin (a name no store can
// hold, a contract that cannot be fingerprinted).
func pinned(ctx context.Context, cat *Catalog, plugin string, names []string) (trust.Pinned, []string, error) {
	p := trust.Pinned{Row: store.Server{ID: Owner(plugin), Name: Owner(plugin), Type: ownerType},
		Kind: store.KindSkill, Change: pin.ChangeSkill, Marker: pinMarker, Entries: map[string]store.BaselineEntry{}}
	var unpinnable []string
	for _, name := range names {
		key := store.BaselineKey{Kind: store.KindSkill, Name: name}
		c, ok := cat.contract(plugin, name)
		if !ok || key.Validate() != nil {
			unpinnable = append(unpinnable, name)
			continue
		}
		fp := c.fingerprint()
		v, err := view(ctx, cat, c, fp)
		if ctx.Err() != nil {
			return trust.Pinned{}, nil, ctx.Err()
		}
		if fp == "" || err != nil {
			unpinnable = append(unpinnable, name)
			continue
		}
		p.Entries[name] = store.BaselineEntry{Value: fp, Contract: v}
	}
	return p, unpinnable, nil
}

// errNoInstance is Apply's error when it is given no instance name: drift
// is recorded under the name of the instance that saw it.
var errNoInstance = errors.New("skills: no instance name to record drift under")

// DriftEvent is one skill that is not served as the catalog has it, worded for
// a person (names through pin.SanitizeName; never a description or a
// body). Apply returns the events of the drift as it stands, every time.
type DriftEvent struct {
	// Plugin and Skill name the skill.
	Plugin, Skill string
	// Change is pin.ChangeChanged, pin.ChangeAdded or pin.ChangeRemoved
	// against the trusted baseline; "" for a skill that could not be
	// judged (one that cannot be pinned, or a plugin whose baseline could
	// not be read).
	Change string
	// Withheld says the skill is left out of the catalog Apply returns
	// (every event but a removal).
	Withheld bool
	// SeenBy names the other instance whose recorded drift withholds the
	// skill here; "" when this instance's own catalog drifted.
	SeenBy string
	// Message says what happened and what an operator can do.
	Message string
}

// Apply judges the skills of cat against their trusted baselines in st and
// returns the catalog without the skills that drifted (cat.Without), and
// the events of the drift. instance names this process in the fleet's
// record (as toolset.Options.Instance does).
//
// Per plugin of cat (cat.Plugins: skills or not): the first time its
// skills are seen they are recorded as its baseline (trusted on first use,
// even none). Afterwards a skill whose contract differs from its pin, and a
// skill the baseline lacks, are withheld; a pinned skill the plugin no
// longer has is reported. Drift is recorded as an observation of the
// plugin's row (Owner), with the contracts before and after, once per
// instance and listing; a return to the baseline is recorded too, so the
// record stays current. A skill another instance recorded as changed is
// withheld here as well, even where this catalog still matches its pin,
// until the operator trusts a listing.
//
// Apply fails closed: a plugin whose baseline cannot be read or written
// has all its skills withheld (with an event), and the error, naming the
// plugin, is returned beside the catalog; the other plugins are judged. A
// nil cat is returned as it is.
func Apply(ctx context.Context, st trust.Store, cat *Catalog, instance string) (*Catalog, []DriftEvent, error) {
	if cat == nil {
		return nil, nil, nil
	}
	byPlugin, order := group(cat)
	withheld := map[string]map[string]bool{}
	var events []DriftEvent
	var errs []error
	for _, p := range order {
		names := byPlugin[p]
		var w map[string]bool
		var evs []DriftEvent
		err := errNoInstance
		if instance != "" {
			var l trust.Pinned
			var unpinnable []string
			if l, unpinnable, err = pinned(ctx, cat, p, names); err == nil {
				w, evs, err = applyPlugin(ctx, trust.NewLedger(st, instance, nil), p, l, unpinnable)
			}
		}
		if err != nil {
			w = map[string]bool{}
			evs = nil
			for _, n := range names {
				w[n] = true
				evs = append(evs, DriftEvent{Plugin: p, Skill: n, Withheld: true, Message: fmt.Sprintf(
					"the skills of plugin %s could not be checked against their trusted baseline; skill %s is withheld (%v)",
					pin.SanitizeName(p), pin.SanitizeName(n), err)})
			}
			errs = append(errs, fmt.Errorf("skills: plugin %s: %w", pin.SanitizeName(p), err))
		}
		withheld[p] = w
		events = append(events, evs...)
	}
	out := cat.Without(func(plugin, name string) bool { return withheld[plugin][name] })
	return out, events, errors.Join(errs...)
}

// group lists the skills of cat by plugin, and the plugins in order:
// every plugin the catalog was built from, with skills or not (a plugin
// pinned with none still has a baseline, so a skill it gains later is new
// after trust; one whose skills all went reports them removed).
func group(cat *Catalog) (map[string][]string, []string) {
	by := map[string][]string{}
	for _, s := range cat.Skills() {
		by[s.Plugin] = append(by[s.Plugin], s.Name)
	}
	return by, cat.Plugins()
}

// shownOwner is Owner(plugin) as a message shows it: the plugin's name
// through pin.SanitizeName.
func shownOwner(plugin string) string { return ownerPrefix + pin.SanitizeName(plugin) }

// applyPlugin judges one plugin's listing (trust.Ledger.JudgePinned) and
// words what it found. It returns the skills to withhold and the events.
func applyPlugin(ctx context.Context, led *trust.Ledger, plugin string, l trust.Pinned, unpinnable []string) (map[string]bool, []DriftEvent, error) {
	v, err := led.JudgePinned(ctx, l)
	if err != nil && v.Changes == nil {
		return nil, nil, err
	}
	withheld := map[string]bool{}
	var events []DriftEvent
	sp := pin.SanitizeName(plugin)
	for _, n := range unpinnable {
		withheld[n] = true
		events = append(events, DriftEvent{Plugin: plugin, Skill: n, Withheld: true, Message: fmt.Sprintf(
			"skill %s of plugin %s cannot be pinned, so it cannot be trusted; it is withheld", pin.SanitizeName(n), sp)})
	}
	for _, c := range v.Changes {
		ev := DriftEvent{Plugin: plugin, Skill: c.Name, Change: c.Change, Withheld: c.Change != pin.ChangeRemoved}
		sn := pin.SanitizeName(c.Name)
		switch c.Change {
		case pin.ChangeChanged:
			ev.Message = fmt.Sprintf("skill %s of plugin %s changed after it was trusted; it is withheld until an operator re-trusts it: gatehouse drift show %s", sn, sp, shownOwner(plugin))
		case pin.ChangeAdded:
			ev.Message = fmt.Sprintf("plugin %s has a new skill %s since its skills were trusted; it is withheld until an operator re-trusts it: gatehouse drift show %s", sp, sn, shownOwner(plugin))
		default:
			ev.Message = fmt.Sprintf("plugin %s no longer has its trusted skill %s", sp, sn)
		}
		withheld[c.Name] = ev.Withheld
		events = append(events, ev)
	}
	names := make([]string, 0, len(v.Elsewhere))
	for n := range v.Elsewhere {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if withheld[n] {
			continue
		}
		o := v.Elsewhere[n]
		withheld[n] = true
		events = append(events, DriftEvent{Plugin: plugin, Skill: n, Change: pin.ChangeChanged, Withheld: true, SeenBy: o.SeenBy,
			Message: fmt.Sprintf("skill %s of plugin %s changed after it was trusted, as instance %s observed at %s; it is withheld on every instance until an operator re-trusts it: gatehouse drift show %s",
				pin.SanitizeName(n), sp, pin.SanitizeName(o.SeenBy), o.SeenAt.UTC().Format(time.RFC3339), shownOwner(plugin))})
	}
	return withheld, events, err
}

// heads returns a digest of the trust state of every plugin's skills in st
// (the baseline version and the latest observation of each row Owner
// names), in one store query: a Watcher compares it with the digest it read
// before its last judgement, so a trust made by another process (`gatehouse
// trust skills:PLUGIN`) or drift another instance recorded takes effect
// without waiting for the next re-check.
func heads(ctx context.Context, st trust.Store) (string, error) {
	hs, err := st.DriftHeads(ctx)
	if err != nil {
		return "", fmt.Errorf("skills: reading the trust state: %w", err)
	}
	byID := make(map[string]store.DriftHead, len(hs))
	for _, h := range hs {
		byID[h.ServerID] = h
	}
	return digest(byID), nil
}

// digest is the part of heads (by row ID) that concerns skills, as one
// string: the rows Owner names, sorted, each with its baseline version and
// latest observation.
func digest(heads map[string]store.DriftHead) string {
	ids := make([]string, 0, len(heads))
	for id := range heads {
		if _, ok := PluginOf(id); ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	var b []byte
	for _, id := range ids {
		b = fmt.Appendf(b, "%q %d %d\n", id, heads[id].BaselineVersion, heads[id].LastObservation)
	}
	return string(b)
}

// ErrUnknownPlugin is Retrust's error when the catalog was not built from
// the plugin.
var ErrUnknownPlugin = errors.New("skills: no such plugin")

// TrustRecord is what Retrust recorded for one plugin.
type TrustRecord struct {
	// ID is the row of the plugin's skills (Owner).
	ID string `json:"id"`
	// Plugin is the plugin's name.
	Plugin string `json:"plugin"`
	// Cleared is how many baseline entries the re-trust replaced.
	Cleared int64 `json:"cleared"`
	// Skills are the trusted skills, sorted by name.
	Skills []TrustedSkill `json:"skills"`
	// Unpinnable are the skills that could not be pinned (left out of the
	// baseline, so still withheld), sorted.
	Unpinnable []string `json:"unpinnable"`
	// Listing is the fingerprint of the trusted listing.
	Listing string `json:"listing"`
	// Changes are what the re-trust accepted: the differences between the
	// baseline it replaced and the one it recorded (empty when they were
	// the same).
	Changes []pin.Change `json:"changes"`
}

// TrustedSkill is one recorded skill: its name in its plugin and its pin
// fingerprint (its contract's fingerprint).
type TrustedSkill struct {
	Name        string `json:"name"`
	Fingerprint string `json:"fingerprint"`
}

// Retrust makes the skills cat holds now of plugin its trusted baseline,
// in one store transaction (store.ServerStore.ReplaceBaseline), whatever
// was trusted before and whatever drift was recorded: the operator's
// `gatehouse trust skills:PLUGIN` without --listing (which trusts exactly
// a reviewed observation instead). The baseline version moves, so every
// instance re-judges the plugin on its next Apply. A plugin the catalog
// was built from with no skills is recorded as having none; one it was not
// built from is ErrUnknownPlugin.
func Retrust(ctx context.Context, st trust.Store, cat *Catalog, plugin string) (TrustRecord, error) {
	if !slices.Contains(cat.Plugins(), plugin) {
		return TrustRecord{}, fmt.Errorf("%w: plugin %s is not among the loaded plugins (its skills' row is %s)",
			ErrUnknownPlugin, pin.SanitizeName(plugin), shownOwner(plugin))
	}
	var names []string
	for _, s := range cat.Skills() {
		if s.Plugin == plugin {
			names = append(names, s.Name)
		}
	}
	l, unpinnable, err := pinned(ctx, cat, plugin, names)
	if err != nil {
		return TrustRecord{}, fmt.Errorf("skills: plugin %s: %w", pin.SanitizeName(plugin), err)
	}
	changes, cleared, err := trust.NewLedger(st, "", nil).TrustPinned(ctx, l)
	if err != nil {
		return TrustRecord{}, fmt.Errorf("skills: plugin %s: %w", pin.SanitizeName(plugin), err)
	}
	rec := TrustRecord{ID: l.Row.ID, Plugin: plugin, Cleared: cleared, Skills: []TrustedSkill{}, Unpinnable: unpinnable,
		Listing: l.Print(), Changes: changes}
	if rec.Unpinnable == nil {
		rec.Unpinnable = []string{}
	}
	for name, e := range l.Entries {
		rec.Skills = append(rec.Skills, TrustedSkill{Name: name, Fingerprint: e.Value})
	}
	sort.Slice(rec.Skills, func(i, j int) bool { return rec.Skills[i].Name < rec.Skills[j].Name })
	sort.Strings(rec.Unpinnable)
	return rec, nil
}
