package gateway

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/cputime"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
)

// BenchmarkGatewayKeyedCall is BenchmarkGatewayCall with a unique
// _meta.idempotencyKey on every call (a journal claim and completion per
// call, SQLite NORMAL), from 1 and 8 concurrent sessions, with the audit
// trail on (the default: an entry per call) and off.
func BenchmarkGatewayKeyedCall(b *testing.B) {
	for _, audited := range []bool{false, true} {
		for _, sessions := range []int{1, 8} {
			b.Run(fmt.Sprintf("audit=%v/sessions=%d", audited, sessions), func(b *testing.B) {
				benchKeyedCall(b, sqliteBenchStore(b), audited, sessions, true)
			})
		}
	}
}

// BenchmarkGatewayUnkeyedCall is BenchmarkGatewayKeyedCall's setup with
// calls that carry no idempotency key: what the keyed call is compared
// with, in the same run (audit on), and what the audit trail adds to a
// plain call (its allocations are exact; audit off is the baseline).
func BenchmarkGatewayUnkeyedCall(b *testing.B) {
	for _, audited := range []bool{false, true} {
		for _, sessions := range []int{1, 8} {
			b.Run(fmt.Sprintf("audit=%v/sessions=%d", audited, sessions), func(b *testing.B) {
				benchKeyedCall(b, sqliteBenchStore(b), audited, sessions, false)
			})
		}
	}
}

// BenchmarkGatewayKeyedCallPostgres is BenchmarkGatewayKeyedCall (audit
// on) and its unkeyed baseline on PostgreSQL (GATEHOUSE_TEST_POSTGRES, a
// fresh schema each; skipped without it):
//
//	go test ./gateway -run '^$' -bench KeyedCallPostgres -benchtime 4000x -cpuprofile pg.prof
func BenchmarkGatewayKeyedCallPostgres(b *testing.B) {
	for _, keyed := range []bool{false, true} {
		for _, sessions := range []int{1, 8} {
			b.Run(fmt.Sprintf("keyed=%v/sessions=%d", keyed, sessions), func(b *testing.B) {
				benchKeyedCall(b, pgtest.Schema(b, "benchkeyed", "the keyed call on PostgreSQL"), true, sessions, keyed)
			})
		}
	}
}

// sqliteBenchStore is a fresh SQLite file's DSN.
func sqliteBenchStore(b *testing.B) string { return "sqlite:" + filepath.Join(b.TempDir(), "gh.db") }

func benchKeyedCall(b *testing.B, dsn string, audited bool, sessions int, keyed bool) {
	up := benchEcho(b)
	dir := b.TempDir()
	yml := fmt.Sprintf("listen: 127.0.0.1:0\nstore: %q\naudit: {enabled: %v}\nservers:\n  echo:\n    type: streamable-http\n    url: %s/mcp\n    prefix: \"\"\n",
		dsn, audited, up)
	_, url := serveGateway(b, yml, dir)
	ctx := context.Background()
	css := make(chan *mcp.ClientSession, sessions)
	for range sessions {
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, statefulSession())
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		css <- cs
	}
	text := strings.Repeat("x", 64)
	var n atomic.Int64
	b.ReportAllocs()
	defer reportCPU(b)()
	b.SetParallelism((sessions + 1) / 2) // GOMAXPROCS 2 on the bench machines
	b.RunParallel(func(pb *testing.PB) {
		cs := <-css
		defer func() { css <- cs }()
		for pb.Next() {
			p := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}}
			if keyed {
				p.Meta = mcp.Meta{"idempotencyKey": fmt.Sprintf("k-%d", n.Add(1))}
			}
			res, err := cs.CallTool(ctx, p)
			if err != nil {
				b.Fatal(err)
			}
			if res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != text {
				b.Fatalf("wrong answer: %+v", res)
			}
		}
	})
}

// reportCPU reports the process's CPU time (user and system, every
// goroutine: the gateway, the upstream and the clients of the benchmark)
// per op as cpu-ns/op, from now until the returned function runs: on a
// machine shared with other work, a steadier figure than the wall time.
func reportCPU(b *testing.B) func() {
	start := cputime.Start(b)
	b.ResetTimer()
	return func() {
		b.StopTimer()
		cputime.Report(b, start)
	}
}
