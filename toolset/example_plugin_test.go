package toolset

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/plugin"
)

// TestExamplePlugin loads examples/plugins/hello and talks to its real stdio
// server (started with `go run`, so the first run compiles it).
func TestExamplePlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the example server; skipped in -short mode")
	}
	res := plugin.Load("../examples/plugins/hello")
	if !res.OK() {
		t.Fatalf("example plugin rejected: %v", res.Diagnostics)
	}
	if len(res.Diagnostics) != 0 || len(res.Plugin.Skills) != 1 || res.Plugin.Skills[0].Name != "greet" {
		t.Fatalf("example plugin: %v %+v", res.Diagnostics, res.Plugin.Skills)
	}
	servers := PluginServers(res.Plugin)
	for i := range servers {
		servers[i].Config.PluginData = t.TempDir() // keep the source tree clean
	}
	ts := open(t, servers, &Options{ConnectTimeout: 120 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	if err := ts.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if ds := ts.Diagnostics(); len(ds) != 0 {
		t.Fatalf("diagnostics %v", ds)
	}
	if got := call(t, ts, "greeter__greet", map[string]any{"name": "Ada"}); got != "Hello, Ada!" {
		t.Errorf("greet = %q", got)
	}
	r, err := ts.Call(ctx, "greeter__add", map[string]any{"a": 2, "b": 3.5}, CallInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if sc, _ := r.StructuredContent.(map[string]any); sc["sum"] != 5.5 {
		t.Errorf("add = %+v", r.StructuredContent)
	}
}
