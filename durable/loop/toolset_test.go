package loop_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/chattest"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/refusal"
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

// ToolsetCall as a durable.Tool: the key reaches the server in _meta and a
// repeat is replayed; what the toolset refuses before sending (an unknown
// tool, arguments that are not an object) is a recorded failure, replayed
// as such and never in doubt.
func TestToolsetCall(t *testing.T) {
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
	j := newJournal(t, openStore(t, "sqlite"))

	charge := durable.Tool{Name: "bank__charge", Server: "bank", Call: loop.ToolsetCall(ts, "bank__charge")}
	info := durable.CallInfo{RunID: "run9", ToolCallID: "call3", Owner: "bob"}
	args := json.RawMessage(`{"amount":12}`)
	res, replayed, err := j.Invoke(bg, charge, info, args)
	if err != nil || replayed || res.IsError {
		t.Fatalf("first: %+v %v %v", res, replayed, err)
	}
	if b.count("charge") != 1 || b.keys["run9:call3"] != "charge" {
		t.Fatalf("effects %d, keys %v", b.count("charge"), b.keys)
	}
	res2, replayed, err := j.Invoke(bg, charge, info, args)
	if err != nil || !replayed || b.count("charge") != 1 || fmt.Sprint(res2.Content[0]) != fmt.Sprint(res.Content[0]) {
		t.Fatalf("repeat: replayed %v, %v, effects %d", replayed, err, b.count("charge"))
	}

	for name, c := range map[string]struct {
		tool durable.Tool
		args json.RawMessage
	}{
		"unknown tool":  {durable.Tool{Name: "bank__nope", Server: "bank", Call: loop.ToolsetCall(ts, "bank__nope")}, nil},
		"not an object": {charge, json.RawMessage(`[1]`)},
	} {
		ci := durable.CallInfo{RunID: "run9", ToolCallID: name}
		_, _, err1 := j.Invoke(bg, c.tool, ci, c.args)
		_, replayed, err2 := j.Invoke(bg, c.tool, ci, c.args)
		if err1 == nil || !replayed || err2 == nil || err1.Error() != err2.Error() {
			t.Fatalf("%s: %v / %v (replayed %v)", name, err1, err2, replayed)
		}
		if r, ok := refusal.As(err2); ok && r.Code == refusal.InDoubt {
			t.Fatalf("%s: in doubt: %v", name, err2)
		}
	}
	if b.count("charge") != 1 {
		t.Fatalf("a refused call reached the server: %d effects", b.count("charge"))
	}
}
