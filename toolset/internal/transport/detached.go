package transport

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Detached connects a transport whose connection lives in the
// Connect context (the legacy SSE client opens its event stream with it):
// the connection outlives the connect timeout, is abandoned if ctx ends
// before Connect returns, and ends with the toolset at the latest.
type Detached struct {
	Inner mcp.Transport
	Life  context.Context
}

func (d *Detached) Connect(ctx context.Context) (mcp.Connection, error) {
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopLife := context.AfterFunc(d.Life, cancel)
	stop := context.AfterFunc(ctx, cancel)
	conn, err := d.Inner.Connect(lctx)
	if !stop() || err != nil {
		stopLife()
		cancel()
		if err == nil {
			_ = conn.Close()
			err = ctx.Err()
		}
		return nil, err
	}
	return &cancelConn{Connection: conn, cancel: func() { stopLife(); cancel() }}, nil
}

// cancelConn releases its context when closed.
type cancelConn struct {
	mcp.Connection
	cancel func()
}

func (c *cancelConn) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}
