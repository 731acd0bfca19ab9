package toolset

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset/internal/transport"
)

// A Pipe sends requests to a stdio server's shared session as bytes,
// beside the go-sdk's client that owns the session: each request has an ID
// of its own (a JSON string the go-sdk's client never uses), is written
// between the client's messages, and its answer is taken out of the
// server's output before the client reads it, exactly as the server wrote
// it. Notifications and the server's requests reach the session as
// before. Get one from Upstream.Pipe.
type Pipe struct {
	p *transport.Pipe
	s *mcp.ClientSession
}

// Pipe returns the Pipe of the server's shared session, or nil when the
// server is not a stdio server, has no judged shared session now, is one
// woken from the store and not yet listed again (its first call must go
// through the drift checks: use Session), or its pipe has ended (its
// connection closed).
func (u *Upstream) Pipe() *Pipe {
	c := u.c
	if c.ts.pending(c) {
		return nil
	}
	c.mu.Lock()
	p := c.pipe
	ok := p != nil && p.s == c.session && !c.unjudged
	c.mu.Unlock()
	if !ok || !p.p.Open() {
		return nil
	}
	return p
}

// Session returns the shared session the pipe writes to.
func (p *Pipe) Session() *mcp.ClientSession { return p.s }

// Call writes one JSON-RPC request, the bytes message appends to b for the
// request ID id (a JSON string, quotes included; the message must be one
// line), and waits for its answer: the "result" value as the server wrote
// it, or the server's JSON-RPC error as a *jsonrpc.Error. sent is false
// when nothing was written (the session ended meanwhile). When ctx ends
// first, the server is sent notifications/cancelled for the request and
// ctx's error is returned. When the connection ends while the call waits,
// the error is one SessionLost reports.
func (p *Pipe) Call(ctx context.Context, message func(b, id []byte) []byte) (result json.RawMessage, sent bool, err error) {
	return p.p.Call(ctx, message)
}
