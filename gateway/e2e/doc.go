// Package e2e holds the end-to-end tests of `gatehouse serve`: they build
// the real binary once (TestMain), start it in front of real MCP servers
// (the internal/fixture/testserver fixture over stdio and HTTP,
// internal/fixture/slowmcp, internal/fixture/fwdmcp,
// and @modelcontextprotocol/server-everything when npx is available), and
// drive it with the official go-sdk client over HTTP with real bearer
// tokens. The admin commands run as real processes against the same store.
//
// GATEHOUSE_TEST_POSTGRES enables the two-replica tests; they skip with a
// message when it is unset.
package e2e
