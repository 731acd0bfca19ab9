package eino_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gatehouse-dev/gatehouse/adapters/internal/agentcrash"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	gheino "github.com/gatehouse-dev/gatehouse/adapters/eino"
	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// benchStores are the journals both benchmarks run on: memory (the
// adapter's own cost shows) and a SQLite file (as an agent runs).
func benchStores(b *testing.B) map[string]func(b *testing.B) store.Store {
	return map[string]func(b *testing.B) store.Store{
		"memory": func(b *testing.B) store.Store { return memStore(b) },
		"sqlite": func(b *testing.B) store.Store { return agentcrash.OpenStore(b, filepath.Join(b.TempDir(), "g.db")) },
	}
}

const benchArgs = `{"amount":1}`

// BenchmarkAdapterCall: one new call of the effect server's echo (stdio,
// through a toolset) per iteration, made as eino makes it: Tool.InvokableRun
// with the arguments' text, through the executor and the journal.
func BenchmarkAdapterCall(b *testing.B) {
	for name, open := range benchStores(b) {
		b.Run(name, func(b *testing.B) {
			ts, _ := agentcrash.OpenToolset(b)
			ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "bench", Journal: agentcrash.NewJournal(b, open(b)), Tools: agentcrash.Tools(b, ts)})
			if err != nil {
				b.Fatal(err)
			}
			tools, err := gheino.Tools(ex)
			if err != nil {
				b.Fatal(err)
			}
			var echo *gheino.Tool
			for _, t := range tools {
				if info, _ := t.Info(context.Background()); info.Name == "pay__echo" {
					echo = t.(*gheino.Tool)
				}
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := echo.InvokableRun(ctx, benchArgs, gheino.WithCallID("c"+strconv.Itoa(i))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDirectToolsetCall: the same call without the adapter: the
// journal's guarded call around toolset.Call, as a Go agent would write it.
func BenchmarkDirectToolsetCall(b *testing.B) {
	for name, open := range benchStores(b) {
		b.Run(name, func(b *testing.B) {
			ts, _ := agentcrash.OpenToolset(b)
			j := agentcrash.NewJournal(b, open(b))
			guard := policy.AllowAll()
			args := json.RawMessage(benchArgs)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				c := durable.Call{RunID: "bench", ToolCallID: "c" + strconv.Itoa(i), Server: "pay", Tool: "pay__echo", RemoteName: "echo", Args: args}
				_, _, err := j.Guarded(ctx, c, guard, func(ctx context.Context, key string) (*mcp.CallToolResult, error) {
					return ts.Call(ctx, "pay__echo", args, toolset.CallInfo{Meta: map[string]any{loop.MetaIdempotencyKey: key}})
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
