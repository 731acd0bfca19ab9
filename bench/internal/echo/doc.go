// Package echo is the tiny MCP server the load harness measures against: one
// tool, "echo", that answers with its "message" argument as text content.
//
//	http.Handle("/mcp", echo.NewHandler(&echo.Options{JSONResponse: true})) // streamable HTTP
//	err := echo.NewServer().Run(ctx, &mcp.StdioTransport{})              // or stdio
//
// It is built on the official go-sdk so that "direct" figures are those of a
// plain go-sdk server, and it serves both streamable HTTP (see [NewHandler])
// and stdio (see [NewServer]).
package echo
