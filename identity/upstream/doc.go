// Package upstream is the MCP authorization client Gatehouse uses toward
// upstream servers that require OAuth (the MCP authorization flow): an
// [auth.OAuthHandler] per server, built on the go-sdk's
// [auth.AuthorizationCodeHandler] and its oauthex helpers, never beside
// them.
//
//	h, err := upstream.New(hc, &upstream.Options{
//		Client:      &oauthex.ClientCredentials{ClientID: "my-agent"},
//		RedirectURL: "http://127.0.0.1:8765/callback",
//		Fetch:       openBrowserAndWait,
//	})
//	t := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, OAuthHandler: h}
//
// An agent on package toolset sets toolset.Server.OAuth to [Factory]: the
// toolset hands the handler the egress guard's client it built for that
// server.
//
// # What the go-sdk does
//
// On a 401 (or a 403 with insufficient_scope) the handler discovers the
// protected resource metadata (RFC 9728: the WWW-Authenticate
// resource_metadata, then the well-known paths; its resource must be the
// server's URL), the authorization server's metadata (RFC 8414, then OpenID
// discovery, path-inserted and appended; its issuer must be the one the
// resource named; PKCE must be advertised; endpoints must be https or
// loopback and not a non-public address literal), and falls back to the
// 2025-03-26 rules (the server's origin as the authorization server, its
// /authorize, /token and /register) when there is no resource metadata.
// It registers as a Client ID Metadata Document where supported, else the
// pre-registered client, else by dynamic registration. It sends the user
// through the authorization-code grant with PKCE S256 and the resource
// parameter (RFC 8707), the scopes of the challenge (else the metadata's
// scopes_supported) plus offline_access when supported, checks state and
// the RFC 9207 iss, exchanges the code and refreshes the token.
//
// # What this package adds
//
//   - Every request the handler makes (metadata, registration, token,
//     refresh) is made with the HTTP client it is given, which must be the
//     egress guard's: an authorization server or token endpoint on a
//     private, link-local or metadata address is refused at dial time
//     unless its host is on the allowed list. The authorization URL handed
//     to the [Fetcher] is refused when its host is a non-public,
//     non-loopback address literal; [Walk] requests it through the guard.
//   - Step-ups are bounded: one challenged scope set causes at most
//     Options.MaxStepUps authorizations (default 2), the handler's life 8
//     times that, then [ErrStepUpLimit]. (The go-sdk's transport already
//     retries one request at most once.)
//   - A [TokenStore] keeps the token set per (server, subject): a new
//     handler starts from it and refreshes it, every new token is put
//     back, and a refresh token the server refuses (invalid_grant) deletes
//     the set, so the next request authorizes again.
//   - One refresher at a time: when the TokenStore is also a
//     [RefreshLocker] (the gateway's vault), a Handler whose token expired
//     takes the lock, re-reads the stored set (another replica may have
//     refreshed it: that one is used), refreshes and writes back before
//     unlocking; one that cannot get the lock waits briefly and re-reads.
//     A set that disappeared meanwhile (revoked) is not brought back with
//     the refresh token the Handler holds: [ErrTokenGone].
//
// # What it does not promise
//
//   - The user's browser is not behind the egress guard: an authorization
//     endpoint named by a hostname is where the user is sent, wherever it
//     resolves for them.
//   - A resource metadata document whose resource does not match is
//     refused, and discovery goes on as the go-sdk does (the next
//     well-known URL, then the 2025-03-26 fallback to the server's own
//     origin): the mismatched document's authorization server is never
//     used, but the server's origin may be.
//   - Tokens in a [MemoryTokens] are in memory in the clear; a store that
//     keeps them elsewhere must encrypt them (the gateway's vault).
package upstream
