package main

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "10.0.0.1:0", ":0", "example.com:80", "nonsense"} {
		if err := run(t.Context(), []string{"-addr", addr}, io.Discard); err == nil {
			t.Errorf("-addr %s: no error", addr)
		}
	}
	if err := run(t.Context(), []string{"stray"}, io.Discard); err == nil {
		t.Error("stray argument accepted")
	}
}

// TestServesEcho starts the server on a free loopback port, calls echo with
// a go-sdk client over HTTP, and stops it by cancelling its context.
func TestServesEcho(t *testing.T) {
	for _, flags := range [][]string{nil, {"-json"}, {"-stateless"}, {"-delay", "20ms"}} {
		t.Run(strings.Join(append([]string{"flags"}, flags...), " "), func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			pr, pw := io.Pipe()
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, flags...), pw)
				pw.Close()
			}()
			line, err := bufio.NewReader(pr).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			go func() { _, _ = io.Copy(io.Discard, pr) }()
			url := strings.TrimSpace(strings.TrimPrefix(line, "url="))
			if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
				t.Fatalf("first line %q", line)
			}
			c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "héllo"}})
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); len(flags) == 2 && took < 20*time.Millisecond {
				t.Errorf("with -delay 20ms the call took %v", took) // a lower bound: a delay can only be longer
			}
			if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "héllo" || res.IsError {
				t.Errorf("echo answered %+v", res.Content[0])
			}
			_ = cs.Close()
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("run: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("server did not stop")
			}
		})
	}
}
