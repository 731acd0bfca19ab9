package toolset

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/toolset/internal/callargs"
)

// Call calls the tool registered under name (a projected name from Tools)
// and returns the server's result untouched: a tool that fails reports it in
// the result (IsError), not as a Go error.
//
// args is nil, a map[string]any, a json.RawMessage or []byte holding a JSON
// object (passed through without re-encoding), or any value that encodes to
// a JSON object. Call never modifies args or info.Meta.
//
// The call carries info.Meta without reserved io.modelcontextprotocol/ keys,
// plus _meta.idempotencyKey = RunID + ":" + ToolCallID when both are set.
// Cancelling ctx cancels the call on the server (notifications/cancelled).
//
// If the server's session is lost (mcp.ErrSessionMissing, or a closed
// connection: a stdio server that died, an HTTP server that restarted), Call
// reconnects once and sends the call again before failing. A call that the
// old server had received may therefore reach a server twice; the
// idempotency key and the durable journal are what guard effects.
//
// Errors are *Error values: ErrUnknownTool, ErrInvalidArguments,
// ErrAuthFailed, ErrConnectionFailed, ErrCallFailed (which wraps ctx.Err()
// when the caller gave up), ErrClosed.
func (t *Toolset) Call(ctx context.Context, name string, args any, info CallInfo) (*mcp.CallToolResult, error) {
	cat, err := t.ensure(ctx)
	if err != nil {
		return nil, t.callErr(name, err)
	}
	e, err := t.callable(cat, name)
	if err != nil {
		return nil, err
	}
	arguments, err := callargs.Normalize(args)
	if err != nil {
		return nil, &Error{Code: CodeInvalidArguments, Server: e.info.Server, Tool: name, Err: err}
	}
	if e.meta != "" {
		return t.ownCall(cat, e.meta, arguments)
	}
	tg, err := t.Target(ctx, name)
	if err != nil {
		return nil, err
	}
	return t.callTarget(ctx, tg, arguments, info)
}

// callErr is the error of a call whose tool map could not be loaded.
func (t *Toolset) callErr(name string, err error) error {
	var te *Error
	if errors.As(err, &te) {
		return err
	}
	return &Error{Code: CodeCallFailed, Tool: name, Err: err}
}

// current returns the current catalog (nil before the first load).
func (t *Toolset) current() *catalog {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cat
}

// callable finds name in cat and refuses quarantined and withdrawn tools.
func (t *Toolset) callable(cat *catalog, name string) (*entry, error) {
	e, ok := cat.byName[name]
	if !ok {
		if w, gone := cat.withdrawn[name]; gone {
			return nil, &Error{Code: CodeToolWithdrawn, Server: w.server, Tool: name,
				Err: fmt.Errorf("MCP tool %s is no longer published by server %s", name, pin.SanitizeName(w.server))}
		}
		return nil, &Error{Code: CodeUnknownTool, Tool: name}
	}
	if e.info.State == Quarantined {
		s := pin.SanitizeName(e.info.Server)
		return nil, &Error{Code: CodeQuarantined, Server: e.info.Server, Tool: name,
			Err: fmt.Errorf("MCP tool %s is quarantined: its contract on server %s changed after it was trusted, so calls are refused until %s", name, s, pin.TrustRemedy(s, ""))}
	}
	return e, nil
}

// callTarget sends one call on the shared session of the target's server,
// re-establishing a lost session once (through the drift checks).
func (t *Toolset) callTarget(ctx context.Context, tg Target, args any, info CallInfo) (*mcp.CallToolResult, error) {
	u := tg.Upstream
	fail := func(code string, err error) error {
		return &Error{Code: code, Server: u.Name(), Tool: tg.Tool, Err: err}
	}
	if err := u.Authorize(ctx); err != nil {
		return nil, err
	}
	gen := u.Generation()
	sess, err := u.Session(ctx)
	if err != nil {
		return nil, fail(CodeConnectionFailed, err)
	}
	if u.Generation() != gen {
		// A new session was listed and judged first: the tool may have
		// changed with it.
		if err := t.Recheck(tg); err != nil {
			return nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		// A fresh params value per attempt: the go-sdk writes into Meta.
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tg.Remote, Arguments: args, Meta: callargs.Meta(info.Meta, info.RunID, info.ToolCallID)})
		if err == nil && res.InputRequests != nil {
			// A multi round-trip result: the shared session answers no
			// input request (newSharedClient), and Call has no caller to ask.
			return nil, fail(CodeCallFailed, fmt.Errorf("the server asked for input (%d input requests) and this client cannot answer them", len(res.InputRequests)))
		}
		if err == nil {
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, fail(CodeCallFailed, ctx.Err())
		}
		if StreamEnded(err) {
			return nil, fail(CodeCallFailed, fmt.Errorf("%w (%v)", ErrStreamEnded, err))
		}
		if be, ok := AsBadAnswer(err); ok {
			be.Server, be.Tool = u.Name(), tg.Tool
			return nil, be // the call failed and may have run: never re-sent
		}
		if attempt > 0 || !SessionLost(err) {
			return nil, fail(CodeCallFailed, err)
		}
		t.log.Info("toolset: session lost; reconnecting once", "server", u.Name(), "tool", tg.Tool, "err", err)
		// The new session re-lists and judges the server's tools: a
		// restarted server is checked before the call goes out again.
		if sess, err = u.Reconnect(ctx, sess); err != nil {
			return nil, fail(CodeConnectionFailed, fmt.Errorf("reconnecting: %w", err))
		}
		if err := t.Recheck(tg); err != nil {
			return nil, err
		}
	}
}

// ErrStreamEnded is the error (inside an *Error) of a call whose server
// ended the call's response stream without answering and without an event
// ID to resume it by: the call may still be running there, and its
// answer, if any, goes nowhere the client listens. A gateway mirrors it to
// its caller (it ends the caller's stream the same way).
var ErrStreamEnded = errors.New("toolset: the server ended the response stream without answering, with no event ID to resume it")

// StreamEnded reports the go-sdk client's error for a call whose response
// stream the server ended without answering and without an event ID. The
// go-sdk exports no value for it, so this is the one place that reads its
// text (TestStreamEndedText fails when the go-sdk changes it).
func StreamEnded(err error) bool {
	return err != nil && strings.HasSuffix(err.Error(), "request terminated without response")
}
