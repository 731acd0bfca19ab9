// Command echoserver is the go-sdk MCP server the load harness measures
// "direct": one tool, echo, answering with its message argument.
//
// Usage:
//
//	echoserver [-addr 127.0.0.1:8080] [-json] [-stateless] [-delay 10ms]
//	echoserver -stdio
//
// Over HTTP it serves streamable HTTP at /mcp on a loopback address only
// (port 0 picks a free port) and, once listening, prints one line
// "url=http://HOST:PORT/mcp" to standard output. It is stateful unless
// -stateless, and answers with SSE streams unless -json (go-sdk's
// JSONResponse). -delay makes every POST wait that long before it is
// answered: a slower tool, for runs where the machine has CPU to spare.
// SIGINT or SIGTERM stops it. With -stdio it serves one
// session over standard input and output and exits when input closes.
package main
