// Package gateway wires Gatehouse's packages into `gatehouse serve`: it
// reads the config of CONTRACTS.md §4, loads the plugins, connects their
// servers (and the config's inline servers) through a toolset, and serves
// the aggregated tool map through the hardened server (package server):
// bearer tokens checked against their SHA-256 in constant time, per-tool
// visibility (scopes and tools.allow/block) on tools/list and tools/call
// alike, per-subject rate limits counted in the store.
//
// Every tools/call with _meta.idempotencyKey is a unit of work (subject,
// tool, key) run through durable.Journal.Guarded: the guards (the firewall's
// per-run cap, tools.requireApproval) decide before anything is claimed,
// the journal claims before the upstream call, and the upstream gets a key
// derived from the unit of work, never the caller's. Approvals and records
// are read from the store on every call, so the admin commands act on a
// running gateway, and replicas sharing a PostgreSQL store share them.
//
// Drift: the toolset pins every server's tool contracts in the store on
// first sight; a re-listing that finds a changed tool quarantines it (our
// description, calls refused `quarantined` before anything is journaled),
// withholds an added one and drops a removed one, and the served map
// follows (tools/list_changed). WatchTrust polls the store every second,
// so `gatehouse trust SERVER` run by another process takes effect on a
// running gateway. The firewall's contract pinning reads the same pins.
// Prompts and resource templates are pinned alongside: a changed one is not
// listed and its requests are refused `quarantined`; their drift is counted
// like a tool's (plain resources are not pinned).
//
// Metrics (Config.Metrics, ServeMetrics): Prometheus text on a listener of
// its own, from package internal/metrics.
//
// A server whose connection is lost is restarted on the first call after a
// backoff; meanwhile its tools answer `unavailable`. Serve shuts down
// gracefully: calls in flight finish (or are cancelled after the config's
// shutdownTimeout and journaled in doubt) before sessions close.
//
// Config files are strict: an unknown field, a wrong type or an unsafe
// value is a *ConfigError naming the file, the field and the fix.
// docs/gateway.md documents every field and the wire behaviour.
package gateway
