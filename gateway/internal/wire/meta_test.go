package wire

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestParseRequestMeta: the reserved keys of a 2026-07-28 request's _meta,
// and every _meta the go-sdk's server must read instead.
func TestParseRequestMeta(t *testing.T) {
	good := `{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28","x":1}`
	m, ok := ParseRequestMeta([]byte(good))
	if !ok || m.ProtocolVersion != "2026-07-28" || string(m.ClientInfo) != `{"name":"c","version":"1"}` || string(m.ClientCapabilities) != `{"roots":{"listChanged":true}}` {
		t.Fatalf("%v %+v", ok, m)
	}
	if m, ok := ParseRequestMeta([]byte(`{"runId":"r"}`)); !ok || m.ProtocolVersion != "" || m.ClientInfo != nil || m.ClientCapabilities != nil {
		t.Fatalf("no reserved keys: %v %+v", ok, m)
	}
	for name, bad := range map[string]string{
		"not an object":        `[]`,
		"empty":                ``,
		"invalid":              `{"io.modelcontextprotocol/protocolVersion":"2026-07-28"`,
		"version not a string": `{"io.modelcontextprotocol/protocolVersion":20260728}`,
		"version escaped":      `{"io.modelcontextprotocol/protocolVersion":"2026\u002d07-28"}`,
		"version repeated":     `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2025-11-25"}`,
		"info repeated":        `{"io.modelcontextprotocol/clientInfo":{},"io.modelcontextprotocol/clientInfo":{"name":"x"}}`,
		"caps repeated":        `{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`,
		"escaped key":          `{"io.modelcontextprotocol\/clientCapabilities":{}}`,
		"log level":            `{"io.modelcontextprotocol/logLevel":"debug"}`,
		"other reserved key":   `{"io.modelcontextprotocol/related-task":{"taskId":"t"}}`,
	} {
		if m, ok := ParseRequestMeta([]byte(bad)); ok {
			t.Errorf("%s: accepted %q as %+v", name, bad, m)
		}
	}
}

// FuzzRequestMeta checks that whatever ParseRequestMeta accepts, a JSON
// decoder reads the same way: the same revision, and the client's info
// and capabilities as the same values.
func FuzzRequestMeta(f *testing.F) {
	for _, s := range []string{
		`{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2025-11-25"}`,
		`{"io.modelcontextprotocol\/protocolVersion":"2025-11-25"}`,
		`{"io.modelcontextprotocol/clientCapabilities":null,"a":[1,2,{"b":"c"}]}`,
		`{"io.modelcontextprotocol/logLevel":"debug"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, meta []byte) {
		m, ok := ParseRequestMeta(meta)
		if !ok {
			return
		}
		var dec map[string]json.RawMessage
		if err := json.Unmarshal(meta, &dec); err != nil {
			t.Fatalf("accepted, but it does not decode: %q: %v", meta, err)
		}
		var version string
		if raw, has := dec[MetaProtocolVersion]; has {
			if err := json.Unmarshal(raw, &version); err != nil {
				t.Fatalf("revision %q: %v", raw, err)
			}
		}
		if version != m.ProtocolVersion {
			t.Fatalf("revision %q, a decoder reads %q", m.ProtocolVersion, version)
		}
		for key, got := range map[string][]byte{MetaClientInfo: m.ClientInfo, MetaClientCapabilities: m.ClientCapabilities} {
			want, has := dec[key]
			if has != (got != nil) || has && !bytes.Equal(bytes.TrimSpace(want), got) {
				t.Fatalf("%s: %q, a decoder reads %q", key, got, want)
			}
		}
	})
}
