package echo

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolName is the name of the echo tool.
const ToolName = "echo"

// Input is the echo tool's argument object.
type Input struct {
	// Message is returned unchanged as the result's only text content.
	Message string `json:"message"`
}

// NewServer returns a go-sdk server with the echo tool registered.
func NewServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "gatehouse-bench-echo", Version: "0.1.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{
		Name:        ToolName,
		Description: "Returns its message argument unchanged.",
	}, func(_ context.Context, _ *mcp.CallToolRequest, in Input) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil, nil
	})
	return s
}

// Options configures [NewHandler]. The zero value (or nil) is a stateful server
// that answers tool calls with an SSE stream, the go-sdk's defaults.
type Options struct {
	// JSONResponse answers POSTs with application/json instead of an SSE stream.
	JSONResponse bool
	// Stateless serves without Mcp-Session-Id (go-sdk's Stateless mode).
	Stateless bool
}

// NewHandler returns a streamable HTTP handler serving one shared echo server.
func NewHandler(opts *Options) *mcp.StreamableHTTPHandler {
	if opts == nil {
		opts = &Options{}
	}
	s := NewServer()
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
		JSONResponse: opts.JSONResponse,
		Stateless:    opts.Stateless,
	})
}
