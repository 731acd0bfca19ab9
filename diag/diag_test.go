package diag

import (
	"encoding/json"
	"testing"
)

func TestJSONShape(t *testing.T) {
	d := New(UnknownField, "5.2", "plugin.json", "unknown top-level field %q is ignored", "foo")
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"section":"5.2","rule":"unknown-field","origin":"plugin.json","message":"unknown top-level field \"foo\" is ignored"}`
	if string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
}

func TestRulesAreTheContract(t *testing.T) {
	// docs/reference/diagnostics.md lists exactly these 24 rules; a rename breaks users.
	want := []string{
		"manifest-missing", "manifest-invalid", "unsupported-schema-version", "invalid-name",
		"unknown-field", "extensions-not-an-object", "path-escapes-plugin-root", "component-wrong-kind",
		"invalid-skill", "mcp-invalid-json", "mcp-invalid", "schema-version-mismatch",
		"invalid-server-entry", "invalid-url", "invalid-header", "reserved-env-name",
		"unsupported-transport", "secret-in-config", "connection-failure", "host-not-allowed",
		"unsafe-address", "server-name-collision", "disclosure-budget-exceeded", "tool-drift",
	}
	got := Rules()
	if len(got) != len(want) {
		t.Fatalf("got %d rules, want %d", len(got), len(want))
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("rule %d = %q, want %q", i, got[i], want[i])
		}
		if !got[i].Known() {
			t.Errorf("%q not Known", got[i])
		}
	}
	if Rule("made-up").Known() {
		t.Error("unknown rule reported as known")
	}
}

func TestStringAndHas(t *testing.T) {
	ds := []Diagnostic{
		New(ConnectionFailure, "", "bank", "dial failed"),
		New(InvalidURL, "7.2.1", "mcp.json", "bad url"),
	}
	if got := ds[0].String(); got != "bank: dial failed [connection-failure]" {
		t.Errorf("String() = %q", got)
	}
	if got := ds[1].String(); got != "mcp.json: bad url [invalid-url, §7.2.1]" {
		t.Errorf("String() = %q", got)
	}
	if !Has(ds, InvalidURL) || Has(ds, ToolDrift) {
		t.Error("Has is wrong")
	}
}
