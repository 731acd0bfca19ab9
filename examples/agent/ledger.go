package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ledgerRole is the first argument that makes this binary the ledger
// server (over stdio), as the toolset launches it.
const ledgerRole = "ledger-server"

// envCrash, set to 1 in the ledger server's environment, makes it kill its
// parent (the agent) with SIGKILL right after writing an entry: the crash
// between a call's effect and the agent's recording of its outcome.
const envCrash = "LEDGER_KILL_PARENT_AFTER_WRITE"

type entryArgs struct {
	Memo   string `json:"memo" jsonschema:"what the entry is for"`
	Amount int    `json:"amount" jsonschema:"the amount in EUR, negative for money out"`
}

// serveLedger runs the ledger: add_entry appends one line per call to the
// file ("amount<TAB>memo<TAB>idempotency key"), list_entries reads them.
func serveLedger(args []string) error {
	fs := flag.NewFlagSet(ledgerRole, flag.ContinueOnError)
	file := fs.String("file", "", "the ledger file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" {
		return errors.New("-file is required")
	}
	crash := os.Getenv(envCrash) == "1"
	srv := mcp.NewServer(&mcp.Implementation{Name: "ledger", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "add_entry", Description: "Write one entry to the ledger."},
		func(ctx context.Context, req *mcp.CallToolRequest, in entryArgs) (*mcp.CallToolResult, any, error) {
			key, _ := req.Params.Meta["idempotencyKey"].(string)
			f, err := os.OpenFile(*file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				return nil, nil, err
			}
			_, err = fmt.Fprintf(f, "%d\t%s\t%s\n", in.Amount, strings.ReplaceAll(in.Memo, "\t", " "), key)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, nil, err
			}
			if crash {
				_ = syscall.Kill(os.Getppid(), syscall.SIGKILL)
			}
			entries, _ := readLedger(*file)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
				Text: fmt.Sprintf("entry %d written: %d EUR, %q", len(entries), in.Amount, in.Memo)}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "list_entries", Description: "List the ledger's entries."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			entries, err := readLedger(*file)
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(entries, "\n")}}}, nil, nil
		})
	return srv.Run(context.Background(), &mcp.StdioTransport{})
}

// readLedger returns the ledger's lines (none when it does not exist).
func readLedger(file string) ([]string, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"), nil
}
