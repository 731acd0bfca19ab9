// Package toolset is the agent side of Gatehouse: it connects the MCP servers
// of Agent Plugins (or servers configured in code) over the official go-sdk,
// and projects their tools into one tool map an agent can hand a model.
//
// A Toolset is lazy: Open checks the wiring and computes names, but performs
// no I/O; the first Tools, Call, SystemPrompt or Connect connects every server
// in parallel, each with its own timeout. A server that cannot be launched,
// reached or initialized is skipped with a diagnostic and its siblings go on.
//
// What the model sees is built from server-controlled text, so the toolset
// treats it as hostile: names are projected to provider-legal names (package
// internal/projection) and calls are routed by the registered mapping, never
// by splitting a name; descriptions are stripped of control, zero-width and
// bidi characters; server instructions are never put in the tool map, a
// prompt or an info-level log; annotations are carried as information only;
// remote URLs go through an egress guard (package egress) that enforces the
// allowed-host list and refuses private addresses; stdio servers are launched
// from their plugin root with the command and working directory re-checked
// through realpath just before spawning, in their own process group, and are
// reaped on Close.
package toolset
