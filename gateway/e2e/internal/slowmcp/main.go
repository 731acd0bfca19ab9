// Command slowmcp is an MCP server over stdio for the gateway's end-to-end
// tests: its one tool, slow_count {ms}, records an effect (one line with the
// _meta.idempotencyKey it received, in -effects), writes -marker, then
// takes ms milliseconds (or until cancelled) before it answers with the
// number of effects recorded.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	effects := flag.String("effects", "", "file that receives one line per effect")
	marker := flag.String("marker", "", "file written when a call has recorded its effect")
	flag.Parse()
	var mu sync.Mutex
	s := mcp.NewServer(&mcp.Implementation{Name: "slowmcp", Version: "1.0.0"}, nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{"ms": map[string]any{"type": "integer"}}}
	s.AddTool(&mcp.Tool{Name: "slow_count", Description: "Record one effect, then take ms milliseconds.", InputSchema: schema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				MS int `json:"ms"`
			}
			_ = json.Unmarshal(req.Params.Arguments, &in)
			key, _ := req.Params.Meta["idempotencyKey"].(string)
			if key == "" {
				key = "-"
			}
			mu.Lock()
			fh, err := os.OpenFile(*effects, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				_, err = fh.WriteString(key + "\n")
				fh.Close()
			}
			mu.Unlock()
			if err != nil {
				return nil, err
			}
			if *marker != "" {
				_ = os.WriteFile(*marker, []byte(key), 0o644)
			}
			select {
			case <-time.After(time.Duration(in.MS) * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			b, _ := os.ReadFile(*effects)
			n := strings.Count(string(b), "\n")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(n)}}}, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Print(err)
	}
}
