package durable

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestResultOutcome: the outcome classify records for a result is byte
// for byte what encoding it twice wrote, and replays as the same result.
func TestResultOutcome(t *testing.T) {
	for _, res := range []*mcp.CallToolResult{
		{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}},
		{Content: []mcp.Content{&mcp.TextContent{Text: "<b>a & b</b> \u2028 é \"q\" \\"}}, IsError: true},
		{Content: []mcp.Content{}, StructuredContent: map[string]any{"n": 1.5, "html": "<x>", "list": []any{"a", nil, true}}},
		{Meta: mcp.Meta{"k": "v"}, Content: []mcp.Content{&mcp.TextContent{Text: "m"}}},
	} {
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		_, got, known := classify(answer{res: res}, nil)
		if want := mustJSON(outcome{Result: b}); !known || !bytes.Equal(got, want) {
			t.Errorf("outcome\n%s\nwant\n%s", got, want)
		}
		r, err := replay(got)
		if err != nil {
			t.Fatal(err)
		}
		if again, _ := json.Marshal(r.result); !bytes.Equal(again, b) {
			t.Errorf("replayed %s, want %s", again, b)
		}
	}
}
