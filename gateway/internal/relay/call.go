package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// Call is one tools/call a relay sends for a caller.
type Call struct {
	// Args are the arguments: a JSON object's bytes, or nil.
	Args json.RawMessage
	// Meta is the caller's _meta to forward, or MetaJSON when Meta is nil:
	// the bytes of a JSON object. Keys the protocol reserves
	// (io.modelcontextprotocol/...) are dropped either way; the caller
	// removes the ones it consumed.
	Meta     map[string]any
	MetaJSON json.RawMessage
	// Key, when set, is sent as _meta.idempotencyKey.
	Key string
	// Caller is the calling session the call is made for (nil: none): its
	// upstream session carries the call when it has one, and what the
	// server sends about the call is routed to it.
	Caller *Caller
	// ProgressToken, when set, is the caller's progress token: the call
	// carries a token of the relay's, and the server's progress
	// notifications reach the caller with this one.
	ProgressToken any
	// Input, for a multi round-trip retry of a caller that takes input
	// (Caller.TakesInput), holds its answers and the server's own state
	// (OpenRetry opened the caller's): they are sent with the call.
	Input Retry
}

// meta returns the call's _meta as a fresh map for one attempt (the go-sdk
// writes into it): the caller's without reserved keys, plus the key.
func (c *Call) meta() (map[string]any, error) {
	src := c.Meta
	if src == nil && len(c.MetaJSON) > 0 {
		if err := json.Unmarshal(c.MetaJSON, &src); err != nil {
			return nil, fmt.Errorf("_meta: %w", err)
		}
	}
	m := make(map[string]any, len(src)+2)
	for k, v := range src {
		if strings.HasPrefix(k, reservedMetaPrefix) {
			continue
		}
		m[k] = v
	}
	if c.Key != "" {
		m["idempotencyKey"] = c.Key
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// Params returns the tools/call params CallTool sends for c to the remote
// tool: the arguments, the _meta without reserved keys, with the key,
// and a multi round-trip retry's answers and the server's own state. For
// a sender of the gateway's own (per-subject upstream sessions).
func (c *Call) Params(remote string) (*mcp.CallToolParams, error) {
	meta, err := c.meta()
	if err != nil {
		return nil, err
	}
	p := &mcp.CallToolParams{Name: remote, Meta: meta, InputResponses: c.Input.Responses, RequestState: c.Input.State}
	if len(c.Args) > 0 {
		p.Arguments = c.Args
	}
	return p, nil
}

// CallTool sends a tools/call to tg through the go-sdk's client: on the
// caller's own upstream session when it has one (or the tool is offered
// for a capability: Needs), else on the shared one. A server's input
// requests (a multi round-trip result) are fulfilled through the caller's
// own session, returned untouched to a caller that takes input
// (Caller.TakesInput; its state is for the caller of CallTool to seal),
// and refused for any other.
// A lost session is re-established once (the shared one through the drift
// checks, after which the target is checked again: a refusal then is a
// *toolset.Error with CodeQuarantined or CodeToolWithdrawn, and nothing
// was sent again). The server's result is returned untouched.
//
// Errors are *toolset.Error values, as toolset.Call's.
func (r *Relay) CallTool(ctx context.Context, tg toolset.Target, c Call) (*mcp.CallToolResult, error) {
	u := tg.Upstream
	fail := func(code string, err error) error {
		return &toolset.Error{Code: code, Server: u.Name(), Tool: tg.Tool, Err: err}
	}
	var args any
	if len(c.Args) > 0 {
		args = c.Args
	}
	if err := u.Authorize(ctx); err != nil {
		return nil, fail(toolset.CodeAuthFailed, errors.Unwrap(err))
	}
	st := r.callerState(c.Caller)
	if st != nil {
		ctx = context.WithValue(ctx, callerCtxKey{}, st)
	}
	var token string
	if c.ProgressToken != nil && st != nil {
		var release func()
		token, release = r.newProgressToken(st, u.Name(), c.ProgressToken)
		defer release()
	}
	// A tool offered for sampling, elicitation or roots (see Classify) is
	// called on the caller's own session, whose requests reach it.
	own := r.needs(u, tg.Remote) != 0
	gen := u.Generation()
	sess, dedicated, err := r.sessionOfCall(ctx, u, st, own)
	if err != nil {
		return nil, sessionErr(u, tg.Tool, err)
	}
	if u.Generation() != gen {
		// A session was judged on its way (the shared one connected anew,
		// a caller's own): the tool may have changed with it.
		if err := r.ts.Recheck(tg); err != nil {
			return nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		meta, err := c.meta()
		if err != nil {
			return nil, fail(toolset.CodeInvalidArguments, err)
		}
		if token != "" {
			if meta == nil {
				meta = map[string]any{}
			}
			meta["progressToken"] = token
		}
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tg.Remote, Arguments: args, Meta: meta,
			InputResponses: c.Input.Responses, RequestState: c.Input.State})
		if err == nil && res.InputRequests != nil {
			// The server asks for input (a shared session passes it on):
			// the caller's to answer when it takes input (the pipeline
			// seals the state), else not forwarded.
			if err := passInput(c.Caller, res.InputRequests); err != nil {
				return nil, fail(toolset.CodeCallFailed, err)
			}
			return res, nil
		}
		if err == nil {
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, fail(toolset.CodeCallFailed, ctx.Err())
		}
		if toolset.StreamEnded(err) {
			return nil, fail(toolset.CodeCallFailed, fmt.Errorf("%w (%v)", toolset.ErrStreamEnded, err))
		}
		if attempt > 0 || !toolset.SessionLost(err) {
			return nil, fail(toolset.CodeCallFailed, err)
		}
		r.log.Info("relay: session lost; reconnecting once", "server", u.Name(), "tool", tg.Tool, "err", err)
		shared := sess
		if dedicated {
			r.dropDedicated(u, st, sess)
			shared = u.Live()
		}
		// The shared session re-lists and judges the server's tools: a
		// restarted server is checked before the call goes out again.
		if shared != nil && (!dedicated || shared.Ping(ctx, nil) != nil) {
			if _, err = u.Reconnect(ctx, shared); err != nil {
				return nil, fail(toolset.CodeConnectionFailed, fmt.Errorf("reconnecting: %w", err))
			}
		}
		if sess, dedicated, err = r.sessionOfCall(ctx, u, st, own); err != nil {
			return nil, sessionErr(u, tg.Tool, fmt.Errorf("reconnecting: %w", err))
		}
		// The new session's listing may have changed the tool.
		if err := r.ts.Recheck(tg); err != nil {
			return nil, err
		}
	}
}

// InputPassed reports (nil) whether a server's input requests, which a
// sender of the gateway's own got for c, may go to c's caller, as
// CallTool's do: it takes input and announced what each needs.
func (c *Call) InputPassed(reqs mcp.InputRequestMap) error { return passInput(c.Caller, reqs) }

// sessionErr is the error of a request whose upstream session could not be
// had: the refusal of a session whose listing is not the trusted one
// (toolset.Upstream.Judge: CodeQuarantined, nothing was sent), else a
// failed connection.
func sessionErr(u *toolset.Upstream, tool string, err error) error {
	var te *toolset.Error
	if errors.As(err, &te) && te.Code == toolset.CodeQuarantined {
		return &toolset.Error{Code: te.Code, Server: u.Name(), Tool: tool, Err: te.Err}
	}
	return &toolset.Error{Code: toolset.CodeConnectionFailed, Server: u.Name(), Tool: tool, Err: err}
}
