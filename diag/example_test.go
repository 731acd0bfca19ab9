package diag_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/plugin"
)

// Load a plugin whose mcp.json names one good server and one that reaches a
// remote host over plain HTTP: the bad server is skipped with a diagnostic,
// the good one loads, and a program branches on the rule, never the text.
func Example() {
	root, _ := os.MkdirTemp("", "diag-example-")
	defer os.RemoveAll(root)
	_ = os.WriteFile(filepath.Join(root, "plugin.json"), []byte(`{
		"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
		"name": "acme", "version": "0.1.0"
	}`), 0o644)
	_ = os.WriteFile(filepath.Join(root, "mcp.json"), []byte(`{
		"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json",
		"mcpServers": {
			"bank":    {"type": "stdio", "command": "./bin/bank"},
			"weather": {"type": "streamable-http", "url": "http://weather.example.com/mcp"}
		}
	}`), 0o644)

	res := plugin.Load(root)
	for _, d := range res.Diagnostics {
		fmt.Println(d.Rule, d.Origin)
	}
	fmt.Println("invalid url:", diag.Has(res.Diagnostics, diag.InvalidURL))
	if res.OK() {
		fmt.Println("servers loaded:", len(res.Plugin.Servers))
	}
	// Output:
	// invalid-url weather
	// invalid url: true
	// servers loaded: 1
}

// A diagnostic renders on one line for people; its Rule is for programs.
func ExampleNew() {
	d := diag.New(diag.ToolDrift, "", "weather", "tool %q changed its description; quarantined", "forecast")
	fmt.Println(d)
	fmt.Println(d.Rule.Known())
	// Output:
	// weather: tool "forecast" changed its description; quarantined [tool-drift]
	// true
}
