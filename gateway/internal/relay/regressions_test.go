package relay

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// Tests of bugs found while porting the relay's tests.

// TestLateRequestOfAnEndedSessionRegistersNothing: a session whose caller
// never registered state (it listed, say, but forwarded nothing) ends; a
// request of it that outlived it (a tools/call, a read in flight) must be
// served through nothing of the caller's own and register nothing, as for
// a caller that had state. release only marks callers it has state for,
// so this one registers anew and its dedicated upstream session is never
// closed.
func TestLateRequestOfAnEndedSessionRegistersNothing(t *testing.T) {
	up, upURL, opened := upstream(t)
	r, url := gateway(t, upURL, false)
	cs := dial(t, url, "2025-11-25", sampler()) // dedicated: it can be asked
	if err := cs.Ping(ctxT(t), nil); err != nil {
		t.Fatal(err)
	}
	caller := callerFor(t, r, cs)
	_ = cs.Close()
	waitFor(t, "the session to end", func() bool { return r.liveSessions() == 0 })

	// The request that outlived its session reaches the relay now.
	_, err := r.readResource(ctxT(t), caller, &mcp.ReadResourceParams{URI: "up://r"}, nil, asker{})
	var te *toolset.Error
	if !errors.As(err, &te) || te.Code != toolset.CodeConnectionFailed {
		t.Errorf("read of an ended dedicated caller: %v, want a connection_failed error", err)
	}
	if n := r.leftovers(); n != 0 {
		t.Errorf("the ended session's late request registered %d entries", n)
	}
	if n, ever := sessions(up), opened.Load(); n != 1 || ever != 1 {
		t.Errorf("upstream sessions = %d (%d opened), want only the shared one", n, ever)
	}
}

// TestCallBytesDropsEscapedReservedMetaKeys: Call says keys the protocol
// reserves (io.modelcontextprotocol/...) are dropped from MetaJSON "either
// way"; CallTool drops them however they are spelled (it decodes the
// object), CallBytes only when the key is written without escapes
// (hasReserved ignores jsonscan's escaped flag), so a key spelled
// "io.modelcontextprotocol\/..." reaches the server, which decodes it to
// the reserved key.
func TestCallBytesDropsEscapedReservedMetaKeys(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "m", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "meta", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var keys []string
		for k := range req.Params.Meta {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b, _ := json.Marshal(keys)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
	})
	r := openRelay(t, []toolset.Server{remote("m", serveHTTP(t, s))}, nil, nil)
	meta := json.RawMessage(`{"io.modelcontextprotocol\/related-task":{"taskId":"t1"},"trace":"x"}`)
	want := `["trace"]`

	tg := target(t, r, "m__meta")
	res, err := r.CallTool(ctxT(t), tg, Call{MetaJSON: meta})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != want {
		t.Fatalf("CallTool forwarded the _meta keys %s, want %s", got, want)
	}
	b, err := r.CallBytes(ctxT(t), tg, Call{MetaJSON: meta})
	if err != nil {
		t.Fatal(err)
	}
	var out mcp.CallToolResult
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, &out); got != want {
		t.Errorf("CallBytes forwarded the _meta keys %s, want %s", got, want)
	}
}
