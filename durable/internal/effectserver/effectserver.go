// Package effectserver is a test fixture: a real MCP server (go-sdk) whose
// tools have a visible effect — one line appended to a file per effect — so
// tests can count how many times a call really ran.
//
// Tools (every one reads _meta.idempotencyKey and reports it back):
//
//	charge       appends "effect\t<key>\t<receipt>" on every call, then sleeps
//	             sleepMs (ignoring cancellation: the effect has happened)
//	charge_once  appends "send\t<key>" on every call and "effect\t<key>\t<receipt>"
//	             only for a key it has not seen: a server that dedups on the key
//	reject       answers a JSON-RPC error (code -32010) naming the key
//	fail_result  answers a tool result with isError true
//	echo         no effect: answers its arguments (for benchmarks)
//
// The effect file is locked (flock) around each check-and-append, so
// several server processes may share it.
package effectserver

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvFile names the effect file when -effects is not given.
const EnvFile = "EFFECTSERVER_FILE"

// RejectCode is the JSON-RPC error code of the reject tool.
const RejectCode = -32010

// Options configure the server.
type Options struct {
	// File is the effect file (required).
	File string
	// Sleep is added to every charge's sleepMs.
	Sleep time.Duration
}

// Args are the arguments of every tool.
type Args struct {
	Amount  int `json:"amount"`
	SleepMs int `json:"sleepMs,omitempty"`
}

// Receipt is the structured content of charge and charge_once.
type Receipt struct {
	Key     string `json:"key"`
	Amount  int    `json:"amount"`
	Receipt string `json:"receipt"`
}

func keyOf(req *mcp.CallToolRequest) string {
	if req.Params == nil || req.Params.Meta == nil {
		return ""
	}
	k, _ := req.Params.Meta["idempotencyKey"].(string)
	return k
}

func newReceipt() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "rcpt_" + hex.EncodeToString(b[:])
}

// New returns the fixture server.
func New(o Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "effectserver", Version: "1.0.0"}, nil)
	sleep := func(ms int) { time.Sleep(o.Sleep + time.Duration(ms)*time.Millisecond) }
	receipt := func(k string, a Args, r string) (*mcp.CallToolResult, Receipt, error) {
		rc := Receipt{Key: k, Amount: a.Amount, Receipt: r}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
			Text: fmt.Sprintf("charged %d for %s: %s", a.Amount, k, r)}}}, rc, nil
	}
	mcp.AddTool(s, &mcp.Tool{Name: "charge", Description: "Charge once per call (not idempotent)."},
		func(ctx context.Context, req *mcp.CallToolRequest, a Args) (*mcp.CallToolResult, Receipt, error) {
			k, r := keyOf(req), newReceipt()
			if err := withLock(o.File, func(f *os.File) error {
				_, err := fmt.Fprintf(f, "effect\t%s\t%s\n", k, r)
				return err
			}); err != nil {
				return nil, Receipt{}, err
			}
			sleep(a.SleepMs)
			return receipt(k, a, r)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "charge_once", Description: "Charge once per idempotency key."},
		func(ctx context.Context, req *mcp.CallToolRequest, a Args) (*mcp.CallToolResult, Receipt, error) {
			k := keyOf(req)
			var r string
			if err := withLock(o.File, func(f *os.File) error {
				if _, err := fmt.Fprintf(f, "send\t%s\n", k); err != nil {
					return err
				}
				if k != "" {
					if prev, ok := findEffect(f.Name(), k); ok {
						r = prev
						return nil
					}
				}
				r = newReceipt()
				_, err := fmt.Fprintf(f, "effect\t%s\t%s\n", k, r)
				return err
			}); err != nil {
				return nil, Receipt{}, err
			}
			sleep(a.SleepMs)
			return receipt(k, a, r)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "reject", Description: "Answer a JSON-RPC error."},
		func(ctx context.Context, req *mcp.CallToolRequest, a Args) (*mcp.CallToolResult, any, error) {
			data, _ := json.Marshal(map[string]string{"key": keyOf(req)})
			return nil, nil, &jsonrpc.Error{Code: RejectCode, Message: "card declined for " + keyOf(req), Data: data}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail_result", Description: "Answer a tool error."},
		func(ctx context.Context, req *mcp.CallToolRequest, a Args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
				Text: "insufficient funds for " + keyOf(req)}}}, nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "echo", Description: "Answer the arguments; no effect.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	return s
}

func findEffect(path, key string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Split(sc.Text(), "\t")
		if len(parts) == 3 && parts[0] == "effect" && parts[1] == key {
			return parts[2], true
		}
	}
	return "", false
}

// Effects reads an effect file: for each key, the receipts of its effects
// and the number of sends (charge_once only).
func Effects(path string) (effects map[string][]string, sends map[string]int, err error) {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, err
	}
	effects, sends = map[string][]string{}, map[string]int{}
	for line := range strings.SplitSeq(string(b), "\n") {
		parts := strings.Split(line, "\t")
		switch {
		case len(parts) == 3 && parts[0] == "effect":
			effects[parts[1]] = append(effects[parts[1]], parts[2])
		case len(parts) == 2 && parts[0] == "send":
			sends[parts[1]]++
		case line == "":
		default:
			return nil, nil, fmt.Errorf("effect file %s: bad line %q", path, line)
		}
	}
	return effects, sends, nil
}

// Main runs the server over stdio with flags -effects FILE and -sleep D
// (or $EFFECTSERVER_FILE), until stdin closes.
func Main(args []string) error {
	fs := flag.NewFlagSet("effectserver", flag.ContinueOnError)
	file := fs.String("effects", os.Getenv(EnvFile), "effect file")
	sleep := fs.Duration("sleep", 0, "added to every charge")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" {
		return fmt.Errorf("effectserver: -effects or $%s is required", EnvFile)
	}
	return New(Options{File: *file, Sleep: *sleep}).Run(context.Background(), &mcp.StdioTransport{})
}
