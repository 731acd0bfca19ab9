package skilltrust

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/pin"
	"github.com/gatehouse-dev/gatehouse/skills"
	"github.com/gatehouse-dev/gatehouse/store"
)

// Store is what Apply and Retrust use of a store: the rows and baselines
// of the plugins' skills and the fleet's drift record. store.Store, and so
// every store implementation, satisfies it.
type Store interface {
	PutServer(ctx context.Context, s store.Server) error
	GetServer(ctx context.Context, id string) (store.Server, error)
	SaveBaseline(ctx context.Context, serverID string, entries store.Baseline) (added int, err error)
	GetBaseline(ctx context.Context, serverID string) (store.Baseline, error)
	ReplaceBaseline(ctx context.Context, serverID string, entries store.Baseline) (cleared int64, err error)
	BaselineVersion(ctx context.Context, serverID string) (int64, error)
	ObserveListing(ctx context.Context, o store.Observation) (store.Observation, bool, error)
	OpenObservations(ctx context.Context, serverID string, entries bool) ([]store.Observation, error)
}

var _ Store = store.Store(nil)

// ErrNoInstance is Apply's error when it is given no instance name: drift
// is recorded under the name of the instance that saw it.
var ErrNoInstance = errors.New("skilltrust: no instance name to record drift under")

// Event is one skill that is not served as the catalog has it, worded for
// a person (names through pin.SanitizeName; never a description or a
// body). Apply returns the events of the drift as it stands, every time.
type Event struct {
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
func Apply(ctx context.Context, st Store, cat *skills.Catalog, instance string) (*skills.Catalog, []Event, error) {
	if cat == nil {
		return nil, nil, nil
	}
	byPlugin, order := group(cat)
	withheld := map[string]map[string]bool{}
	var events []Event
	var errs []error
	for _, p := range order {
		names := byPlugin[p]
		var w map[string]bool
		var evs []Event
		err := ErrNoInstance
		if instance != "" {
			var l listing
			if l, err = listSkills(ctx, cat, p, names); err == nil {
				w, evs, err = applyPlugin(ctx, st, l, instance)
			}
		}
		if err != nil {
			w = map[string]bool{}
			evs = nil
			for _, n := range names {
				w[n] = true
				evs = append(evs, Event{Plugin: p, Skill: n, Withheld: true, Message: fmt.Sprintf(
					"the skills of plugin %s could not be checked against their trusted baseline; skill %s is withheld (%v)",
					pin.SanitizeName(p), pin.SanitizeName(n), err)})
			}
			errs = append(errs, fmt.Errorf("skilltrust: plugin %s: %w", pin.SanitizeName(p), err))
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
func group(cat *skills.Catalog) (map[string][]string, []string) {
	by := map[string][]string{}
	for _, s := range cat.Skills() {
		by[s.Plugin] = append(by[s.Plugin], s.Name)
	}
	return by, cat.Plugins()
}

// ensureRow creates the row of l's plugin when it does not exist.
func ensureRow(ctx context.Context, st Store, id string) error {
	_, err := st.GetServer(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return st.PutServer(ctx, store.Server{ID: id, Name: id, Type: OwnerType})
	}
	return err
}

// shownOwner is Owner(plugin) as a message shows it: the plugin's name
// through pin.SanitizeName.
func shownOwner(plugin string) string { return OwnerPrefix + pin.SanitizeName(plugin) }

// readBaseline reads the baseline version, then the baseline: a trust made
// between the two reads shows as a newer version on the next Apply.
func readBaseline(ctx context.Context, st Store, id string) (int64, store.Baseline, error) {
	v, err := st.BaselineVersion(ctx, id)
	if err != nil {
		return 0, nil, err
	}
	b, err := st.GetBaseline(ctx, id)
	return v, b, err
}

// applyPlugin judges one plugin's listing and records what it saw. It
// returns the skills to withhold and the events.
func applyPlugin(ctx context.Context, st Store, l listing, instance string) (map[string]bool, []Event, error) {
	id := Owner(l.plugin)
	if err := ensureRow(ctx, st, id); err != nil {
		return nil, nil, fmt.Errorf("its store row %s: %w", shownOwner(l.plugin), err)
	}
	version, base, err := readBaseline(ctx, st, id)
	if err != nil {
		return nil, nil, fmt.Errorf("reading its baseline: %w", err)
	}
	if _, pinned := base[markerKey]; !pinned {
		// First sight: trusted on first use. Saving is insert-only, so
		// when another process recorded first, what it recorded counts:
		// read it back.
		if _, err := st.SaveBaseline(ctx, id, l.entries); err != nil {
			return nil, nil, fmt.Errorf("recording its baseline: %w", err)
		}
		if version, base, err = readBaseline(ctx, st, id); err != nil {
			return nil, nil, fmt.Errorf("reading its baseline: %w", err)
		}
	}
	changes := diff(base, l.entries)
	obs, err := observe(ctx, st, l, id, version, instance, changes)
	if err != nil {
		return nil, nil, err
	}
	withheld := map[string]bool{}
	var events []Event
	sp := pin.SanitizeName(l.plugin)
	for _, n := range l.unpinnable {
		withheld[n] = true
		events = append(events, Event{Plugin: l.plugin, Skill: n, Withheld: true, Message: fmt.Sprintf(
			"skill %s of plugin %s cannot be pinned, so it cannot be trusted; it is withheld", pin.SanitizeName(n), sp)})
	}
	for _, c := range changes {
		ev := Event{Plugin: l.plugin, Skill: c.Name, Change: c.Change, Withheld: c.Change != pin.ChangeRemoved}
		sn := pin.SanitizeName(c.Name)
		switch c.Change {
		case pin.ChangeChanged:
			ev.Message = fmt.Sprintf("skill %s of plugin %s changed after it was trusted; it is withheld until an operator re-trusts it: gatehouse drift show %s", sn, sp, shownOwner(l.plugin))
		case pin.ChangeAdded:
			ev.Message = fmt.Sprintf("plugin %s has a new skill %s since its skills were trusted; it is withheld until an operator re-trusts it: gatehouse drift show %s", sp, sn, shownOwner(l.plugin))
		default:
			ev.Message = fmt.Sprintf("plugin %s no longer has its trusted skill %s", sp, sn)
		}
		withheld[c.Name] = ev.Withheld
		events = append(events, ev)
	}
	evs, err := enforce(l, id, instance, obs, withheld)
	return withheld, append(events, evs...), err
}

// observe records the listing as this instance's observation of the row
// when it drifted, or when it returns to the baseline after this instance
// recorded drift (as the toolset records a server's listings). It returns
// the row's open observations as they were before.
func observe(ctx context.Context, st Store, l listing, id string, version int64, instance string, changes []pin.Change) ([]store.Observation, error) {
	obs, err := st.OpenObservations(ctx, id, false)
	if err != nil {
		return nil, fmt.Errorf("reading the recorded drift: %w", err)
	}
	var mine *store.Observation
	for i := range obs {
		if obs[i].SeenBy == instance && obs[i].BaselineVersion == version {
			mine = &obs[i]
		}
	}
	drifted := len(changes) > 0
	if !(drifted || mine != nil && mine.Drifted) || mine != nil && mine.Listing == l.print {
		return obs, nil
	}
	raw, err := json.Marshal(changes)
	if err != nil {
		return nil, fmt.Errorf("encoding the drift: %w", err)
	}
	if _, _, err := st.ObserveListing(ctx, store.Observation{ServerID: id, Listing: l.print, BaselineVersion: version,
		SeenBy: instance, Entries: l.entries, Changes: raw, Drifted: drifted}); err != nil {
		return nil, fmt.Errorf("recording the drift: %w", err)
	}
	return obs, nil
}

// enforce withholds the skills other instances recorded as changed (in
// the row's open observations obs), where this listing still has them as
// trusted. withheld is updated; the events are returned. A record whose
// changes do not parse is reported in the error (and Apply then withholds
// the plugin's skills: what it recorded is unknown).
func enforce(l listing, id, instance string, obs []store.Observation, withheld map[string]bool) ([]Event, error) {
	var events []Event
	var bad []error
	for _, o := range obs {
		if !o.Drifted || o.SeenBy == instance {
			continue
		}
		cs, err := changesOf(o)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		for _, c := range cs {
			if c.Kind != pin.ChangeSkill || c.Change != pin.ChangeChanged || withheld[c.Name] {
				continue
			}
			if _, listed := l.entries[store.BaselineKey{Kind: store.KindSkill, Name: c.Name}]; !listed {
				continue
			}
			withheld[c.Name] = true
			events = append(events, Event{Plugin: l.plugin, Skill: c.Name, Change: pin.ChangeChanged, Withheld: true, SeenBy: o.SeenBy,
				Message: fmt.Sprintf("skill %s of plugin %s changed after it was trusted, as instance %s observed at %s; it is withheld on every instance until an operator re-trusts it: gatehouse drift show %s",
					pin.SanitizeName(c.Name), pin.SanitizeName(l.plugin), pin.SanitizeName(o.SeenBy), o.SeenAt.UTC().Format(time.RFC3339), shownOwner(l.plugin))})
		}
	}
	return events, errors.Join(bad...)
}

// HeadStore is what Heads uses of a store.
type HeadStore interface {
	DriftHeads(ctx context.Context) ([]store.DriftHead, error)
}

// Heads returns a digest of the trust state of every plugin's skills in st
// (the baseline version and the latest observation of each row Owner
// names), in one store query: a process polls it and calls Apply again when
// it differs from the digest it read after its last Apply, so a trust made
// by another process (`gatehouse trust skills:PLUGIN`) or drift another
// instance recorded takes effect without waiting for the next re-check.
func Heads(ctx context.Context, st HeadStore) (string, error) {
	heads, err := st.DriftHeads(ctx)
	if err != nil {
		return "", fmt.Errorf("skilltrust: reading the trust state: %w", err)
	}
	var b []byte
	for _, h := range heads {
		if _, ok := PluginOf(h.ServerID); !ok {
			continue
		}
		b = fmt.Appendf(b, "%q %d %d\n", h.ServerID, h.BaselineVersion, h.LastObservation)
	}
	return string(b), nil
}
