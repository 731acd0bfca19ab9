package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
)

// An upstream that elicits of its own accord, after the call that started
// it was answered, through the replica that served the call: the caller's
// standalone stream is held by another replica, which asks the caller, and
// the caller's answer reaches the upstream. Before, the replica without
// the stream could not write the request and the upstream got an error.
func TestUpstreamElicitsOutsideACallAcrossReplicas(t *testing.T) {
	dsn := pgtest.Schema(t, "askrep", "an upstream's request outside a call, across gateway replicas")
	answers := make(chan string, 1)
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "later", Description: "asks its caller after answering"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			time.Sleep(50 * time.Millisecond) // after the call's answer
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "later?", RequestedSchema: map[string]any{"type": "object",
				"properties": map[string]any{"answer": map[string]any{"type": "string"}}}})
			if err != nil {
				answers <- "error: " + err.Error()
				return
			}
			answers <- res.Action + " " + res.Content["answer"].(string)
		}()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "started"}}}, nil, nil
	})
	ups := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ups.Close)
	p := newRRProxy(t, subsReplica(t, dsn, "replica-a", ups.URL+"/mcp"), subsReplica(t, dsn, "replica-b", ups.URL+"/mcp"))

	alice := sessionWith(t, p.url(), "alice-token", &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "re:" + req.Params.Message}}, nil
		},
	})
	holder := p.holder(t, alice.ID(), nil)
	if served := p.avoid(t, alice, holder); served == holder {
		t.Fatal("the call would go to the stream's replica")
	}
	res, err := alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "later"})
	if err != nil || res.IsError {
		t.Fatalf("later: %v %+v", err, res)
	}
	select {
	case got := <-answers:
		if got != "accept re:later?" {
			t.Fatalf("the upstream's elicitation got %q", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the upstream's elicitation was not answered")
	}
}
