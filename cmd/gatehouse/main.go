// Command gatehouse is the Gatehouse command line: it checks Agent Plugins,
// shows the tool map an agent would see, and (in later releases) serves a
// hardened MCP gateway in front of a directory of plugins.
//
// Run `gatehouse --help` for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/gatehouse-dev/gatehouse/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
