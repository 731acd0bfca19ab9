package toolset

//lint:file-ignore SA1019 forwarding sampling, elicitation, roots and logging (deprecated by SEP-2577, still in 2025-11-25) is this file's job.

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// routedTransport wraps an upstream transport so that progress and log
// notifications are routed to their caller as they are read, in wire
// order: the go-sdk client queues notifications for a handler goroutine
// while it hands responses over at once, so a handler could see a call's
// progress after the call returned (and after its caller was answered).
type routedTransport struct {
	inner mcp.Transport
	t     *Toolset
	owner *callerState // the dedicated session's caller; nil when shared
}

func (r *routedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := r.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &routedConn{Connection: c, t: r.t, owner: r.owner}, nil
}

type routedConn struct {
	mcp.Connection
	t     *Toolset
	owner *callerState
}

func (c *routedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return msg, err
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.IsCall() {
		return msg, nil
	}
	switch req.Method {
	case "notifications/progress":
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(req.Params, &p) == nil {
			c.t.routeProgress(context.Background(), &p)
		}
	case "notifications/message":
		var p mcp.LoggingMessageParams
		if json.Unmarshal(req.Params, &p) == nil {
			if c.owner != nil && c.owner.caller.Handlers.Log != nil {
				c.owner.caller.Handlers.Log(context.Background(), &p)
			} else {
				c.t.log.Debug("toolset: upstream log message without a caller", "level", string(p.Level))
			}
		}
	}
	return msg, nil
}
