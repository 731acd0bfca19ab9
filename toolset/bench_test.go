package toolset

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/cputime"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/testserver"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
	"github.com/gatehouse-dev/gatehouse/trust"
)

// inMemory returns a Server whose every connection is a fresh in-memory
// session of srv.
func inMemory(name string, srv *mcp.Server) Server {
	s := Server{}
	s.Config.Name = name
	s.Transport = func() (mcp.Transport, error) {
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
	start := cputime.Start(b)
	defer cputime.Report(b, start)
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
	start := cputime.Start(b)
	defer cputime.Report(b, start)
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
	p := trust.Listing{Tools: listed}
	j, err := trust.NewLedger(nil, "bench", nil).Record(b.Context(), trust.Server{ID: "config:big", Name: "big"}, p, trust.Fingerprint("big", p))
	if err != nil {
		b.Fatal(err)
	}
	results := []listing{{ok: true, tools: j.Tools, fp: j.Prints, v: j.Verdict}}
	b.ReportAllocs()
	start := cputime.Start(b)
	defer cputime.Report(b, start)
	for b.Loop() {
		if cat := ts.build(results, nil); len(cat.tools) < 1000 {
			b.Fatal(len(cat.tools))
		}
	}
}

// The wake benchmarks compare getting the tool map of a 200-tool HTTP
// server back from SQLite (no round trip) with a cold connect + list of the
// same server. Run with -bench 'Wake200|Cold200'.
func benchServer200(b *testing.B) (Server, string) {
	fx := startHTTP(b, "127.0.0.1:0", "-generate", "200")
	srv := remote("big", fx.URL(""), plugin.TransportStreamableHTTP)
	db := filepath.Join(b.TempDir(), "g.db")
	st, err := sqlite.Open(context.Background(), db, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ts, err := Open(context.Background(), []Server{srv}, &Options{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	if list, err := ts.Tools(context.Background()); err != nil || len(list) < 200 {
		b.Fatalf("%d tools, %v", len(list), err)
	}
	ts.Close()
	return srv, db
}

func BenchmarkCold200(b *testing.B) {
	srv, _ := benchServer200(b)
	ctx := context.Background()
	for b.Loop() {
		ts, err := Open(ctx, []Server{srv}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if list, err := ts.Tools(ctx); err != nil || len(list) < 200 {
			b.Fatalf("%d tools, %v", len(list), err)
		}
		ts.Close()
	}
}

func BenchmarkWake200(b *testing.B) {
	srv, db := benchServer200(b)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, db, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	for b.Loop() {
		ts, err := Open(ctx, []Server{srv}, &Options{Store: st, Wake: true, DeferReconcile: true})
		if err != nil {
			b.Fatal(err)
		}
		if list, err := ts.Tools(ctx); err != nil || len(list) < 200 {
			b.Fatalf("%d tools, %v", len(list), err)
		}
		ts.Close()
	}
}

// BenchmarkWake200OpenStore includes opening the SQLite file, as a fresh
// serverless worker would.
func BenchmarkWake200OpenStore(b *testing.B) {
	srv, db := benchServer200(b)
	ctx := context.Background()
	for b.Loop() {
		st, err := sqlite.Open(ctx, db, nil)
		if err != nil {
			b.Fatal(err)
		}
		ts, err := Open(ctx, []Server{srv}, &Options{Store: st, Wake: true, DeferReconcile: true})
		if err != nil {
			b.Fatal(err)
		}
		if list, err := ts.Tools(ctx); err != nil || len(list) < 200 {
			b.Fatalf("%d tools, %v", len(list), err)
		}
		ts.Close()
		st.Close()
	}
}
