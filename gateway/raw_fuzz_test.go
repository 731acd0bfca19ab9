package gateway

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzRawRequest checks that whatever the raw path accepts, encoding/json
// reads the same way: same method, ID, tool name and arguments, and a
// forwarded _meta that is the caller's without the keys the gateway
// consumes or the protocol reserves.
func FuzzRawRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","_meta":{"runId":"r","x":[1,{"y":null}],"io.modelcontextprotocol/z":1}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e\u0063ho"}}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"echo"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}]`,
		` {"params":{"arguments":{"a":"}"},"name":"x"},"method":"tools/call","id":-7,"jsonrpc":"2.0"} `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		method, id, params, ok := parseEnvelope(body)
		if !ok {
			return
		}
		var env struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			Params  json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(body, &env); err != nil {
			t.Fatalf("accepted, but encoding/json says %v", err)
		}
		if env.JSONRPC != "2.0" || env.Method != method || !bytes.Equal(env.ID, id) || !bytes.Equal(env.Params, params) {
			t.Fatalf("read differently: %q %q %q vs %+v", method, id, params, env)
		}
		if method != "tools/call" {
			return
		}
		req, ok := parseCall(params)
		if !ok {
			return
		}
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
			Meta      map[string]any  `json:"_meta"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			t.Fatalf("params accepted, but encoding/json says %v", err)
		}
		if p.Name != req.name || !bytes.Equal(p.Arguments, req.args) {
			t.Fatalf("call read differently: %q %q vs %q %q", req.name, req.args, p.Name, p.Arguments)
		}
		if _, has := p.Meta["progressToken"]; has {
			t.Fatal("a progress token went the raw way")
		}
		if _, has := p.Meta["idempotencyKey"]; has {
			t.Fatal("an idempotency key went the raw way")
		}
		if run, has := p.Meta["runId"]; has && run != req.runID {
			t.Fatalf("runId %q, want %v", req.runID, run)
		}
		var fwd map[string]any
		if req.meta != nil {
			if err := json.Unmarshal(req.meta, &fwd); err != nil {
				t.Fatalf("forwarded _meta %q: %v", req.meta, err)
			}
		}
		for k := range p.Meta {
			_, kept := fwd[k]
			drop := k == "runId" || strings.HasPrefix(k, reservedMetaPrefix)
			if kept == drop {
				t.Fatalf("_meta key %q: kept=%v", k, kept)
			}
		}
		if len(fwd) > len(p.Meta) {
			t.Fatalf("forwarded _meta has keys the caller's has not: %q", req.meta)
		}
	})
}
