// Command fwdmcp is the upstream MCP server of the gateway's forwarding
// end-to-end tests: a resource, a template, a prompt with completion,
// subscriptions with updates on demand, and tools that log, report
// progress, ask the client (sampling, elicitation, roots) and wait to be
// cancelled. It serves stdio, or streamable HTTP with -http (stateful, or
// stateless with -stateless). -cancelled FILE records each cancelled call.
package main

//lint:file-ignore SA1019 forwarding sampling, elicitation, roots and logging (deprecated by SEP-2577, still in 2025-11-25) is this file's job.

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	addr := flag.String("http", "", "serve streamable HTTP on this address (default: stdio)")
	stateless := flag.Bool("stateless", false, "serve HTTP statelessly (2026-07-28)")
	cancelled := flag.String("cancelled", "", "append a line to this file for each cancelled wait")
	ready := flag.String("ready", "", "write the listen address to this file once listening")
	flag.Parse()

	s := mcp.NewServer(&mcp.Implementation{Name: "fwdmcp", Version: "1"}, &mcp.ServerOptions{
		Instructions:       "upstream instructions (never forwarded)",
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		CompletionHandler: func(_ context.Context, r *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			var vals []string
			for _, v := range []string{"red", "green", "blue"} {
				if strings.HasPrefix(v, r.Params.Argument.Value) {
					vals = append(vals, v)
				}
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: append([]string{r.Params.Ref.Type}, vals...), Total: len(vals)}}, nil
		},
	})
	s.AddResource(&mcp.Resource{URI: "fwd://static/hello", Name: "hello", MIMEType: "text/plain"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/plain", Text: "hello from upstream"}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "fwd://items/{id}", Name: "item"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "item " + strings.TrimPrefix(r.Params.URI, "fwd://items/")}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "greets", Arguments: []*mcp.PromptArgument{{Name: "color", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello in " + r.Params.Arguments["color"]}}}}, nil
		})
	type none struct{}
	mcp.AddTool(s, &mcp.Tool{Name: "work", Description: "logs and reports progress"},
		func(ctx context.Context, r *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			_ = r.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "working"})
			if tok := r.Params.GetProgressToken(); tok != nil {
				for i := 1; i <= 3; i++ {
					_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3})
				}
			}
			return text(fmt.Sprintf("token=%v", r.Params.GetProgressToken())), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "touch", Description: "announces an update of a resource"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
			URI string `json:"uri"`
		}) (*mcp.CallToolResult, any, error) {
			_ = s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: in.URI})
			return text("touched"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sample", Description: "asks the client's model"},
		func(ctx context.Context, r *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			res, err := r.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "ping"}}}})
			if err != nil {
				return nil, nil, err
			}
			return text("sampled: " + res.Content.(*mcp.TextContent).Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "asks the user"},
		func(ctx context.Context, r *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			res, err := r.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprintf("%s %v", res.Action, res.Content["name"])), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "roots", Description: "lists the client's roots"},
		func(ctx context.Context, r *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			res, err := r.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, nil, err
			}
			var uris []string
			for _, x := range res.Roots {
				uris = append(uris, x.URI)
			}
			return text("roots: " + strings.Join(uris, ",")), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "wait", Description: "waits until cancelled"},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			if *cancelled != "" {
				f, err := os.OpenFile(*cancelled, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				if err == nil {
					fmt.Fprintln(f, "cancelled")
					f.Close()
				}
			}
			return nil, nil, ctx.Err()
		})

	if *addr == "" {
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	if *ready != "" {
		if err := os.WriteFile(*ready+".tmp", []byte(ln.Addr().String()), 0o644); err != nil {
			log.Fatal(err)
		}
		if err := os.Rename(*ready+".tmp", *ready); err != nil {
			log.Fatal(err)
		}
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: *stateless})
	log.Fatal(http.Serve(ln, h))
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
