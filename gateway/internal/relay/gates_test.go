package relay

//lint:file-ignore SA1019 the server here lists tools by the sampling, elicitation and roots capabilities (deprecated by SEP-2577, still in 2025-11-25).

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// TestClassify: a server that lists tools by the client's capabilities
// (s for sampling, both for sampling and roots, either for sampling or
// elicitation, plain for everyone) is listed in full on the shared session
// (which announces what the relay routes), and Classify learns what each
// tool needs from four short sessions (one announcing nothing, one per
// capability left out): s needs sampling, both sampling and roots, either
// (listed whichever one is left out) all three, plain nothing. Allows
// answers by what a caller announced. Classify with the same served tools
// opens no session; a server whose listing lacks nothing costs one.
func TestClassify(t *testing.T) {
	var inits atomic.Int64
	s := mcp.NewServer(&mcp.Implementation{Name: "g", Version: "1"}, nil)
	for _, name := range []string{"s", "both", "either", "plain"} {
		mcp.AddTool(s, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	}
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "initialize" {
				inits.Add(1)
			}
			res, err := next(ctx, method, req)
			lr, ok := res.(*mcp.ListToolsResult)
			if method != "tools/list" || !ok {
				return res, err
			}
			has := NeedsOf(req.GetSession().(*mcp.ServerSession).InitializeParams().Capabilities)
			cp := *lr
			cp.Tools = slices.DeleteFunc(slices.Clone(lr.Tools), func(t *mcp.Tool) bool {
				switch t.Name {
				case "s":
					return has&NeedsSampling == 0
				case "both":
					return has&(NeedsSampling|NeedsRoots) != NeedsSampling|NeedsRoots
				case "either":
					return has&(NeedsSampling|NeedsElicitation) == 0
				}
				return false
			})
			return &cp, nil
		}
	})
	plainSrv := mcp.NewServer(&mcp.Implementation{Name: "p", Version: "1"}, nil)
	mcp.AddTool(plainSrv, &mcp.Tool{Name: "x"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	var plainInits atomic.Int64
	plainSrv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "initialize" {
				plainInits.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	r := openRelay(t, []toolset.Server{remote("g", serveHTTP(t, s)), remote("p", serveHTTP(t, plainSrv))}, nil, nil)
	ctx := ctxT(t)
	tools, err := r.Toolset().Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ti := range tools {
		names = append(names, ti.Name)
	}
	slices.Sort(names)
	if want := []string{"g__both", "g__either", "g__plain", "g__s", "p__x"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v (listed on a session announcing what the relay routes)", names, want)
	}
	before, plainBefore := inits.Load(), plainInits.Load()
	r.Classify(ctx, tools)
	if got := inits.Load() - before; got != 4 {
		t.Errorf("Classify opened %d sessions to g, want 4", got)
	}
	if got := plainInits.Load() - plainBefore; got != 1 {
		t.Errorf("Classify opened %d sessions to p, want 1", got)
	}
	all := NeedsSampling | NeedsElicitation | NeedsRoots
	for tool, want := range map[string]Needs{"s": NeedsSampling, "both": NeedsSampling | NeedsRoots, "either": all, "plain": 0} {
		if got := r.Needs("g", tool); got != want {
			t.Errorf("Needs(g, %s) = %b, want %b", tool, got, want)
		}
	}
	sampling := &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}
	samplingRoots := &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}, RootsV2: &mcp.RootCapabilities{}}
	for _, c := range []struct {
		tool string
		caps *mcp.ClientCapabilities
		want bool
	}{
		{"s", nil, false}, {"s", sampling, true}, {"both", sampling, false}, {"both", samplingRoots, true},
		{"either", samplingRoots, false}, {"either", RoutableCapabilities(), true}, {"plain", nil, true},
	} {
		if got := r.Allows("g", c.tool, c.caps); got != c.want {
			t.Errorf("Allows(g, %s, %v) = %v, want %v", c.tool, NeedsOf(c.caps), got, c.want)
		}
	}
	before, plainBefore = inits.Load(), plainInits.Load()
	r.Classify(ctx, tools)
	if got := inits.Load() + plainInits.Load() - before - plainBefore; got != 0 {
		t.Errorf("Classify with the same tools opened %d sessions, want 0", got)
	}
}
