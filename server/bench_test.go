package server

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The server layer's own cost per call: the same echo tool over the same
// in-memory transport, bare go-sdk against package server with identity,
// authorization, a rate limit and (with a fresh key per call) dedup on the
// memory journal. Compare ns/op:
//
//	go test -run '^$' -bench . -benchmem ./server

type echoIn struct {
	Text string `json:"text"`
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, map[string]string, error) {
	return nil, map[string]string{"text": in.Text}, nil
}

func benchCalls(b *testing.B, serve func(context.Context, mcp.Transport) error, withKey bool) {
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"text": "hello"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		p := &mcp.CallToolParams{Name: "echo", Arguments: args}
		if withKey {
			p.Meta = mcp.Meta{"idempotencyKey": strconv.Itoa(i)}
		}
		res, err := cs.CallTool(ctx, p)
		if err != nil || res.IsError {
			b.Fatalf("%v %+v", err, res)
		}
	}
	b.StopTimer()
	cs.Close()
	cancel()
	<-done
}

func BenchmarkCallBareSDK(b *testing.B) {
	s := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, echo)
	benchCalls(b, s.Run, false)
}

func benchServer(b *testing.B) *Server {
	j, _ := memJournal(b)
	s, err := New(Options{
		Tools:     map[string]Tool{"echo": SDKTool(&mcp.Tool{}, echo)},
		Identify:  func(context.Context, RequestInfo) (Subject, error) { return "bench", nil },
		AllowTool: func(name string, subject Subject) bool { return subject == "bench" },
		RateLimit: &RateLimit{MaxCalls: 1 << 30, Window: time.Hour},
		Journal:   j,
		Logger:    quietLogger(),
	})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkCallProtected: identity, authorization and rate limit; the call
// carries no key, so it is not journaled.
func BenchmarkCallProtected(b *testing.B) {
	benchCalls(b, benchServer(b).Serve, false)
}

// BenchmarkCallProtectedDedup: everything, and each call is a new unit of
// work claimed and completed in the memory journal.
func BenchmarkCallProtectedDedup(b *testing.B) {
	benchCalls(b, benchServer(b).Serve, true)
}

// BenchmarkCallBareSDKWithKey is the bare baseline carrying the same _meta
// as BenchmarkCallProtectedDedup, so the difference is the server's work.
func BenchmarkCallBareSDKWithKey(b *testing.B) {
	s := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, echo)
	benchCalls(b, s.Run, true)
}

// The layer alone, without the transport's noise: the middleware around a
// next handler that answers at once, against calling that handler
// directly.
func benchMiddleware(b *testing.B, wrap bool, withKey bool) {
	s := benchServer(b)
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}
	next := func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) { return res, nil }
	h := mcp.MethodHandler(next)
	if wrap {
		h = s.middleware(false)(next)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		p := &mcp.CallToolParamsRaw{Name: "echo", Arguments: []byte(`{"text":"hello"}`)}
		if withKey {
			p.Meta = mcp.Meta{"idempotencyKey": strconv.Itoa(i)}
		}
		r, err := h(ctx, methodCallTool, &mcp.CallToolRequest{Params: p})
		if err != nil || r.(*mcp.CallToolResult).IsError {
			b.Fatalf("%v %+v", err, r)
		}
	}
}

func BenchmarkLayerNone(b *testing.B)                { benchMiddleware(b, false, false) }
func BenchmarkLayerProtected(b *testing.B)           { benchMiddleware(b, true, false) }
func BenchmarkLayerProtectedDedup(b *testing.B)      { benchMiddleware(b, true, true) }
func BenchmarkLayerNoneWithKeyBaseline(b *testing.B) { benchMiddleware(b, false, true) }
