// Package echo is the tiny MCP server the load harness measures against: one
// tool, "echo", that answers with its "message" argument as text content. It
// is built on the official go-sdk so that "direct" figures are those of a
// plain go-sdk server, and it serves both streamable HTTP (see [NewHandler])
// and stdio (see [NewServer]).
package echo
