package wire

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const testServerInfo = `{"name":"gatehouse","version":"dev"}`

// sdkLatest writes an upstream's result as the go-sdk's server writes it
// to a request at 2026-07-28: decoded, then encoded with resultType and
// serverInfo in its _meta. ok=false when it does not decode.
func sdkLatest(t *testing.T, raw []byte) ([]byte, bool) {
	var res mcp.CallToolResult
	if json.Unmarshal(raw, &res) != nil {
		return nil, false
	}
	var out mcp.CallToolResult
	if err := json.Unmarshal([]byte(`{"resultType":"complete"}`), &out); err != nil {
		t.Fatal(err)
	}
	out.Content, out.StructuredContent, out.IsError = res.Content, res.StructuredContent, res.IsError
	if out.Content == nil {
		out.Content = []mcp.Content{}
	}
	out.Meta = mcp.Meta{mcp.MetaKeyServerInfo: json.RawMessage(testServerInfo)}
	for k, v := range res.Meta {
		out.Meta[k] = v
	}
	b, err := json.Marshal(&out)
	if err != nil {
		return nil, false
	}
	return b, true
}

// TestLatestResult: results a go-sdk server writes are written as the
// go-sdk writes them at 2026-07-28; anything it might write differently is
// refused (decoded instead).
func TestLatestResult(t *testing.T) {
	for _, res := range []*mcp.CallToolResult{
		{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}},
		{Content: []mcp.Content{&mcp.TextContent{Text: "h\u00e9 \"x\" <&> \n\t\\ \u2028"}, &mcp.TextContent{}}, IsError: true},
		{Content: []mcp.Content{}},
	} {
		raw, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := LatestResult(raw, []byte(testServerInfo))
		want, _ := sdkLatest(t, raw)
		if !ok || !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %v %s\nwant %s", raw, ok, got, want)
		}
	}
	for name, raw := range map[string]string{
		"no content":          `{}`,
		"content null":        `{"content":null}`,
		"isError false":       `{"content":[],"isError":false}`,
		"isError first":       `{"isError":true,"content":[]}`,
		"structured":          `{"content":[],"structuredContent":{"b":1,"a":2}}`,
		"_meta":               `{"content":[],"_meta":{"x":1}}`,
		"spaces":              `{"content": []}`,
		"image":               `{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`,
		"text then type":      `{"content":[{"text":"x","type":"text"}]}`,
		"unknown field":       `{"content":[{"type":"text","text":"x","extra":1}]}`,
		"item _meta":          `{"content":[{"type":"text","text":"x","_meta":{}}]}`,
		"raw <":               `{"content":[{"type":"text","text":"<"}]}`,
		"escaped e acute":     `{"content":[{"type":"text","text":"\u00e9"}]}`,
		"escaped slash":       `{"content":[{"type":"text","text":"\/"}]}`,
		"escaped backspace":   `{"content":[{"type":"text","text":"\b"}]}`,
		"raw line separator":  "{\"content\":[{\"type\":\"text\",\"text\":\"\u2028\"}]}",
		"invalid UTF-8":       "{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}",
		"unterminated":        `{"content":[{"type":"text","text":"x`,
		"trailing comma":      `{"content":[{"type":"text","text":"x"},]}`,
		"trailing bytes":      `{"content":[]} `,
		"another member":      `{"content":[],"resultType":"input_required"}`,
		"input requests":      `{"inputRequests":{"a":{}},"content":[]}`,
		"short escape":        `{"content":[{"type":"text","text":"\u00"}]}`,
		"not an object":       `[]`,
		"empty":               ``,
		"content not array":   `{"content":{}}`,
		"two isError":         `{"content":[],"isError":true,"isError":true}`,
		"replacement char":    "{\"content\":[{\"type\":\"text\",\"text\":\"\ufffd\"}]}",
		"control char raw":    "{\"content\":[{\"type\":\"text\",\"text\":\"\x01\"}]}",
		"item not an object":  `{"content":["x"]}`,
		"missing item close":  `{"content":[{"type":"text","text":"x"]}`,
		"escaped quote close": `{"content":[{"type":"text","text":"x\"}]}`,
	} {
		if got, ok := LatestResult([]byte(raw), []byte(testServerInfo)); ok {
			t.Errorf("%s: accepted %q as %s", name, raw, got)
		}
	}
}

// FuzzLatestResult checks that whatever LatestResult accepts, the go-sdk
// writes byte for byte the same (decoding the result and encoding it at
// 2026-07-28).
func FuzzLatestResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[{"type":"text","text":"a\u003cb\n"},{"type":"text","text":""}],"isError":true}`,
		`{"content":[]}`,
		`{"content":[{"type":"text","text":"\u00e9"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := LatestResult(raw, []byte(testServerInfo))
		if !ok {
			return
		}
		want, sdkOK := sdkLatest(t, raw)
		if !sdkOK {
			t.Fatalf("accepted, but the go-sdk does not decode it: %q", raw)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %s\nwant %s", raw, got, want)
		}
	})
}
