package toolset

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/cputime"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/testserver"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
	"github.com/gatehouse-dev/gatehouse/trust"
)

// The cost of drift.recheck (issue 14): one background round re-lists every
// connected server and judges it against its baseline. These benchmarks run
// it on a fleet of 50 real go-sdk servers of 40 tools each, over streamable
// HTTP on 127.0.0.1, with a real SQLite store:
//
//	go test -run '^$' -bench 'RecheckRound|CallDuringRecheck' ./toolset/
//
// BenchmarkRecheckRound reports a round's wall time, its CPU (cpu-ns/op:
// the whole process, so the 50 upstream servers' share of the round is in
// it), its allocations, its store writes (writes/op) and the tools/list
// requests the upstreams answered (lists/op: every server, every round).
// BenchmarkCallDuringRecheck reports the latency of calls made while rounds
// run back to back ("recheck") and while none runs ("idle"): p50-µs and
// p99-µs; the ratio recheck/idle is the proof that calls in flight are not
// slowed.
const (
	recheckServers = 50
	recheckTools   = 40
)

// countingStore counts the writes the toolset makes to its store. The write
// methods of Store are PutServer, SaveBaseline, ReplaceBaseline and
// ObserveListing (the others read); each call counts one write, whatever it
// changes.
type countingStore struct {
	trust.Store
	puts, saves, clears, observes atomic.Int64
}

func (s *countingStore) PutServer(ctx context.Context, srv store.Server) error {
	s.puts.Add(1)
	return s.Store.PutServer(ctx, srv)
}

func (s *countingStore) SaveBaseline(ctx context.Context, serverID string, entries store.Baseline) (int, error) {
	s.saves.Add(1)
	return s.Store.SaveBaseline(ctx, serverID, entries)
}

func (s *countingStore) ReplaceBaseline(ctx context.Context, serverID string, entries store.Baseline) (int64, error) {
	s.clears.Add(1)
	return s.Store.ReplaceBaseline(ctx, serverID, entries)
}

func (s *countingStore) ObserveListing(ctx context.Context, o store.Observation) (store.Observation, bool, error) {
	s.observes.Add(1)
	return s.Store.ObserveListing(ctx, o)
}

func (s *countingStore) writes() int64 {
	return s.puts.Load() + s.saves.Load() + s.clears.Load() + s.observes.Load()
}

// recheckFleet is the benchmarks' fleet and the toolset over it.
type recheckFleet struct {
	ts    *Toolset
	store *countingStore
	lists atomic.Int64 // tools/list requests answered by the upstreams
	calls atomic.Int64 // tools/call requests answered by the upstreams
	tool  string       // the projected name of the tool the calls use
}

// startRecheckFleet starts recheckServers servers of recheckTools tools on
// one loopback listener (one path each) and a toolset over them with a
// SQLite store in b.TempDir, connected, every tool trusted at first sight.
// Cleanup closes the toolset, then the listener, then the store.
func startRecheckFleet(b *testing.B, recheck time.Duration) *recheckFleet {
	b.Helper()
	f := &recheckFleet{}
	mux := http.NewServeMux()
	count := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/list":
				f.lists.Add(1)
			case "tools/call":
				f.calls.Add(1)
			}
			return next(ctx, method, req)
		}
	}
	for i := range recheckServers {
		// Generated tools have what real ones have: a description of a few
		// sentences, an object schema with described properties, an enum,
		// a format, a minimum, a nested object and an array.
		fx := testserver.New(testserver.Config{Name: fmt.Sprintf("up%02d", i), Generate: recheckTools, DescriptionLen: 300})
		fx.Server().AddReceivingMiddleware(count)
		mux.Handle(fmt.Sprintf("/s%02d/mcp", i), fx.Handler(false, nil))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "gatehouse.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	hs := httptest.NewServer(mux) // 127.0.0.1
	b.Cleanup(hs.Close)
	f.store = &countingStore{Store: st}

	servers := make([]Server, recheckServers)
	for i := range servers {
		servers[i] = remote(fmt.Sprintf("s%02d", i), fmt.Sprintf("%s/s%02d/mcp", hs.URL, i), plugin.TransportStreamableHTTP)
	}
	ts, err := Open(ctx, servers, &Options{Store: f.store, ConnectTimeout: 30 * time.Second, Recheck: recheck})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := ts.Close(); err != nil {
			b.Errorf("Close: %v", err)
		}
	})
	list, err := ts.Tools(ctx)
	if err != nil {
		b.Fatal(err)
	}
	active := 0
	for _, ti := range list {
		if ti.Server != "" && ti.State == Active {
			active++
		}
	}
	if active != recheckServers*recheckTools {
		b.Fatalf("%d active tools, want %d (diagnostics %v)", active, recheckServers*recheckTools, ts.Diagnostics())
	}
	f.ts, f.tool = ts, "s00__gen_0000"
	return f
}

// round runs one recheck round (what Options.Recheck runs on its
// schedule): every connected server re-listed and judged; a listing
// identical to the last one stops there.
func (f *recheckFleet) round(ctx context.Context) error { return f.ts.RecheckNow(ctx) }

// healthy fails b if any server's listing failed or any tool left the map
// or was quarantined: the rounds measured must be clean re-listings.
func (f *recheckFleet) healthy(b *testing.B) {
	b.Helper()
	if ds := f.ts.Diagnostics(); len(ds) > 0 {
		b.Fatalf("diagnostics after the rounds: %v", ds)
	}
	list, err := f.ts.Tools(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	active := 0
	for _, ti := range list {
		if ti.Server != "" && ti.State == Active {
			active++
		}
	}
	if active != recheckServers*recheckTools {
		b.Fatalf("%d active tools after the rounds, want %d", active, recheckServers*recheckTools)
	}
}

func BenchmarkRecheckRound(b *testing.B) {
	f := startRecheckFleet(b, 0)
	ctx := context.Background()
	writes, lists := f.store.writes(), f.lists.Load()
	b.ReportAllocs()
	start := cputime.Start(b)
	for b.Loop() {
		if err := f.round(ctx); err != nil {
			b.Fatal(err)
		}
	}
	cputime.Report(b, start)
	n := float64(b.N)
	b.ReportMetric(float64(f.store.writes()-writes)/n, "writes/op")
	b.ReportMetric(float64(f.lists.Load()-lists)/n, "lists/op")
	if got := f.lists.Load() - lists; got < int64(b.N)*recheckServers {
		b.Fatalf("the upstreams answered %d tools/list in %d rounds, want %d a round", got, b.N, recheckServers)
	}
	f.healthy(b)
}

// The sub-benchmarks: "idle" makes calls with no re-listing at all;
// "scheduled" makes them while Options.Recheck re-lists the fleet as a
// gateway does (spread over the interval, here 2s for the 50 servers: a
// listing every 40 ms, ~30 times the rate drift.recheck's default 60s
// gives); "burst" while RecheckNow rounds run back to back (every server,
// two at a time, no pause: the worst case, not what a gateway does).
func BenchmarkCallDuringRecheck(b *testing.B) {
	f := startRecheckFleet(b, 0)
	b.Run("idle", func(b *testing.B) { benchCallsDuring(b, f, false) })
	b.Run("burst", func(b *testing.B) { benchCallsDuring(b, f, true) })
	g := startRecheckFleet(b, 2*time.Second)
	b.Run("scheduled", func(b *testing.B) { benchCallsScheduled(b, g) })
}

// benchCallsScheduled calls one tool while the toolset's own recheck runs
// (the fleet was opened with Options.Recheck), and reports the latency
// percentiles and the listings made meanwhile.
func benchCallsScheduled(b *testing.B, f *recheckFleet) {
	ctx := context.Background()
	args := map[string]any{"id": "4f7c2a1e-5b6d-4e8f-9a0b-1c2d3e4f5a6b", "mode": "careful"}
	lat := make([]time.Duration, 0, 1<<14)
	lists := f.lists.Load()
	runtime.GC()
	b.ReportAllocs()
	for b.Loop() {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		t0 := time.Now()
		res, err := f.ts.Call(cctx, f.tool, args, CallInfo{})
		lat = append(lat, time.Since(t0))
		cancel()
		if err == nil && res.IsError {
			err = errors.New("tool error")
		}
		if err != nil {
			b.Fatalf("call %d: %v", len(lat), err)
		}
	}
	b.StopTimer()
	listed := f.lists.Load() - lists
	if listed == 0 {
		b.Fatal("the recheck listed nothing during the calls")
	}
	slices.Sort(lat)
	pct := func(q float64) float64 {
		return float64(lat[int(q*float64(len(lat)-1))]) / float64(time.Microsecond)
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(float64(listed), "lists")
	f.healthy(b)
}

// benchCallsDuring calls one tool of one server (a server the rounds re-list
// too) in the benchmark loop, one call at a time, and reports its latency
// percentiles. With recheck, a goroutine runs rounds back to back from
// before the first call until after the last; every call is counted as made
// during a round only if one was running when it started ("in-round-%").
// allocs/op then includes the rounds' allocations.
func benchCallsDuring(b *testing.B, f *recheckFleet, recheck bool) {
	ctx := context.Background()
	var (
		wg       sync.WaitGroup
		stop     atomic.Bool
		inRound  atomic.Bool
		rounds   atomic.Int64
		roundErr error
	)
	if recheck {
		started := make(chan struct{})
		wg.Go(func() {
			for first := true; !stop.Load(); first = false {
				inRound.Store(true)
				if first {
					close(started)
				}
				err := f.round(ctx)
				inRound.Store(false)
				if err != nil {
					roundErr = err
					return
				}
				rounds.Add(1)
			}
		})
		<-started
	}
	args := map[string]any{"id": "4f7c2a1e-5b6d-4e8f-9a0b-1c2d3e4f5a6b", "mode": "careful"}
	lat := make([]time.Duration, 0, 1<<14)
	during, calls, lists := 0, f.calls.Load(), f.lists.Load()
	runtime.GC() // the garbage of the setup, or of the sub-benchmark before, is not this one's
	b.ReportAllocs()
	for b.Loop() {
		if inRound.Load() {
			during++
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		t0 := time.Now()
		res, err := f.ts.Call(cctx, f.tool, args, CallInfo{})
		lat = append(lat, time.Since(t0))
		cancel()
		if err == nil && res.IsError {
			err = errors.New("tool error")
		}
		if err != nil {
			stop.Store(true)
			wg.Wait()
			b.Fatalf("call %d: %v", len(lat), err)
		}
	}
	b.StopTimer()
	stop.Store(true)
	wg.Wait()
	if roundErr != nil {
		b.Fatalf("a round failed: %v", roundErr)
	}
	if got := f.calls.Load() - calls; got != int64(len(lat)) {
		b.Fatalf("the upstream answered %d calls, want %d", got, len(lat))
	}
	if !recheck && f.lists.Load() != lists {
		b.Fatalf("the upstreams answered %d tools/list while idle", f.lists.Load()-lists)
	}
	if recheck && during == 0 {
		b.Fatal("no call was made during a round")
	}
	slices.Sort(lat)
	pct := func(q float64) float64 {
		return float64(lat[int(q*float64(len(lat)-1))]) / float64(time.Microsecond)
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	if recheck {
		b.ReportMetric(100*float64(during)/float64(len(lat)), "in-round-%")
		b.ReportMetric(float64(rounds.Load()), "rounds")
	}
	f.healthy(b)
}
