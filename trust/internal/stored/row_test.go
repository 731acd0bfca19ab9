package stored

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/plugin"
)

func TestRowID(t *testing.T) {
	if got := RowID(plugin.ServerConfig{Name: "bank", PluginName: "acme"}); got != "acme/bank" {
		t.Error(got)
	}
	if got := RowID(plugin.ServerConfig{Name: "bank"}); got != "config:bank" {
		t.Error(got)
	}
	// A plugin named "config" does not collide with a config server.
	if RowID(plugin.ServerConfig{Name: "x", PluginName: "config"}) == RowID(plugin.ServerConfig{Name: "x"}) {
		t.Error("collision")
	}
}

func TestRowURL(t *testing.T) {
	for _, tc := range []struct {
		cfg  plugin.ServerConfig
		want string
	}{
		{plugin.ServerConfig{Type: plugin.TransportStreamableHTTP, URL: "https://u:secret@h.example/mcp?token=abc#f"}, "https://h.example/mcp"},
		{plugin.ServerConfig{Type: plugin.TransportSSE, URL: "http://127.0.0.1:8080/sse?"}, "http://127.0.0.1:8080/sse"},
		{plugin.ServerConfig{Type: plugin.TransportStdio, URL: "https://h.example/mcp"}, ""},
		{plugin.ServerConfig{Type: plugin.TransportStreamableHTTP}, ""},
		{plugin.ServerConfig{Type: plugin.TransportStreamableHTTP, URL: "http://[::1"}, ""},
	} {
		if got := RowURL(tc.cfg); got != tc.want {
			t.Errorf("RowURL(%q) = %q, want %q", tc.cfg.URL, got, tc.want)
		}
	}
}

func TestRow(t *testing.T) {
	cfg := plugin.ServerConfig{Name: "bank", Type: plugin.TransportStreamableHTTP, URL: "https://u:p@h.example/mcp?k=v",
		Headers: map[string]string{"Authorization": "Bearer secret"}}
	row := Row("config:bank", "bank", cfg, false, []byte("[]"))
	if row.ID != "config:bank" || row.Name != "bank" || row.Type != "streamable-http" || row.URL != "https://h.example/mcp" || string(row.Catalogue) != "[]" {
		t.Fatalf("row %+v", row)
	}
	if row := Row("config:mem", "mem", plugin.ServerConfig{Name: "mem"}, true, nil); row.Type != InternalType || row.URL != "" {
		t.Fatalf("internal row %+v", row)
	}
	if row := Row("config:mem", "mem", plugin.ServerConfig{Name: "mem"}, false, nil); row.Type != "" {
		t.Fatalf("untyped row %+v", row)
	}
	if row := Row("p/s", "s", plugin.ServerConfig{Name: "s", Type: plugin.TransportStdio}, true, nil); row.Type != "stdio" {
		t.Fatalf("a configured type wins: %+v", row)
	}
}

func TestIdentityHash(t *testing.T) {
	a, b := IdentityHash("http://127.0.0.1:1/a"), IdentityHash("http://127.0.0.1:1/b")
	if len(a) != 8 || a == b || a != IdentityHash("http://127.0.0.1:1/a") {
		t.Fatalf("%q %q", a, b)
	}
	if got := IdentityHash(""); got != "e3b0c442" { // SHA-256 of nothing
		t.Fatal(got)
	}
}

func TestInstructionsPrint(t *testing.T) {
	if got := InstructionsPrint(&mcp.InitializeResult{Instructions: "Be helpful."}); got != pin.InstructionsFingerprint("Be helpful.") {
		t.Error(got)
	}
	if InstructionsPrint(nil) != pin.InstructionsFingerprint("") || InstructionsPrint(&mcp.InitializeResult{}) != pin.InstructionsFingerprint("") {
		t.Error("no instructions")
	}
}
