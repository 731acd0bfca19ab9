// Package relay carries MCP traffic between the sessions a gateway serves
// and the upstream servers of a toolset: everything beyond the tool map
// itself.
//
//	r, err := relay.Open(ctx, servers, &toolset.Options{Store: st}, &relay.Options{
//		Subject: identify, Visible: visible,
//	})
//	srv := mcp.NewServer(impl, r.ServerOptions(&mcp.ServerOptions{}))
//	r.Setup(srv, false) // resources, prompts, completion, logging, sessions
//	...
//	tg, err := r.Toolset().Target(ctx, "github__create_issue")
//	res, err := r.CallTool(ctx, tg, relay.Call{Args: args, Caller: caller})
//
// What it relays:
//
//   - Calling sessions. Every session of the go-sdk servers the relay is
//     set up on is a Caller. A caller that can answer server-initiated
//     requests (it advertised sampling or elicitation on a stateful
//     revision) or that set a logging level gets upstream sessions of its
//     own, one per server; the others share the toolset's one session per
//     server. Every upstream session announces the capabilities the relay
//     routes (RoutableCapabilities), so each lists what the shared one
//     does; a server's request reaches the caller only for a capability
//     the caller announced. A caller's resource subscriptions are held on
//     its own session to the server when it has one (its updates reach it
//     alone), else on the shared one.
//   - Tools a server offers only to clients with sampling, elicitation or
//     roots (Classify, Needs, Allows): learned by listing the server on
//     sessions that announce less; a caller sees and calls one only when
//     it announced what the tool needs, and its calls go through the
//     caller's own session. Those sessions are
//     capped per server and per subject and server
//     (Options.UpstreamPerServer, Options.UpstreamPerSubject): a caller
//     over a cap shares the server's session (its calls work; its
//     logging/setLevel answers CodeUpstreamCap) until a slot frees.
//   - Tool calls, two ways: CallTool through the go-sdk's client (any
//     transport, any caller), and CallBytes, which sends the arguments and
//     returns the result as bytes on a shared streamable HTTP session
//     (BytesReady says when it can). Both re-establish a lost session once
//     through the toolset's drift checks.
//   - Resources and resource templates (list, read, subscribe, updates),
//     prompts (list, get), completion, logging levels and messages,
//     progress, list_changed, and the server-to-client requests (sampling,
//     elicitation, roots), routed back to the calling session that caused
//     them.
//
// Authorization: a caller sees the resources, templates and prompts of a
// server when Options.Visible says so (the gateway: when it may see at
// least one tool of that server). Resource URIs are global identifiers and
// are not renamed: they are routed by the map URI -> server of the last
// listing (then by template), and a URI two servers publish is withheld
// from both. Prompts are projected like tools (prefix__name). Prompts and
// templates are judged against their server's pins as they are listed
// (toolset.Upstream.AdmitPrompts): only trusted ones are listed and
// routed, and a changed one's requests are refused as quarantined.
package relay
