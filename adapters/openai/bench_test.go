package openai_test

import (
	"context"

	"encoding/json"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"strconv"
	"testing"

	"github.com/openai/openai-go/v3/responses"

	"github.com/gatehouse-dev/gatehouse/adapters/openai"
	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/memory"
)

// benchEnv is the effect server through a toolset, a journal on a SQLite
// file and pay__echo's tool: what both benchmarks share.
func benchEnv(b *testing.B, kind string) (*durable.Journal, []loop.Tool, loop.Tool) {
	b.Helper()
	var tools []loop.Tool
	if kind == "inproc" {
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"amount":1}`}}}
		tools = []loop.Tool{{Name: "pay__echo", Server: "pay", RemoteName: "echo",
			Call: func(context.Context, json.RawMessage, string) (*mcp.CallToolResult, error) { return res, nil }}}
	} else {
		ts, _ := openEffects(b, nil)
		tools = toolsetTools(b, ts)
	}
	var st store.Store
	if kind != "sqlite" {
		m, err := memory.New(nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { m.Close() })
		st = m
	} else {
		st = sqliteStore(b, "")
	}
	for _, tl := range tools {
		if tl.Name == "pay__echo" {
			return newJournal(b, st), tools, tl
		}
	}
	b.Fatal("no pay__echo")
	return nil, nil, loop.Tool{}
}

// benchStores are the setups the benchmarks run on: the effect server
// over stdio with a journal on a SQLite file (what an agent uses) or in
// memory, and "inproc", a Go tool and a journal in memory, where the
// adapter's own cost stands out of the I/O's noise.
var benchStores = []string{"sqlite", "memory", "inproc"}

// BenchmarkAdapterCall is one model function call made through the
// adapter: a Responses function_call output item in, CallResponses
// (loop.Executor: guard, journal claim and completion, toolset call to the
// effect server over stdio) and its function_call_output item out.
func BenchmarkAdapterCall(b *testing.B) {
	for _, kind := range benchStores {
		b.Run(kind, func(b *testing.B) { benchAdapterCall(b, kind) })
	}
}

func benchAdapterCall(b *testing.B, kind string) {
	journal, tools, _ := benchEnv(b, kind)
	ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "bench", Journal: journal, Tools: tools, Guard: policy.AllowAll()})
	if err != nil {
		b.Fatal(err)
	}
	var item responses.ResponseOutputItemUnion
	if err := json.Unmarshal([]byte(`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"pay__echo","arguments":"{\"amount\":1}","status":"completed"}`), &item); err != nil {
		b.Fatal(err)
	}
	ctx := ctxT(b)
	output := []responses.ResponseOutputItemUnion{item}
	b.ResetTimer()
	for i := range b.N {
		output[0].CallID = "call_" + strconv.Itoa(i)
		items, outs, err := openai.CallResponses(ctx, ex, output)
		if err != nil || len(items) != 1 || outs[0].Message.IsError {
			b.Fatalf("%v %+v", err, outs)
		}
	}
}

// BenchmarkDirectToolsetCall is the same call made without the adapter:
// durable.Journal.Guarded around the toolset call, same tool, journal and
// guard.
func BenchmarkDirectToolsetCall(b *testing.B) {
	for _, kind := range benchStores {
		b.Run(kind, func(b *testing.B) { benchDirectCall(b, kind) })
	}
}

func benchDirectCall(b *testing.B, kind string) {
	journal, _, tool := benchEnv(b, kind)
	ctx := ctxT(b)
	args := json.RawMessage(`{"amount":1}`)
	guard := policy.AllowAll()
	b.ResetTimer()
	for i := range b.N {
		c := durable.Call{RunID: "bench", ToolCallID: "call_" + strconv.Itoa(i), Server: tool.Server, Tool: tool.Name,
			RemoteName: tool.RemoteName, Args: args}
		res, _, err := journal.Guarded(ctx, c, guard, func(ctx context.Context, key string) (*mcp.CallToolResult, error) {
			return tool.Call(ctx, args, key)
		})
		if err != nil || res.IsError {
			b.Fatalf("%v %+v", err, res)
		}
	}
}
