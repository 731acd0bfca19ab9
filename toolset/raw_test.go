package toolset

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/plugin"
)

// rawText calls name with CallRaw and returns the text of its result.
func rawText(t *testing.T, ts *Toolset, name, args string) string {
	t.Helper()
	b, err := ts.CallRaw(ctxT(t), name, json.RawMessage(args), nil)
	if err != nil {
		t.Fatalf("CallRaw %s: %v", name, err)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("result %s: %v", b, err)
	}
	return resultText(t, &res)
}

func TestCallRawHTTP(t *testing.T) {
	fx := startHTTP(t, "127.0.0.1:0", "-tools", "echo")
	ts := open(t, []Server{remote("fx", fx.url(""), plugin.TransportStreamableHTTP)}, nil)
	if got := call(t, ts, "fx__echo", map[string]any{"text": "1"}); got != "1" {
		t.Fatalf("echo %q", got)
	}
	if !ts.RawReady("fx__echo") {
		t.Fatal("RawReady false on a live streamable HTTP session")
	}
	if got := rawText(t, ts, "fx__echo", `{"text":"raw"}`); got != "raw" {
		t.Fatalf("raw echo %q", got)
	}
}
