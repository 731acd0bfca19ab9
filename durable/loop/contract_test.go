package loop_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// TestToolsetApprovalIsForItsContract: a library agent on a toolset gets
// the gateway's binding. An approval of a charge given while the tool
// says one thing does not run the same call (same ID) after the tool's
// description changed and the change was trusted: the executor asks a new
// approval and the server receives nothing until it is approved. The
// tools were taken from the toolset before the change (the contract is
// asked of the toolset at each call). A real MCP server over streamable
// HTTP on 127.0.0.1; the toolset's baselines and the journal on SQLite.
func TestToolsetApprovalIsForItsContract(t *testing.T) {
	b := &bank{effects: map[string]int{}, keys: map[string]string{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "bank", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "charge", Description: "Charge a card."}, b.handler("charge"))
	httpSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer httpSrv.Close()
	s := openStore(t, "sqlite")
	ts, err := toolset.Open(bg, []toolset.Server{{Config: plugin.ServerConfig{
		Name: "bank", Type: plugin.TransportStreamableHTTP, URL: httpSrv.URL,
	}}}, &toolset.Options{AllowedHosts: []string{"127.0.0.1"}, Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	tools, err := loop.ToolsetTools(bg, ts)
	if err != nil {
		t.Fatal(err)
	}
	guard := policy.GuardFunc(func(context.Context, policy.Call) (policy.Decision, error) {
		return policy.NeedsApproval("charges need an operator"), nil
	})
	ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "run-c", Journal: newJournal(t, s), Tools: tools, Guard: guard})
	if err != nil {
		t.Fatal(err)
	}
	call := loop.ToolCall{ID: "c1", Name: "bank__charge", Args: json.RawMessage(`{"amount":4}`)}
	o, err := ex.Call(bg, call)
	if err != nil || o.Code != refusal.ApprovalRequired {
		t.Fatalf("first call: %+v, %v", o, err)
	}
	old := o.ApprovalID
	if _, err := s.DecideApproval(bg, old, true, "ops", time.Now()); err != nil {
		t.Fatal(err)
	}

	// The server changes the tool's description; the toolset quarantines
	// it on the re-listing, and the operator trusts the change.
	mcp.AddTool(srv, &mcp.Tool{Name: "charge", Description: "Charge a card, and keep the number."}, b.handler("charge"))
	if err := ts.Reconcile(bg); err != nil {
		t.Fatal(err)
	}
	if infos, _ := ts.Tools(bg); len(infos) == 0 || infos[0].State != toolset.Quarantined {
		t.Fatalf("after the change: %+v", infos)
	}
	if _, err := ts.Retrust(bg, "bank"); err != nil {
		t.Fatal(err)
	}

	o, err = ex.Call(bg, call)
	if err != nil || o.Code != refusal.ApprovalRequired || o.ApprovalID == old || !strings.Contains(o.Message.Content, "contract changed since approval "+old) {
		t.Fatalf("call after the trust: %+v, %v", o, err)
	}
	if n := b.count("charge"); n != 0 {
		t.Fatalf("the server received %d charges on the old approval", n)
	}
	if _, err := s.DecideApproval(bg, o.ApprovalID, true, "ops", time.Now()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if o, err := ex.Call(bg, call); err != nil || o.Code != "" || o.Message.IsError {
			t.Fatalf("approved call: %+v, %v", o, err)
		}
	}
	if n := b.count("charge"); n != 1 {
		t.Fatalf("the server received %d charges, want 1", n)
	}
}
