package loop_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/durable/loop/internal/chattest"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// The loop over a toolset: a real MCP server over streamable HTTP on
// 127.0.0.1, projected names, the idempotency key reaching the server, and
// a resume that re-sends nothing.
func TestToolsetTools(t *testing.T) {
	b := &bank{effects: map[string]int{}, keys: map[string]string{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "bank", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "charge", Description: "Charge a card."}, b.handler("charge"))
	httpSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer httpSrv.Close()

	ts, err := toolset.Open(bg, []toolset.Server{{Config: plugin.ServerConfig{
		Name: "bank", Type: plugin.TransportStreamableHTTP, URL: httpSrv.URL,
	}}}, &toolset.Options{AllowedHosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	tools, err := loop.ToolsetTools(bg, ts)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 1 || tools[0].Name != "bank__charge" || tools[0].Server != "bank" || tools[0].RemoteName != "charge" {
		t.Fatalf("tools: %+v", tools)
	}

	s := openStore(t, "sqlite")
	chat, model := newChat(t, chattest.ByTurn(
		chattest.Reply{Calls: []chattest.Call{{ID: "k1", Name: "bank__charge", Args: `{"amount":4}`}}},
	))
	opts := loop.Options{RunID: "run-ts", Journal: newJournal(t, s), Model: model, Tools: tools, Prompt: "charge"}
	res := run(t, opts)
	if m := toolMessage(t, res, "k1"); !strings.Contains(m.Content, "key=run-ts:k1") {
		t.Fatalf("tool message: %+v", m)
	}
	if !strings.Contains(chat.Log()[0].Tools[0].Function.Description, "Charge a card.") {
		t.Fatalf("tool def: %+v", chat.Log()[0].Tools)
	}
	opts.Journal = newJournal(t, s.reopen(t))
	run(t, opts)
	if b.count("charge") != 1 || chat.Requests() != 2 {
		t.Fatalf("charges %d, requests %d", b.count("charge"), chat.Requests())
	}
}
