package toolset

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/testserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inMemory returns a Server whose every connection is a fresh in-memory
// session of srv.
func inMemory(name string, srv *mcp.Server) Server {
	s := Server{}
	s.Config.Name = name
	s.transport = func() (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(context.Background(), st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
	return s
}

func TestInMemoryTransportHook(t *testing.T) {
	fx := testserver.New(testserver.Config{Tools: []string{"echo"}})
	ts := open(t, []Server{inMemory("mem", fx.Server())}, nil)
	if got := call(t, ts, "mem__echo", map[string]any{"text": "m"}); got != "m" {
		t.Errorf("echo %q", got)
	}
}

// cpuTime returns this process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports CPU time per operation ("cpu-ns/op"), the figure that
// matters on a loaded or CPU-bound machine (wall time is not).
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

var benchArgs = map[string]any{"text": "hello"}

func BenchmarkCallToolset(b *testing.B) {
	fx := testserver.New(testserver.Config{Tools: []string{"echo"}})
	ts, err := Open(context.Background(), []Server{inMemory("mem", fx.Server())}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ts.Close()
	ctx := context.Background()
	if err := ts.Connect(ctx); err != nil {
		b.Fatal(err)
	}
	info := CallInfo{RunID: "run", ToolCallID: "call"}
	b.ReportAllocs()
	start := cpuTime()
	defer reportCPU(b, start)
	for b.Loop() {
		if _, err := ts.Call(ctx, "mem__echo", benchArgs, info); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCallDirect(b *testing.B) {
	fx := testserver.New(testserver.Config{Tools: []string{"echo"}})
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := fx.Server().Connect(ctx, st, nil); err != nil {
		b.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	b.ReportAllocs()
	start := cpuTime()
	defer reportCPU(b, start)
	for b.Loop() {
		params := &mcp.CallToolParams{Name: "echo", Arguments: benchArgs, Meta: mcp.Meta{"idempotencyKey": "run:call"}}
		if _, err := cs.CallTool(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuild1000 measures projecting a 1,000-tool listing into the map:
// filtering, sanitizing, hashing contracts, planning disclosure, naming.
func BenchmarkBuild1000(b *testing.B) {
	ts, err := Open(context.Background(), []Server{{}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ts.Close()
	ts.conns[0].name, ts.conns[0].prefix = "big", "big"
	var listed []*mcp.Tool
	for i := range 1000 {
		listed = append(listed, &mcp.Tool{
			Name:        fmt.Sprintf("tool.%04d", i),
			Description: "A tool that does one thing carefully and reports what it did.",
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{
				"id": map[string]any{"type": "string", "description": "The id."}}, "required": []any{"id"}},
		})
	}
	results := []listing{{ok: true, tools: listed}}
	b.ReportAllocs()
	start := cpuTime()
	defer reportCPU(b, start)
	for b.Loop() {
		if cat := ts.build(results); len(cat.tools) < 1000 {
			b.Fatal(len(cat.tools))
		}
	}
}
