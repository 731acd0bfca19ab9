// Package console is the operator web console of a Gatehouse gateway
// (docs/console.md): server-rendered pages over the same store the CLI,
// the audit trail and the metrics read, on a listener of its own.
//
// It shows the calls waiting for approval (caller, tool, arguments, key)
// and decides them; the unreviewed drift of each server, rendered as
// `gatehouse drift show` renders it, and trusts exactly the listing shown;
// the runs and calls of a subject (each call's tool, the idempotency key
// as the caller sent it, its outcome and journal record), and purges
// them; the servers and their health (from the running gateway, through
// Options.Servers); the audit log with filters and its verification. Every decision, trust and purge
// is recorded in the decision itself (DecideApproval's decider) and on the
// audit trail's operators' chain under the operator's name.
//
//	h, err := console.New(&console.Options{Store: st, Admins: []console.Admin{{Name: "alice", SHA256: hash}}})
//	err = console.Serve(ctx, ln, h, nil) // until ctx ends; nil: the default limits (server.NewHTTPServer)
//
// Security: operators log in with a token whose SHA-256 the config holds
// (compared in constant time), or, with Options.VerifyAdmin, with an OAuth
// access token the gateway verifies and finds holding its admin scope (the
// operator then being the token's subject, the session ending at the
// token's expiry at the latest); a login is a random session ID in an
// HttpOnly, SameSite=Strict cookie (Secure over TLS or with
// Options.SecureCookies) naming a server-side session that expires; failed
// logins are throttled per client address (MaxFailedLogins). Every
// state-changing request is a POST carrying the session's synchronizer
// token and passing net/http's cross-origin protection (Sec-Fetch-Site,
// Origin); GETs change nothing. Every response carries a strict Content
// Security Policy (no inline script or style), nosniff and no-referrer.
// Whatever came from an upstream (names, descriptions, arguments, diffs)
// is escaped by html/template and shown with its hidden characters made
// visible (pin.Visible).
//
// Live updates: GET /events is a server-sent event stream that tells a
// page when the pending approvals or the unreviewed drift changed (the
// store is polled once a second per stream; the streams are bounded and
// end with their client or with the context Serve was given).
package console
