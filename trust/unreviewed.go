package trust

import (
	"slices"
	"strings"

	"github.com/gatehouse-dev/gatehouse/store"
)

// Unreviewed is the one rule of what waits for an operator's review: for
// each row (a server, or a plugin's skills), the latest of its open
// observations that drifted, in the order OpenObservations returns them
// (ascending ID); sorted by row ID. What drifted last is what an operator
// reviews and trusts (`gatehouse drift list` and `drift show`, the
// console's drift page).
func Unreviewed(open []store.Observation) []store.Observation {
	latest := map[string]store.Observation{}
	for _, o := range open {
		if o.Drifted {
			latest[o.ServerID] = o
		}
	}
	out := make([]store.Observation, 0, len(latest))
	for _, o := range latest {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b store.Observation) int { return strings.Compare(a.ServerID, b.ServerID) })
	return out
}
