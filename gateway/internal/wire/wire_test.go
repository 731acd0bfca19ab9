package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkEnvelope decodes body the way the go-sdk's server does, with its own
// decoder. ok=false when the go-sdk would refuse the message.
func sdkEnvelope(body []byte) (*jsonrpc.Request, bool) {
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return nil, false
	}
	req, ok := msg.(*jsonrpc.Request)
	return req, ok
}

// sdkParams decodes tools/call params into the go-sdk's params type.
// ok=false when the go-sdk would refuse them (invalid params).
func sdkParams(params []byte) (*mcp.CallToolParamsRaw, bool) {
	p := new(mcp.CallToolParamsRaw)
	if err := json.Unmarshal(params, p); err != nil {
		return nil, false
	}
	return p, true
}

// FuzzParse checks that whatever ParseEnvelope and ParseCall accept, the
// go-sdk reads the same way: same method, ID, tool name, arguments and
// _meta (its keys the gateway consumes aside), and that it would accept it
// at all. The committed corpus holds the disagreements found so far: a
// _meta number beyond float64's range (the go-sdk refuses the request; the
// byte path once forwarded it).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","_meta":{"runId":"r","x":[1,{"y":null}],"io.modelcontextprotocol/z":1}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","_meta":{"idempotencyKey":"k-1","n":1e999}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","_meta":{"idempotencyKey":"order-7"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e\u0063ho"}}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"echo"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}]`,
		` {"params":{"arguments":{"a":"}"},"name":"x"},"method":"tools/call","id":-7,"jsonrpc":"2.0"} `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		method, id, params, ok := ParseEnvelope(body)
		if !ok {
			return
		}
		req, sdkOK := sdkEnvelope(body)
		if !sdkOK {
			t.Fatalf("accepted, but the go-sdk refuses it: %q", body)
		}
		if req.Method != method || !bytes.Equal(params, req.Params) {
			t.Fatalf("read differently: %q %q vs %q %q", method, params, req.Method, req.Params)
		}
		if id != nil {
			var v any
			if err := json.Unmarshal(id, &v); err != nil || !req.ID.IsValid() {
				t.Fatalf("ID %q: %v", id, err)
			}
			if got := EncodeAnswer(id, &mcp.CallToolResult{}, nil); !bytes.Contains(got, append(append([]byte(`"id":`), id...), ',')) {
				t.Fatalf("ID %q is not echoed as sent: %s", id, got)
			}
		}
		if method != "tools/call" {
			return
		}
		c, ok := ParseCall(params)
		if !ok {
			return
		}
		p, sdkOK := sdkParams(params)
		if !sdkOK {
			t.Fatalf("call accepted, but the go-sdk refuses its params: %q", params)
		}
		if p.Name != c.Name || !bytes.Equal(p.Arguments, c.Args) {
			t.Fatalf("call read differently: %q %q vs %q %q", c.Name, c.Args, p.Name, p.Arguments)
		}
		if _, has := p.Meta[MetaProgressToken]; has {
			t.Fatal("a progress token went the byte way")
		}
		if k, has := p.Meta[MetaIdempotencyKey]; has != (c.Key != "") || has && k != c.Key {
			t.Fatalf("idempotencyKey %q, the go-sdk reads %v", c.Key, k)
		}
		if run, has := p.Meta[MetaRunID]; has != (c.RunID != "") || has && run != c.RunID {
			t.Fatalf("runId %q, the go-sdk reads %v", c.RunID, run)
		}
		var fwd map[string]any
		if c.Meta != nil {
			if err := json.Unmarshal(c.Meta, &fwd); err != nil {
				t.Fatalf("forwarded _meta %q: %v", c.Meta, err)
			}
		}
		for k, v := range p.Meta {
			got, kept := fwd[k]
			drop := k == MetaRunID || k == MetaIdempotencyKey || strings.HasPrefix(k, ReservedMetaPrefix)
			if kept == drop {
				t.Fatalf("_meta key %q: kept=%v", k, kept)
			}
			if kept {
				a, _ := json.Marshal(got)
				b, _ := json.Marshal(v)
				if !bytes.Equal(a, b) {
					t.Fatalf("_meta %q forwarded as %s, the go-sdk reads %s", k, a, b)
				}
			}
		}
		if len(fwd) > len(p.Meta) {
			t.Fatalf("forwarded _meta has keys the caller's has not: %q", c.Meta)
		}
	})
}

// Each way a request can be wrong for the byte path is refused (and so
// goes to the go-sdk unchanged).
func TestParseRefusals(t *testing.T) {
	const ok = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"k":1}}}`
	if _, _, params, good := ParseEnvelope([]byte(ok)); !good {
		t.Fatal("a plain call is refused")
	} else if c, good := ParseCall(params); !good || c.Name != "echo" || string(c.Meta) != `{"k":1}` {
		t.Fatalf("plain call read as %+v %v", c, good)
	}
	for name, body := range map[string]string{
		"batch":            `[` + ok + `]`,
		"not 2.0":          `{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"echo"}}`,
		"extra member":     `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"x":1}`,
		"repeated id":      `{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"echo"}}`,
		"escaped key":      `{"jsonrpc":"2.0","\u0069d":1,"method":"tools/call","params":{"name":"echo"}}`,
		"fraction id":      `{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"echo"}}`,
		"long id":          `{"jsonrpc":"2.0","id":1234567890123456,"method":"tools/call","params":{"name":"echo"}}`,
		"negative zero id": `{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"name":"echo"}}`,
		"params array":     `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}`,
		"another method":   `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
		"invalid JSON":     `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}`,
		"escaped method":   `{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"echo"}}`,
		"invalid UTF-8 id": "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}",
	} {
		if _, _, _, got := ParseEnvelope([]byte(body)); got {
			t.Errorf("%s: accepted", name)
		}
	}
	for name, params := range map[string]string{
		"no name":             `{"arguments":{}}`,
		"empty name":          `{"name":""}`,
		"escaped name":        `{"name":"e\u0063ho"}`,
		"arguments array":     `{"name":"echo","arguments":[1]}`,
		"arguments null":      `{"name":"echo","arguments":null}`,
		"unknown field":       `{"name":"echo","task":{}}`,
		"case-folded field":   `{"Name":"echo"}`,
		"progress token":      `{"name":"echo","_meta":{"progressToken":"p"}}`,
		"number key":          `{"name":"echo","_meta":{"idempotencyKey":7}}`,
		"empty key":           `{"name":"echo","_meta":{"idempotencyKey":""}}`,
		"escaped key":         `{"name":"echo","_meta":{"idempotencyKey":"a\"b"}}`,
		"number runId":        `{"name":"echo","_meta":{"runId":1}}`,
		"meta not an object":  `{"name":"echo","_meta":[]}`,
		"meta number too big": `{"name":"echo","_meta":{"n":1e999}}`,
		"escaped meta key":    `{"name":"echo","_meta":{"\u0078":1}}`,
	} {
		if c, got := ParseCall([]byte(params)); got {
			t.Errorf("%s: accepted as %+v", name, c)
		}
	}
}

func TestParseCallMeta(t *testing.T) {
	c, ok := ParseCall([]byte(`{"name":"pay","arguments":{"amount":5},"_meta":{"idempotencyKey":"order-42","runId":"job","io.modelcontextprotocol/related-task":{"taskId":"t"},"trace":"x"}}`))
	if !ok || c.Key != "order-42" || c.RunID != "job" || string(c.Meta) != `{"trace":"x"}` || string(c.Args) != `{"amount":5}` {
		t.Fatalf("%+v %v", c, ok)
	}
	c, ok = ParseCall([]byte(`{"name":"pay","_meta":{"idempotencyKey":"k"}}`))
	if !ok || c.Meta != nil || c.Key != "k" {
		t.Fatalf("only consumed keys: %+v %v", c, ok)
	}
}

func TestAnswers(t *testing.T) {
	if got := string(AppendResult(nil, []byte(`"a"`), []byte(`{"content":[]}`))); got != `{"jsonrpc":"2.0","id":"a","result":{"content":[]}}` {
		t.Fatalf("AppendResult: %s", got)
	}
	if got := string(EncodeAnswer([]byte(`7`), &mcp.CallToolResult{}, nil)); !strings.Contains(got, `"content":[]`) || !strings.Contains(got, `"id":7`) {
		t.Fatalf("a result without content: %s", got)
	}
	if got := string(EncodeAnswer([]byte(`7`), nil, errors.New("boom"))); !strings.Contains(got, `"code":-32603`) || !strings.Contains(got, `"message":"boom"`) {
		t.Fatalf("a plain error: %s", got)
	}
	w := httptest.NewRecorder()
	WriteRPCError(w, 400, []byte(`"x"`), &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "dup"})
	if w.Code != 400 || w.Header().Get("Content-Type") != "application/json" || !strings.Contains(w.Body.String(), `"message":"dup"`) {
		t.Fatalf("WriteRPCError: %d %v %s", w.Code, w.Header(), w.Body)
	}
	if !IsError([]byte(`{"content":[],"isError":true}`)) || IsError([]byte(`{"isError":false}`)) || IsError([]byte(`{"content":[]}`)) {
		t.Fatal("IsError")
	}
	if id, ok := CancelledID([]byte(`{"requestId":"r-1","reason":"x"}`)); !ok || string(id) != `"r-1"` {
		t.Fatalf("CancelledID %q %v", id, ok)
	}
	if _, ok := CancelledID([]byte(`{"reason":"x"}`)); ok {
		t.Fatal("CancelledID without a requestId")
	}
}

// A result written over several lines (pretty-printed) comes out as one
// line, the same JSON value: it fits one SSE data line. A result on one
// line is written as it is, byte for byte.
func TestAppendResultOneLine(t *testing.T) {
	for _, c := range []struct{ result, want string }{
		{`{"a":1}`, `{"a":1}`},
		{`{"a" : 1}`, `{"a" : 1}`},
		{"{\n  \"a\": [\n    1,\n    \"x\\ny\"\n  ]\n}", `{"a":[1,"x\ny"]}`},
		{"{\r\n\"a\":1}", `{"a":1}`},
		{"{\r\"a\":1}", `{"a":1}`},
	} {
		got := string(AppendResult([]byte("x"), []byte("7"), []byte(c.result)))
		if want := `x{"jsonrpc":"2.0","id":7,"result":` + c.want + `}`; got != want {
			t.Errorf("%q: got %q, want %q", c.result, got, want)
		}
		if strings.ContainsAny(got, "\r\n") {
			t.Errorf("%q: a line break is left in %q", c.result, got)
		}
	}
}
