package toolset

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/plugin"
)

// everythingVersion pins @modelcontextprotocol/server-everything.
const everythingVersion = "2026.8.31"

// TestInteropServerEverything drives the reference TypeScript server over
// stdio through the toolset. It is skipped when npx is missing, or when the
// server cannot be started (e.g. no network for the first download) unless
// GATEHOUSE_INTEROP_REQUIRED=1, which turns that skip into a failure.
func TestInteropServerEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("interop: skipped in -short mode")
	}
	if _, err := exec.LookPath("npx"); err != nil {
		t.Skip("interop: npx is not installed; install Node.js to run this test")
	}
	s := Server{Config: plugin.ServerConfig{
		Name: "everything", Type: plugin.TransportStdio, Command: "npx",
		Args: []string{"-y", "@modelcontextprotocol/server-everything@" + everythingVersion, "stdio"},
	}}
	ts := open(t, []Server{s}, &Options{ConnectTimeout: 120 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	list, err := ts.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diag.Has(ts.Diagnostics(), diag.ConnectionFailure) {
		if os.Getenv("GATEHOUSE_INTEROP_REQUIRED") == "1" {
			t.Fatalf("interop: server-everything did not start: %v", ts.Diagnostics())
		}
		t.Skipf("interop: @modelcontextprotocol/server-everything@%s could not be started (offline?): %v", everythingVersion, ts.Diagnostics())
	}
	var names []string
	for _, ti := range list {
		names = append(names, ti.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "everything__echo") {
		t.Fatalf("no echo tool: %v", names)
	}
	if got := call(t, ts, "everything__echo", map[string]any{"message": "hello interop"}); !strings.Contains(got, "hello interop") {
		t.Errorf("echo = %q", got)
	}
}
