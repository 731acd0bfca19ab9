// Command gatehouse is the Gatehouse command line: it serves the gateway in
// front of a directory of Agent Plugins, checks plugins, shows the tool map
// an agent would see, and administers a running gateway through its store.
//
//	go run ./cmd/gatehouse serve --config gatehouse.yaml
//	go run ./cmd/gatehouse plugin check ./plugins/acme --json
//	go run ./cmd/gatehouse tools --plugin ./plugins/acme
//	go run ./cmd/gatehouse trust bank
//	go run ./cmd/gatehouse approvals list
//
// Run `gatehouse --help` for every command. The command shapes are a
// contract (docs/reference); the commands are tested in process
// (Main).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
