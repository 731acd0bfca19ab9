package fdbudget

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// serveListeners are the listeners of `gatehouse serve` with everything
// configured: the MCP endpoint (its default cap), the console, the
// metrics.
func serveListeners() []Listener {
	return []Listener{
		{Name: "listen", MaxConns: defaultAsk},
		{Name: "console.listen", MaxConns: 64},
		{Name: "metrics.listen", MaxConns: 64},
	}
}

// defaultAsk is what `gatehouse serve`'s MCP listener asks for by default
// (server.DefaultMaxConns).
const defaultAsk = 16384

func caps(b Budget) []int {
	var out []int
	for _, l := range b.Listeners {
		out = append(out, l.MaxConns)
	}
	return out
}

// TestSplitFDs: the reserve is a quarter of the limit (at least 256); the
// small listeners keep their caps and the MCP endpoint gets the rest, up
// to what it asks for; at a limit that holds only the minimum, every
// listener gets an equal share.
func TestSplitFDs(t *testing.T) {
	for _, tc := range []struct {
		limit, reserve int
		caps           []int
	}{
		{1 << 20, 1 << 18, []int{defaultAsk, 64, 64}}, // systemd's and Docker's usual hard limit
		{65536, 16384, []int{defaultAsk, 64, 64}},
		{20000, 5000, []int{14872, 64, 64}},
		{4096, 1024, []int{2944, 64, 64}},
		{1024, 256, []int{640, 64, 64}}, // the usual soft limit, when the hard one is no higher
		{400, 256, []int{48, 48, 48}},
		{304, 256, []int{16, 16, 16}}, // the least that holds three listeners
	} {
		b, err := Split(tc.limit, serveListeners()...)
		if err != nil {
			t.Fatalf("limit %d: %v", tc.limit, err)
		}
		if b.FDLimit != tc.limit || b.Reserve != tc.reserve || !slices.Equal(caps(b), tc.caps) {
			t.Errorf("limit %d: reserve %d, caps %v; want %d, %v", tc.limit, b.Reserve, caps(b), tc.reserve, tc.caps)
		}
	}
}

// TestSplitFDsHoldsTheReserve: at every limit from the least that holds
// the listeners up, the caps together leave the reserve free; no listener
// gets more than it asks for, nor less than the minimum (or its ask); a
// small listener loses its cap only when an equal share is below it; the
// names are kept in order.
func TestSplitFDsHoldsTheReserve(t *testing.T) {
	sets := [][]Listener{
		serveListeners(),
		{{Name: "listen", MaxConns: 100000}},
		{{Name: "a", MaxConns: 8}, {Name: "b", MaxConns: 3000}, {Name: "c", MaxConns: 500}},
	}
	for _, ls := range sets {
		for limit := 250; limit <= 200000; limit += 1 + limit/50 {
			b, err := Split(limit, ls...)
			if err != nil {
				if !errors.Is(err, ErrLimit) {
					t.Fatalf("limit %d: %v", limit, err)
				}
				continue
			}
			sum := 0
			for i, l := range b.Listeners {
				ask := ls[i].MaxConns
				c := l.MaxConns
				sum += c
				if c > ask || c < min(ask, MinListenerConns) || l.Name != ls[i].Name {
					t.Fatalf("limit %d: %s gets %d of %d", limit, l.Name, c, ask)
				}
				if c < ask && c < (limit-b.Reserve)/len(ls) {
					t.Fatalf("limit %d: %s gets %d of %d, less than an equal share", limit, l.Name, c, ask)
				}
			}
			if b.Reserve < MinFDReserve || b.Reserve < limit/4 || sum+b.Reserve > limit {
				t.Fatalf("limit %d: reserve %d, caps %v", limit, b.Reserve, caps(b))
			}
		}
	}
}

// TestSplitFDsTooSmall: a limit that cannot hold the reserve and the
// minimum of every listener is ErrLimit, naming the limit, the
// listeners and the limit that would do; that limit does, one less does
// not.
func TestSplitFDsTooSmall(t *testing.T) {
	_, err := Split(300, serveListeners()...)
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("limit 300: %v", err)
	}
	for _, want := range []string{"may open 300 files", "listen, console.listen, metrics.listen", "need 48", "raise the limit to 304 or more (ulimit -n)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	many := make([]Listener, 100) // past a limit of 1024, the reserve is a quarter
	for i := range many {
		many[i] = Listener{Name: "l", MaxConns: defaultAsk}
	}
	for _, ls := range [][]Listener{serveListeners(), many, {{Name: "small", MaxConns: 4}}} {
		floor := 0
		for _, l := range ls {
			floor += min(l.MaxConns, MinListenerConns)
		}
		least := minFDLimit(floor)
		if _, err := Split(least, ls...); err != nil {
			t.Errorf("%d listeners at the least limit %d: %v", len(ls), least, err)
		}
		if _, err := Split(least-1, ls...); !errors.Is(err, ErrLimit) {
			t.Errorf("%d listeners at %d, under the least limit: %v", len(ls), least-1, err)
		}
	}
}

// TestSplitFDsUnknownLimit: without a limit (0: none known), every
// listener keeps its ask and nothing is reserved; a listener asking for
// no connection, or a negative number, is refused.
func TestSplitFDsUnknownLimit(t *testing.T) {
	b, err := Split(0, serveListeners()...)
	if err != nil || b.Reserve != 0 || !slices.Equal(caps(b), []int{defaultAsk, 64, 64}) {
		t.Errorf("unknown limit: %+v, %v", b, err)
	}
	for _, ask := range []int{-1, 0} {
		_, err := Split(1024, Listener{Name: "x", MaxConns: ask})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("x asks for %d connections", ask)) {
			t.Errorf("a cap of %d: %v", ask, err)
		}
	}
}
