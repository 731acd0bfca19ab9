// Package server exposes Go tools over MCP with the protections a tool
// server needs and the official go-sdk does not decide for you.
//
//	srv, err := server.New(server.Options{
//		Tools:     map[string]server.Tool{"charge": server.NewTool(&mcp.Tool{Description: "Charge an account."}, charge)},
//		Identify:  identify,  // what the transport verified -> a Subject
//		AllowTool: allowTool, // one answer for tools/list and tools/call
//		RateLimit: &server.RateLimit{MaxCalls: 100, Window: time.Minute},
//	})
//	defer srv.Close()
//	h, err := srv.Handler(&server.HTTPOptions{Verifier: verify}) // or srv.ServeStdio(ctx)
//	err = http.ListenAndServe("127.0.0.1:8080", h)
//
// A server has to answer five questions, and answering one does not answer
// the next:
//
//  1. Is this credential real? The transport answers: on HTTP, the
//     [HTTPOptions.Verifier] behind the go-sdk's auth.RequireBearerToken; on
//     stdio, the process boundary (whoever started the process is trusted).
//  2. Who is calling? [Options.Identify] maps what the transport
//     authenticated (the request's auth.TokenInfo, never the request body and
//     never context values of the request that opened the session) to a
//     [Subject].
//  3. May they call this tool? [Options.AllowTool], applied to tools/list and
//     tools/call alike. A hidden tool is answered exactly as a missing one.
//  4. Is this object theirs? Only the tool knows: it receives a sealed
//     [Caller] carrying the subject.
//  5. Are they calling too much? [Options.RateLimit] (per subject, in
//     process or shared by several processes through store counters) or
//     [Options.RateLimitFunc]. A shared limit is exact over every process
//     without a store write per call: each process takes permits in
//     blocks and gives back what it leaves unspent (see
//     [RateLimit.Counters] for what that costs at the edges).
//
// With a [durable.Journal], a tools/call carrying a work key (by default the
// client's _meta.idempotencyKey) is a unit of work named by the subject, the
// tool and the key: a repeat returns the first outcome, a concurrent repeat
// gets run_busy and the same key with other arguments gets key_reused. A
// client-chosen key alone never names work across callers.
//
// With [Options.DeferCallAdmission] the middleware still filters tools/list
// but passes every tools/call on unadmitted: each tool handler (or a front
// that reads calls outside the go-sdk's request flow) admits its own call
// with [Server.AdmitCall], which applies identity, the rate limit and
// authorization in the middleware's order and answers as it would; the
// subject it returns stands in for the [Caller], which such handlers do not
// get. The gateway sets it so that one pipeline admits every call,
// whichever front read it. It cannot be combined with a Journal.
//
// A subject's sessions are bounded too: with [Options.MaxSessionsPerSubject]
// an initialize beyond the cap is refused with a JSON-RPC error
// ([CodeSessionLimit]) that says why, and a session frees its slot when it
// ends. Every initialize spends one call of the subject's rate limit.
//
// [NewHTTPServer] serves a handler with [HTTPLimits]: how long a client may
// take to send a request, how long a write may wait for it to read (per
// write, so that an SSE stream lasts as long as it has something to say),
// how long idle connections live (shorter for those that never
// authenticated), and how many are open at once. It is the one policy of
// every listener of a process: `gatehouse serve` splits the process's
// file-descriptor limit among its listeners' caps, keeping a reserve for
// everything else, so that no listener's flood starves another or the
// process. Its Serve reads each connection with an HTTP/1.1 loop of its
// own that serves the plain POST and DELETE requests of an MCP client
// (parsed by net/http's parser, under the same limits), and hands any
// other request, with the connection, to net/http's server: a call then
// costs no goroutine watching its connection unless it runs long.
//
// Everything is built from go-sdk receiving middleware around an ordinary
// [mcp.Server]: schema validation, progress, cancellation and the rest of the
// protocol stay the go-sdk's.
package server
