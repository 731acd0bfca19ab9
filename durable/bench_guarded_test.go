package durable

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/cputime"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// BenchmarkGuarded measures Guarded on SQLite with an allowing guard: a
// fresh call (read, guard, claim, complete), the same with a Pure guard
// (guard, claim, complete) and a replay (read).
func BenchmarkGuarded(b *testing.B) {
	s, err := sqlite.Open(ctxT(b), filepath.Join(b.TempDir(), "j.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	j, err := NewJournal(s, &JournalOptions{Approvals: s})
	if err != nil {
		b.Fatal(err)
	}
	ctx := ctxT(b)
	allow := policy.GuardFunc(func(context.Context, policy.Call) (policy.Decision, error) { return policy.Allowed(), nil })
	ok := func(context.Context, string) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	call := func(i int) Call {
		return Call{RunID: "bench", ToolCallID: fmt.Sprint(i), Server: "s", Tool: "t", Args: []byte(`{"amount":1}`)}
	}
	b.Run("fresh", func(b *testing.B) {
		defer cputime.Report(b, cputime.Start(b))
		for i := 0; b.Loop(); i++ {
			if _, _, err := j.Guarded(ctx, call(i), allow, ok); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A Pure guard (policy.AllowAll): no read before the claim.
	b.Run("fresh-pure", func(b *testing.B) {
		defer cputime.Report(b, cputime.Start(b))
		for i := 0; b.Loop(); i++ {
			if _, _, err := j.Guarded(ctx, call(-2-i), policy.AllowAll(), ok); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("replay-pure", func(b *testing.B) {
		if _, _, err := j.Guarded(ctx, call(-1), policy.AllowAll(), ok); err != nil {
			b.Fatal(err)
		}
		defer cputime.Report(b, cputime.Start(b))
		for b.Loop() {
			if _, _, err := j.Guarded(ctx, call(-1), policy.AllowAll(), ok); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("replay", func(b *testing.B) {
		if _, _, err := j.Guarded(ctx, call(-1), allow, ok); err != nil {
			b.Fatal(err)
		}
		defer cputime.Report(b, cputime.Start(b))
		for b.Loop() {
			if _, _, err := j.Guarded(ctx, call(-1), allow, ok); err != nil {
				b.Fatal(err)
			}
		}
	})
}
