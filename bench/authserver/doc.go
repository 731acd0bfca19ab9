// Command authserver is the authorization server of the OAuth benchmarks: a
// real OAuth 2.1 / OpenID provider (internal/fixture/authserver, the
// zitadel/oidc provider) on 127.0.0.1 that mints one long-lived JWT access
// token for a resource and serves the metadata and keys a gateway verifies it
// with, until it is stopped.
//
//	authserver -resource http://127.0.0.1:18185/mcp -token-file /tmp/tok
//
// At start it obtains the token by the client_credentials grant over HTTP
// (RS256, aud the -resource, scope the -scope values, sub -subject, valid for
// -lifetime), writes it to -token-file (mode 0600, one line), prints
//
//	issuer=http://127.0.0.1:PORT
//
// on stdout and serves the OpenID discovery metadata
// (/.well-known/openid-configuration) and the JWKS (/keys) until SIGINT or
// SIGTERM. The token never appears on stdout, stderr or a command line:
// bench/mcpload reads it with -token-file.
//
// It listens on a free loopback port only. Exit codes: 0 after a signal, 1
// when it could not start, 2 for a bad command line.
package main
