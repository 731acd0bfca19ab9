package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMultiRoundTripUpstream: an upstream at 2026-07-28 asks for input the
// stateless way (SEP-2322: the tool answers with inputRequests and is
// called again with the responses). For a 2025-11-25 caller the gateway
// fulfills them through the caller's session: a stateful caller that
// advertised elicitation is asked, and its answer reaches the upstream; a
// caller that did not is refused with an error that says why, and the
// tool never completes; so is a 2026-07-28 caller that did not announce
// elicitation (TestMultiRoundTripAcrossReplicas has one that did).
func TestMultiRoundTripUpstream(t *testing.T) {
	var rounds atomic.Int64
	s := mcp.NewServer(&mcp.Implementation{Name: "mrtr", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "confirm", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		rounds.Add(1)
		if r, ok := req.Params.InputResponses["q"].(*mcp.ElicitResult); ok {
			if req.Params.RequestState != "state-1" {
				return nil, fmt.Errorf("request state %q", req.Params.RequestState)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "action=" + r.Action + " answer=" + fmt.Sprint(r.Content["answer"])}}}, nil
		}
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "Proceed?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}}}},
			RequestState: "state-1",
		}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(up.Close)

	dir := t.TempDir()
	yml := fmt.Sprintf("listen: 127.0.0.1:0\nhttp: {bothRevisions: true}\nstore: sqlite:%s\nupstreamProtocol: auto\nservers:\n  up:\n    type: streamable-http\n    url: %s/mcp\n    prefix: \"\"\n",
		filepath.Join(dir, "gh.db"), up.URL)
	_, url := serveGateway(t, yml, dir)

	ctx := context.Background()
	var asked atomic.Value
	c := mcp.NewClient(&mcp.Implementation{Name: "asker", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Store(req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes"}}, nil
		},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, statefulSession())
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "confirm", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "action=accept answer=yes" {
		t.Fatalf("result: %+v", res)
	}
	if asked.Load() != "Proceed?" {
		t.Fatalf("the caller was asked %v", asked.Load())
	}
	if n := rounds.Load(); n != 2 {
		t.Fatalf("the tool ran %d rounds, want 2", n)
	}

	// A caller that cannot answer: nobody is asked on its behalf.
	plain := mcp.NewClient(&mcp.Implementation{Name: "plain", Version: "1"}, nil)
	ps, err := plain.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, statefulSession())
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	res, err = ps.CallTool(ctx, &mcp.CallToolParams{Name: "confirm", Arguments: map[string]any{}})
	msg := fmt.Sprint(err)
	if res != nil {
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				msg += " " + tc.Text
			}
		}
	}
	if !strings.Contains(msg, "the server asked for input (elicitation) that the gateway forwards only to a caller at 2026-07-28, or to a stateful caller that announced the capability") {
		t.Fatalf("a caller without elicitation: %v %+v", err, res)
	}
	if strings.Contains(msg, "action=") {
		t.Fatalf("the tool completed for a caller that could not answer: %s", msg)
	}
	if n := rounds.Load(); n != 3 {
		t.Fatalf("the tool ran %d rounds, want 3", n)
	}

	// A caller at 2026-07-28 that did not announce elicitation in its
	// request: the input request is not passed to it.
	ns, err := plain.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	if _, err = ns.CallTool(ctx, &mcp.CallToolParams{Name: "confirm", Arguments: map[string]any{}}); err == nil ||
		!strings.Contains(err.Error(), "the server asked for input (elicitation) that the calling client did not announce in its request's capabilities") {
		t.Fatalf("a 2026-07-28 caller without elicitation: %v", err)
	}
	if n := rounds.Load(); n != 4 {
		t.Fatalf("the tool ran %d rounds, want 4", n)
	}
}
