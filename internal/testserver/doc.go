// Package testserver provides real MCP servers, built on the official go-sdk,
// for Gatehouse's tests: a configurable fixture server (Config, New, Handler)
// and a binary (cmd/fixture) that serves the same fixture over stdio, streamable
// HTTP or legacy SSE. Build compiles that binary once per test binary.
//
// The fixture's tools are chosen by Config.Tools:
//
//   - echo {text}: returns text.
//   - count {}: appends one line (the _meta.idempotencyKey it received, or "-")
//     to Config.EffectsFile and returns the number of lines.
//   - block {}: writes Config.MarkerFile+".started", then blocks until the
//     request is cancelled and writes Config.MarkerFile with "cancelled".
//   - meta {}: returns its received _meta as JSON text and structured content.
//   - whoami {}: returns the Authorization header of the HTTP request that
//     carried the call (empty on stdio).
//   - env {}: returns the process's cwd, PLUGIN_ROOT, PLUGIN_DATA,
//     FIXTURE_VAR and PATH.
//   - hygiene {}: a tool whose description contains bidi and zero-width
//     characters; pair it with Config.Instructions to test prompt hygiene.
//
// Config.ToolsFile (flag -tools-file) serves the tools of a JSON file, read
// at start, so a test can change a server's tools between runs.
//
// Config.Names adds one tool per name that returns its own name (for naming
// tests) and
// Config.Generate adds N tools with long descriptions and rich schemas (for
// disclosure-budget tests).
package testserver
