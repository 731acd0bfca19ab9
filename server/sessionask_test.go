package server

//lint:file-ignore SA1019 roots (deprecated by SEP-2577, still in 2025-11-25) are among the requests a replica sends its caller.

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A replica that does not hold the caller's standalone stream sends the
// caller a request outside any request of the caller's (as a gateway does
// for an upstream that elicits or lists roots of its own accord): the
// holder of the stream asks it, the caller's answer comes back to the
// replica that asked, and a refusal comes back as the caller's error.
// Before, the request failed at once ("write to closed stream").
func TestRequestOutsideACallReachesTheStreamsReplica(t *testing.T) {
	c := newPGSubsCluster(t, 2)
	var elicited atomic.Int64
	cl := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicited.Add(1)
			if req.Params.Message == "refuse" {
				return nil, &jsonrpc.Error{Code: 4242, Message: "no, thanks"}
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "re:" + req.Params.Message}}, nil
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "local", Role: "assistant", Content: &mcp.TextContent{Text: "sampled " + req.Params.SystemPrompt}}, nil
		},
	})
	cl.AddRoots(&mcp.Root{URI: "file:///work", Name: "work"})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cs, err := cl.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: c.proxy.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token: "tok-alice", base: tr}, Timeout: 0}, MaxRetries: 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	holder := c.holder(t, cs.ID())
	var other *replica
	for _, r := range c.replicas {
		if r != holder {
			other = r
		}
	}
	// The other replica serves the session too (a copy rebuilt there).
	for other.srv.shared.Load().lookup(cs.ID()) == nil {
		if err := cs.Ping(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
	ss := other.srv.shared.Load().lookup(cs.ID()).ss
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	res, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: "outside", RequestedSchema: map[string]any{"type": "object",
		"properties": map[string]any{"answer": map[string]any{"type": "string"}}}})
	if err != nil {
		t.Fatalf("an elicitation outside a call, from the replica without the stream: %v", err)
	}
	if res.Action != "accept" || res.Content["answer"] != "re:outside" {
		t.Fatalf("the answer: %+v", res)
	}
	roots, err := ss.ListRoots(ctx, nil)
	if err != nil || len(roots.Roots) != 1 || roots.Roots[0].URI != "file:///work" {
		t.Fatalf("roots outside a call: %+v, %v", roots, err)
	}
	msg, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{SystemPrompt: "aloud", MaxTokens: 10,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
	if err != nil || msg.Model != "local" || msg.Content.(*mcp.TextContent).Text != "sampled aloud" {
		t.Fatalf("sampling outside a call: %+v, %v", msg, err)
	}
	_, err = ss.Elicit(ctx, &mcp.ElicitParams{Message: "refuse", RequestedSchema: map[string]any{"type": "object"}})
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) || wire.Code != 4242 || !strings.Contains(wire.Message, "no, thanks") {
		t.Fatalf("a refusal: %v, want the caller's error 4242", err)
	}
	if n := elicited.Load(); n != 2 {
		t.Fatalf("the caller was asked %d times, want 2 (each request once)", n)
	}
	if n := other.srv.shared.Load().asked.Load(); n != 4 {
		t.Fatalf("%d requests passed on to the holder, want 4", n)
	}
}
