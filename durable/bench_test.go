package durable

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// BenchmarkCall compares a call to a go-sdk server over in-memory
// transports, unjournaled and journaled (one claim and one completion per
// call) on SQLite (durability process and power) and PostgreSQL, with 1 and
// 8 concurrent runs. Every journaled call has a fresh key: the fresh path.
// The -nogroup rows turn SQLite's group commit off.
//
//	go test -run '^$' -bench BenchmarkCall -benchtime 2s ./durable/
func BenchmarkCall(b *testing.B) {
	openSQLite := func(o *store.Options) func(b *testing.B) store.JournalStore {
		return func(b *testing.B) store.JournalStore {
			s, err := sqlite.Open(ctxT(b), filepath.Join(b.TempDir(), "j.db"), o)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}
	}
	type backend struct {
		name string
		open func(b *testing.B) store.JournalStore // nil: unjournaled
	}
	backends := []backend{
		{"direct", nil},
		{"sqlite-process", openSQLite(nil)},
		{"sqlite-process-nogroup", openSQLite(&store.Options{GroupCommit: store.GroupCommitOff})},
		{"sqlite-power", openSQLite(&store.Options{Durability: store.DurabilityPower})},
		{"sqlite-power-nogroup", openSQLite(&store.Options{Durability: store.DurabilityPower, GroupCommit: store.GroupCommitOff})},
		{"postgres", func(b *testing.B) store.JournalStore {
			s, err := postgres.Open(ctxT(b), pgSchema(b), &store.Options{MaxConns: 16})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
	}
	args := json.RawMessage(`{"amount":1}`)
	for _, be := range backends {
		for _, conc := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/runs=%d", be.name, conc), func(b *testing.B) {
				cs := inMemServer(b, filepath.Join(b.TempDir(), "effects"))
				var j *Journal
				if be.open != nil {
					j = newJournal(b, be.open(b), nil)
				}
				ctx := ctxT(b)
				var seq atomic.Int64
				call := func() error {
					n := seq.Add(1)
					if j == nil {
						_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args,
							Meta: mcp.Meta{"idempotencyKey": fmt.Sprintf("run%d:c", n)}})
						return err
					}
					c := Call{RunID: fmt.Sprintf("run%d", n%int64(conc)), ToolCallID: fmt.Sprintf("c%d", n), Server: "s", Tool: "echo", Args: args}
					_, _, err := j.Do(ctx, c, effectOf(cs, "echo", args))
					return err
				}
				b.ReportAllocs()
				start := time.Now()
				if conc == 1 {
					for b.Loop() {
						if err := call(); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					b.SetParallelism((conc + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if err := call(); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				b.ReportMetric(float64(seq.Load())/time.Since(start).Seconds(), "calls/s")
			})
		}
	}
}
