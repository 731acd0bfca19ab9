// Package toolset is the agent side of Gatehouse: it connects the MCP servers
// of Agent Plugins (or servers configured in code) over the official go-sdk,
// and projects their tools into one tool map an agent can hand a model.
//
//	res := plugin.Load("./plugins/acme")
//	ts, err := toolset.Open(ctx, toolset.PluginServers(res.Plugin), &toolset.Options{Store: st})
//	defer ts.Close()
//	tools, err := ts.Tools(ctx) // []ToolInfo: projected names, sanitized text, disclosure tiers
//	out, err := ts.Call(ctx, "acme__create_issue", args, toolset.CallInfo{RunID: run, ToolCallID: id})
//
// Its job is the tool map: connect, project, pin and judge drift, wake from
// storage, search (Search over the map's trusted text; Options.SearchTool
// hands a model mcp__search_tools), call. What a gateway relays beyond tools (resources, prompts,
// per-caller upstream sessions, tool calls as bytes) is package
// gateway/internal/relay, built on this package's lower half (Upstream, Target,
// SessionHooks, and Pipe for a stdio server's calls as bytes); an agent that
// only calls tools links none of it.
//
// A Toolset is lazy: Open checks the wiring and computes names, but performs
// no I/O; the first Tools, Call, SystemPrompt or Connect connects every server
// in parallel, each with its own timeout. A server that cannot be launched,
// reached or initialized is skipped with a diagnostic and its siblings go on;
// one that could not be reached is tried again while it is open (Recheck).
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
//
// # Drift, storage and wake
//
// Every listing (first use, Reconcile, a reconnect's re-listing, a
// list_changed, the background recheck of Options.Recheck) is
// fingerprinted with package pin and judged against the server's trust
// baseline in Options.Store (any store.Store; nil keeps baselines in the
// Toolset for its life). On first sight the baseline is recorded;
// afterwards a changed tool is quarantined (it keeps its name, gets pin.QuarantineDescription and an
// empty schema, and calls to it fail with ErrQuarantined), an added tool is
// withheld, a removed one dropped (calls fail with ErrToolWithdrawn), each
// with a tool-drift diagnostic; a changed instructions fingerprint is a
// tool-drift diagnostic too. No drifted text reaches Tools, Describe,
// SystemPrompt, mcp__describe_tool, diagnostics or logs. Baselines are
// insert-only; a trust (Retrust, or store.DriftStore.TrustListing of a
// reviewed observation) replaces one, and WatchTrust notices it in another
// process. A listing that drifted is recorded in the store as an
// observation (Options.Instance names who saw it), and every toolset on the
// store enforces what the others recorded: a tool another instance saw
// change is quarantined here too, until a trust.
//
// Prompts and resource templates are pinned in the same baseline, under
// their own kinds (store.KindPrompt, store.KindTemplate), so any tool name
// is pinned too. Every listing of them, including what a relay lists live
// (Upstream.AdmitPrompts, AdmitTemplates), is judged: a changed one is not
// served and its requests are refused (Upstream.QuarantinedPrompt); a new
// one is withheld (unknown); a removed one disappears; each is a drift
// event (Drift) and a tool-drift diagnostic. Plain resources are not
// pinned.
//
// A server's row ID is trust.RowID(config) ("<plugin>/<server>", or
// "config:<server>" without a plugin) unless Server.ID sets one. A row
// holds the id, name, transport type, the URL without userinfo, query or
// fragment (empty for stdio), the last published catalogue and the
// baseline; never a token, header, auth output or environment.
//
// With Options.Wake, the first use builds the map from the stored
// catalogues with no request to any server and no launch, then reconciles
// in the background (AwaitReconcile waits; DeferReconcile leaves it to the
// first Call of each server, or to Reconcile). Tools returns snapshots: a
// reconcile corrects the map in place for the next Tools and every Call,
// never a slice already returned. A server without a row, or whose row's
// type or URL no longer matches the configuration, is not connected at all
// (a connection-failure diagnostic); a stored catalogue that no longer
// parses is dropped until the reconcile lists the server again. OnChange
// tells a caller (the gateway) that the map changed.
package toolset
