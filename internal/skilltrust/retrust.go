package skilltrust

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/gatehouse-dev/gatehouse/pin"
	"github.com/gatehouse-dev/gatehouse/skills"
)

// ErrUnknownPlugin is Retrust's error when the catalog was not built from
// the plugin.
var ErrUnknownPlugin = errors.New("skilltrust: no such plugin")

// Record is what Retrust recorded for one plugin.
type Record struct {
	// ID is the row of the plugin's skills (Owner).
	ID string `json:"id"`
	// Plugin is the plugin's name.
	Plugin string `json:"plugin"`
	// Cleared is how many baseline entries the re-trust replaced.
	Cleared int64 `json:"cleared"`
	// Skills are the trusted skills, sorted by name.
	Skills []Trusted `json:"skills"`
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

// Trusted is one recorded skill: its name in its plugin and its pin
// fingerprint (skills.Contract.Fingerprint).
type Trusted struct {
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
func Retrust(ctx context.Context, st Store, cat *skills.Catalog, plugin string) (Record, error) {
	if !slices.Contains(cat.Plugins(), plugin) {
		return Record{}, fmt.Errorf("%w: plugin %s is not among the loaded plugins (its skills' row is %s)",
			ErrUnknownPlugin, pin.SanitizeName(plugin), shownOwner(plugin))
	}
	var names []string
	for _, s := range cat.Skills() {
		if s.Plugin == plugin {
			names = append(names, s.Name)
		}
	}
	id := Owner(plugin)
	l, err := listSkills(ctx, cat, plugin, names)
	if err != nil {
		return Record{}, fmt.Errorf("skilltrust: plugin %s: %w", pin.SanitizeName(plugin), err)
	}
	if err := ensureRow(ctx, st, id); err != nil {
		return Record{}, fmt.Errorf("skilltrust: plugin %s: its store row: %w", pin.SanitizeName(plugin), err)
	}
	old, err := st.GetBaseline(ctx, id)
	if err != nil {
		return Record{}, fmt.Errorf("skilltrust: plugin %s: reading its baseline: %w", pin.SanitizeName(plugin), err)
	}
	cleared, err := st.ReplaceBaseline(ctx, id, l.entries)
	if err != nil {
		return Record{}, fmt.Errorf("skilltrust: plugin %s: recording its baseline: %w", pin.SanitizeName(plugin), err)
	}
	rec := Record{ID: id, Plugin: plugin, Cleared: cleared, Skills: []Trusted{}, Unpinnable: l.unpinnable,
		Listing: l.print, Changes: diff(old, l.entries)}
	if rec.Unpinnable == nil {
		rec.Unpinnable = []string{}
	}
	for name, e := range skillsOf(l.entries) {
		rec.Skills = append(rec.Skills, Trusted{Name: name, Fingerprint: e.Value})
	}
	sort.Slice(rec.Skills, func(i, j int) bool { return rec.Skills[i].Name < rec.Skills[j].Name })
	sort.Strings(rec.Unpinnable)
	return rec, nil
}
