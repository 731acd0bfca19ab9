// Package fdbudget splits a process's file-descriptor limit among its
// HTTP listeners' connection caps (server.HTTPLimits.MaxConns), so that a flood of one listener (or of
// all) cannot take the descriptors the process needs for everything else:
// starting an upstream, opening the store, dialing out. `gatehouse serve`
// and `gatehouse connect` size their listeners with it.
package fdbudget

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// The split of a process's file descriptors among its listeners
// ([Split]).
const (
	// MinFDReserve is the fewest file descriptors a split keeps for what
	// is not a listener's connection.
	MinFDReserve = 256
	// FDReserveDivisor: a split keeps a quarter of the limit (or
	// MinFDReserve, if more) for what is not a listener's connection.
	FDReserveDivisor = 4
	// MinListenerConns is the fewest connections a split gives a listener
	// (one that asks for fewer gets what it asks).
	MinListenerConns = 16
)

// ErrLimit reports a file-descriptor limit too small for a process's
// listeners and its reserve.
var ErrLimit = errors.New("fdbudget: the file-descriptor limit is too small")

// Listener is one of a process's listeners in [Split].
type Listener struct {
	// Name names it in errors and logs (a config key, e.g.
	// "console.listen").
	Name string
	// MaxConns is the most connections it asks for, at least 1. In a
	// [Budget] it is the listener's share.
	MaxConns int
}

// ErrInvalid reports a listener that asks for no connection, or for a
// negative number.
var ErrInvalid = errors.New("fdbudget: invalid listener")

// Budget is a process's file descriptors split among its listeners.
type Budget struct {
	// FDLimit is the limit split (RLIMIT_NOFILE); 0 when unknown, and
	// then nothing was split.
	FDLimit int
	// Reserve is what is kept for everything that is not a listener's
	// connection: the listening sockets themselves, upstream stdio pipes
	// and processes, the store's files and connections, outgoing HTTP
	// connections, logs.
	Reserve int
	// Listeners are the listeners in the order given, each with its
	// MaxConns set to its share: what it asked for, or less when the
	// limit does not hold every listener's ask.
	Listeners []Listener
}

// Split splits a process's file-descriptor limit (RLIMIT_NOFILE,
// [Limit]) among its listeners, so that all of them full at once leave
// the reserve free: a flood of one listener, or of all, cannot take the
// descriptors the process needs to answer on the others, start an
// upstream, open the store or dial out.
//
// The reserve is a quarter of the limit, and at least MinFDReserve. The
// rest is shared by progressive filling: each listener gets what it asks
// for when that is no more than an equal share of what remains, and the
// listeners that ask for more split the remainder equally (so a small
// listener, such as a console or a metrics endpoint, keeps its whole cap,
// and the big one gets what is left, up to its ask). Every share is at
// least MinListenerConns; a limit too small for that and the reserve is
// an [ErrLimit] that says what limit would do. A limit of 0 (unknown)
// splits nothing: every listener keeps its ask.
func Split(fdLimit int, ls ...Listener) (Budget, error) {
	b := Budget{FDLimit: fdLimit, Listeners: slices.Clone(ls)}
	asked := make([]int, len(ls))
	for i := range b.Listeners {
		if mc := ls[i].MaxConns; mc < 1 {
			return Budget{}, fmt.Errorf("%w: %s asks for %d connections; it must ask for 1 or more", ErrInvalid, ls[i].Name, mc)
		}
		asked[i] = ls[i].MaxConns
	}
	if fdLimit <= 0 {
		b.FDLimit = 0
		return b, nil
	}
	b.Reserve = max(MinFDReserve, fdLimit/FDReserveDivisor)
	floor := 0
	for _, a := range asked {
		floor += min(a, MinListenerConns)
	}
	avail := fdLimit - b.Reserve
	if avail < floor {
		names := make([]string, len(ls))
		for i, l := range ls {
			names[i] = l.Name
		}
		return Budget{}, fmt.Errorf("%w: the process may open %d files (RLIMIT_NOFILE); its listeners (%s) need %d "+
			"connections at least, and %d are kept for upstreams, the store and outgoing connections: raise the limit to %d or more (ulimit -n)",
			ErrLimit, fdLimit, strings.Join(names, ", "), floor, b.Reserve, minFDLimit(floor))
	}
	// Progressive filling, smallest ask first: a share is never below
	// avail/len(ls) >= MinListenerConns, and it grows as small asks leave
	// more than their share.
	order := make([]int, len(ls))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return asked[i] - asked[j] })
	left := avail
	for k, i := range order {
		share := min(asked[i], left/(len(order)-k))
		b.Listeners[i].MaxConns = share
		left -= share
	}
	return b, nil
}

// minFDLimit is the least limit whose split gives listeners need
// connections: the reserve is MinFDReserve up to a limit of
// MinFDReserve*FDReserveDivisor, a quarter of it above.
func minFDLimit(need int) int {
	if l := MinFDReserve + need; l <= MinFDReserve*FDReserveDivisor {
		return l
	}
	// l - l/4 >= need
	l := need * FDReserveDivisor / (FDReserveDivisor - 1)
	for l-l/FDReserveDivisor < need {
		l++
	}
	return l
}

// clampFDLimit makes a limit read from the system an int the split can
// use (RLIM_INFINITY and other huge values become MaxInt32).
func clampFDLimit(cur uint64) int {
	if cur > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(cur)
}
