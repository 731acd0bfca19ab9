package anthropic_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	anthropic "github.com/gatehouse-dev/gatehouse/adapters/anthropic"
	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// benchTool returns the effect server's echo tool (a stdio subprocess
// behind a toolset) and a journal on a SQLite file.
func benchTool(b *testing.B) (loop.Tool, *durable.Journal) {
	tools, _ := effects(b)
	for _, t := range tools {
		if t.Name == "effects__echo" {
			return t, newJournal(b, openStore(b, filepath.Join(b.TempDir(), "db")))
		}
	}
	b.Fatal("no echo tool")
	return loop.Tool{}, nil
}

// BenchmarkAdapterCall: a reply's tool_use block made through ToolResults
// (the Executor, the journal, the toolset) and rendered as the tool_result
// message; each iteration a new tool_use ID, so each call runs.
func BenchmarkAdapterCall(b *testing.B) {
	tool, j := benchTool(b)
	ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "bench", Journal: j, Tools: []loop.Tool{tool}})
	if err != nil {
		b.Fatal(err)
	}
	var tmpl sdk.Message
	raw := `{"id":"msg","type":"message","role":"assistant","model":"m","stop_reason":"tool_use","content":[{"type":"tool_use","id":"toolu_0","name":"effects__echo","input":{"amount":1}}]}`
	if err := json.Unmarshal([]byte(raw), &tmpl); err != nil {
		b.Fatal(err)
	}
	block := tmpl.Content[0]
	ctx := ctxT(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		msg := tmpl // the reply of turn i: one tool_use with a new ID
		blk := block
		blk.ID = "toolu_" + strconv.Itoa(i)
		msg.Content = []sdk.ContentBlockUnion{blk}
		_, outs, _, err := anthropic.ToolResults(ctx, ex, &msg)
		if err != nil || outs[0].Message.IsError {
			b.Fatal(err, outs)
		}
	}
}

// BenchmarkExecutorCall: the same call through the Executor alone (the
// journal, the guard, the toolset), without the adapter's conversions: the
// adapter's own cost is AdapterCall minus this.
func BenchmarkExecutorCall(b *testing.B) {
	tool, j := benchTool(b)
	ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "bench", Journal: j, Tools: []loop.Tool{tool}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := ctxT(b)
	args := json.RawMessage(`{"amount":1}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		o, err := ex.Call(ctx, loop.ToolCall{ID: "toolu_" + strconv.Itoa(i), Name: tool.Name, Args: args})
		if err != nil || o.Message.IsError {
			b.Fatal(err, o)
		}
	}
}

// BenchmarkDirectToolsetCall: the same tool through the same kind of
// journal, called directly (Journal.Do over loop.ToolsetCall's call).
func BenchmarkDirectToolsetCall(b *testing.B) {
	tool, j := benchTool(b)
	ctx := ctxT(b)
	args := json.RawMessage(`{"amount":1}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		c := durable.Call{RunID: "bench", ToolCallID: "toolu_" + strconv.Itoa(i), Server: tool.Server, Tool: tool.Name, RemoteName: tool.RemoteName, Args: args}
		res, _, err := j.Do(ctx, c, func(ctx context.Context, key string) (*mcp.CallToolResult, error) {
			return tool.Call(ctx, args, key)
		})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}
