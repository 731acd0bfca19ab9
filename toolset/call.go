package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/gatehouse-dev/gatehouse/internal/projection"
	"github.com/gatehouse-dev/gatehouse/pin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// reservedMetaPrefix marks _meta keys the protocol reserves; callers never
// get to forward them.
const reservedMetaPrefix = "io.modelcontextprotocol/"

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
		var te *Error
		if errors.As(err, &te) {
			return nil, err
		}
		return nil, &Error{Code: CodeCallFailed, Tool: name, Err: err}
	}
	e, err := t.callable(cat, name)
	if err != nil {
		return nil, err
	}
	arguments, err := normalizeArgs(args)
	if err != nil {
		return nil, &Error{Code: CodeInvalidArguments, Server: e.info.Server, Tool: name, Err: err}
	}
	if e.describe {
		return t.describeCall(cat, arguments)
	}
	if t.pending(e.conn) {
		// Woken from the store and not reconciled yet: list the server
		// and judge its contracts before the first call reaches it.
		if err := e.conn.reconcile(ctx, true); err != nil {
			var te *Error
			if errors.As(err, &te) {
				te.Tool = name
			}
			return nil, err
		}
		if e, err = t.callable(t.current(), name); err != nil {
			return nil, err
		}
	}
	return e.conn.call(ctx, name, e.info.RemoteName, arguments, info)
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
			Err: fmt.Errorf("MCP tool %s is quarantined: its contract on server %s changed after it was trusted, so calls are refused until an operator reviews the change and re-trusts the server (gatehouse trust %s)", name, s, s)}
	}
	return e, nil
}

// normalizeArgs checks that args will encode to a JSON object.
func normalizeArgs(args any) (any, error) {
	switch a := args.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return a, nil
	case json.RawMessage:
		return rawObject(a)
	case []byte:
		return rawObject(a)
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return rawObject(b)
}

func rawObject(b []byte) (any, error) {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil
	}
	if t[0] != '{' || !json.Valid(t) {
		return nil, errors.New("arguments must be a JSON object")
	}
	return json.RawMessage(t), nil
}

// callMeta builds a fresh _meta map for one attempt.
func callMeta(info CallInfo) map[string]any {
	m := make(map[string]any, len(info.Meta)+1)
	for k, v := range info.Meta {
		if strings.HasPrefix(k, reservedMetaPrefix) {
			continue
		}
		m[k] = v
	}
	if info.RunID != "" && info.ToolCallID != "" {
		m["idempotencyKey"] = info.RunID + ":" + info.ToolCallID
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

func (c *conn) call(ctx context.Context, name, remote string, args any, info CallInfo) (*mcp.CallToolResult, error) {
	fail := func(code string, err error) error {
		return &Error{Code: code, Server: c.name, Tool: name, Err: err}
	}
	if err := c.refreshToken(ctx); err != nil {
		return nil, fail(CodeAuthFailed, err)
	}
	st := c.ts.callerState(info.Caller)
	if st != nil {
		ctx = context.WithValue(ctx, callerCtxKey{}, st)
	}
	var token string
	if info.ProgressToken != nil && st != nil {
		var release func()
		token, release = c.ts.newProgressToken(st, info.ProgressToken)
		defer release()
	}
	sess, dedicated, err := c.ts.sessionFor(ctx, c, st)
	if err != nil {
		return nil, fail(CodeConnectionFailed, err)
	}
	for attempt := 0; ; attempt++ {
		// A fresh params value per attempt: the go-sdk writes into Meta.
		params := &mcp.CallToolParams{Name: remote, Arguments: args, Meta: callMeta(info)}
		if token != "" {
			if params.Meta == nil {
				params.Meta = map[string]any{}
			}
			params.Meta["progressToken"] = token
		}
		res, err := sess.CallTool(ctx, params)
		if err == nil {
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, fail(CodeCallFailed, ctx.Err())
		}
		if streamEnded(err) {
			return nil, fail(CodeCallFailed, fmt.Errorf("%w (%v)", ErrStreamEnded, err))
		}
		if attempt > 0 || !sessionLost(err) {
			return nil, fail(CodeCallFailed, err)
		}
		c.ts.log.Info("toolset: session lost; reconnecting once", "server", c.name, "tool", name, "err", err)
		shared := sess
		if dedicated {
			c.ts.dropDedicated(c, st, sess)
			shared = c.liveSession()
		}
		// The shared session re-lists and judges the server's tools: a
		// restarted server is checked before the call goes out again.
		if shared != nil && (!dedicated || shared.Ping(ctx, nil) != nil) {
			// The new session is shared: it must not carry this caller's
			// request values (e.g. its negotiated protocol revision).
			if _, err = c.reconnect(valuesFree{ctx}, shared); err != nil {
				return nil, fail(CodeConnectionFailed, fmt.Errorf("reconnecting: %w", err))
			}
			c.ts.resubscribe(ctx, c)
		}
		if sess, dedicated, err = c.ts.sessionFor(ctx, c, st); err != nil {
			return nil, fail(CodeConnectionFailed, fmt.Errorf("reconnecting: %w", err))
		}
		// The new session's listing may have changed the tool.
		if e, err := c.ts.callable(c.ts.current(), name); err != nil {
			return nil, err
		} else if e.conn != c || e.info.RemoteName != remote {
			return nil, &Error{Code: CodeToolWithdrawn, Server: c.name, Tool: name,
				Err: fmt.Errorf("MCP tool %s is no longer published by server %s", name, pin.SanitizeName(c.name))}
		}
	}
}

// streamEnded reports the go-sdk client's error for a call whose response
// stream the server ended without answering and without an event ID (it
// has no exported value for it).
func streamEnded(err error) bool {
	return strings.HasSuffix(err.Error(), "request terminated without response")
}

// sessionLost reports errors after which a new session may succeed.
func sessionLost(err error) bool {
	return errors.Is(err, mcp.ErrSessionMissing) || errors.Is(err, mcp.ErrConnectionClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.EPIPE) // a dead stdio child: the request was never read
}

// describeCall answers mcp__describe_tool locally.
func (t *Toolset) describeCall(cat *catalog, args any) (*mcp.CallToolResult, error) {
	var in struct {
		Name string `json:"name"`
	}
	if args != nil {
		b, _ := json.Marshal(args)
		_ = json.Unmarshal(b, &in)
	}
	e, ok := cat.byName[in.Name]
	if !ok || e.describe {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
			Text: fmt.Sprintf("unknown tool %q: pass a tool name exactly as listed", in.Name)}}}, nil
	}
	out := map[string]any{
		"name":        e.info.Name,
		"description": e.info.Description,
		"inputSchema": projection.ReduceSchema(e.full, projection.Inline),
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, &Error{Code: CodeCallFailed, Tool: in.Name, Err: err}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: out}, nil
}
