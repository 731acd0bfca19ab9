package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/refusal"
)

const (
	methodListTools   = "tools/list"
	methodCallTool    = "tools/call"
	methodSetLevel    = "logging/setLevel"
	methodSubscribe   = "resources/subscribe"
	methodUnsubscribe = "resources/unsubscribe"
)

// middleware is the receiving middleware that applies identity,
// authorization, rate limits and dedup to tools/list and tools/call, and
// the rate limit and the session cap to initialize. Every other method
// goes straight to the go-sdk.
func (s *Server) middleware(local bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case methodListTools:
				return s.listTools(ctx, local, next, method, req)
			case methodCallTool:
				if creq, ok := req.(*mcp.CallToolRequest); ok {
					return s.callTool(ctx, local, next, method, creq)
				}
			case methodInitialize:
				if !local {
					res, err := s.initialize(ctx, next, method, req)
					if x := s.shared.Load(); x != nil && err == nil {
						s.recordOpened(ctx, x, req, res)
					}
					return res, err
				}
			case methodSetLevel:
				if x := s.shared.Load(); x != nil && !local {
					res, err := next(ctx, method, req)
					ss, _ := req.GetSession().(*mcp.ServerSession)
					//lint:ignore SA1019 a log level is still in 2025-11-25 (SEP-2577 deprecates it)
					if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && err == nil && ss != nil {
						x.setLevel(ctx, ss, p.Level)
					}
					return res, err
				}
			case methodSubscribe, methodUnsubscribe:
				if x := s.shared.Load(); x != nil && !local {
					res, err := next(ctx, method, req)
					if err == nil {
						// Recorded for the replica holding the caller's
						// stream (sessionstream.go).
						x.subscribed(ctx, req, method == methodSubscribe)
					}
					return res, err
				}
			}
			return next(ctx, method, req)
		}
	}
}

// identify returns the caller's subject, or ok=false when Identify cannot
// place the caller. It reads only what the transport authenticated: the
// TokenInfo of this request's Extra.
func (s *Server) identify(ctx context.Context, local bool, req mcp.Request) (Subject, bool) {
	return s.identifyInfo(ctx, InfoOf(req, local))
}

// InfoOf returns what the transport authenticated about req: its verified
// token (from the request's Extra, never from a context), and whether it
// was served locally (local: by ServeStdio or ServeLocal); and the client
// capabilities its session announced.
func InfoOf(req mcp.Request, local bool) RequestInfo {
	info := RequestInfo{Local: local}
	if ex := req.GetExtra(); ex != nil && !local {
		info.TokenInfo = ex.TokenInfo
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		if ip := ss.InitializeParams(); ip != nil {
			info.ClientCapabilities = ip.Capabilities
		}
	}
	return info
}

// identifyInfo is identify for what the transport authenticated.
func (s *Server) identifyInfo(ctx context.Context, info RequestInfo) (Subject, bool) {
	if info.Local {
		return s.opts.StdioSubject, true
	}
	if s.opts.Identify == nil {
		return "", true
	}
	// Identify gets a context with ctx's cancellation and none of its
	// values: in stateful HTTP those belong to the request that opened the
	// session, not to this one.
	sub, err := s.opts.Identify(withoutValues{ctx}, info)
	if err != nil {
		s.logger.Debug("server: caller not identified", "err", err)
		return "", false
	}
	return sub, true
}

// withoutValues is ctx's deadline and cancellation without its values. It
// replaces a derived cancel context plus an AfterFunc on every call (three
// allocations and a registration on ctx; BenchmarkLayerProtected).
type withoutValues struct{ context.Context }

// Value reports no values: see identify.
func (withoutValues) Value(any) any { return nil }

func (s *Server) allowed(name string, subject Subject, info RequestInfo) bool {
	if s.opts.AllowToolFor != nil {
		return s.opts.AllowToolFor(name, subject, info)
	}
	return s.opts.AllowTool == nil || s.opts.AllowTool(name, subject)
}

// UnknownToolError is the answer to a call of a tool the caller cannot
// call: one the server does not have, or one hidden from the caller. On
// the wire it is exactly the go-sdk's error for a tool it does not have
// (JSON-RPC invalid params, "unknown tool \"NAME\""), so a hidden tool
// cannot be told from a missing one; in Go it is a type callers can branch
// on (IsUnknownTool), and it unwraps to that *jsonrpc.Error.
type UnknownToolError struct {
	// Name is the tool name the caller asked for.
	Name string
}

// Error returns the go-sdk's message for an unknown tool.
func (e *UnknownToolError) Error() string { return fmt.Sprintf("unknown tool %q", e.Name) }

// Unwrap returns the JSON-RPC error sent on the wire.
func (e *UnknownToolError) Unwrap() error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: e.Error()}
}

// IsUnknownTool reports whether err is (or wraps) an *UnknownToolError.
func IsUnknownTool(err error) bool {
	var u *UnknownToolError
	return errors.As(err, &u)
}

func unknownTool(name string) error { return &UnknownToolError{Name: name} }

func (s *Server) listTools(ctx context.Context, local bool, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	info := InfoOf(req, local)
	subject, identified := s.identifyInfo(ctx, info)
	res, err := next(ctx, method, req)
	if err != nil || (identified && s.opts.AllowTool == nil && s.opts.AllowToolFor == nil) {
		return res, err
	}
	lr, ok := res.(*mcp.ListToolsResult)
	if !ok || lr == nil {
		return res, err
	}
	out := *lr // never modify what the go-sdk handed us
	out.Tools = make([]*mcp.Tool, 0, len(lr.Tools))
	if identified {
		for _, t := range lr.Tools {
			if s.allowed(t.Name, subject, info) {
				out.Tools = append(out.Tools, t)
			}
		}
	}
	// The list depends on the caller: no shared cache may serve it to
	// another one.
	out.CacheScope = "private"
	return &out, nil
}

func (s *Server) callTool(ctx context.Context, local bool, next mcp.MethodHandler, method string, req *mcp.CallToolRequest) (mcp.Result, error) {
	if s.opts.DeferCallAdmission {
		return next(ctx, method, req) // the handler admits (AdmitCall)
	}
	name := req.Params.Name
	info := InfoOf(req, local)
	subject, identified := s.identifyInfo(ctx, info)
	if res, err := s.admit(ctx, subject, identified, info, name); res != nil || err != nil {
		return res, err
	}
	key := s.workKey(req)
	if key == "" || s.opts.Journal == nil {
		ctx = context.WithValue(ctx, callerKey{}, Caller{subject: subject, tool: name})
		return next(ctx, method, req)
	}
	return s.dedup(ctx, next, method, req, subject, key)
}

// admit applies identity, the rate limit and authorization to a call of
// tool name: a non-nil result or error refuses it.
func (s *Server) admit(ctx context.Context, subject Subject, identified bool, info RequestInfo, name string) (*mcp.CallToolResult, error) {
	if !identified {
		return nil, unknownTool(name)
	}
	// The rate limit comes before authorization so a hidden tool and a
	// missing one cost the caller the same.
	if s.limiter != nil {
		ok, retryAfter, err := s.limiter.allow(ctx, subject, name)
		if err != nil {
			s.logger.Error("server: rate limit unavailable; call refused", "tool", name, "err", err)
			return nil, err
		}
		if !ok {
			return rateLimited(retryAfter), nil
		}
	}
	if !s.allowed(name, subject, info) {
		return nil, unknownTool(name)
	}
	return nil, nil
}

// AdmitCall applies to a tools/call exactly what the middleware applies to
// one it admits: identity from info (what the transport authenticated:
// InfoOf), the rate limit, then authorization. It returns the caller's
// subject when the call may go on; otherwise res (a rate_limited refusal)
// or err (the go-sdk's unknown-tool error, or the rate limiter's failure)
// is the answer. A tool handler of a server with DeferCallAdmission calls
// it first; so does a front that serves calls outside the go-sdk's
// request flow.
func (s *Server) AdmitCall(ctx context.Context, info RequestInfo, tool string) (Subject, *mcp.CallToolResult, error) {
	subject, identified := s.identifyInfo(ctx, info)
	res, err := s.admit(ctx, subject, identified, info, tool)
	return subject, res, err
}

// RateLimit spends one call of subject's quota (Options.RateLimit or
// RateLimitFunc) on a request that is not a tools/call — what is the name
// the limiter sees (a gateway passes the forwarded method) — and reports
// whether it may go on, or how long to wait. Without a limit it always
// may. Tool calls and these requests share one quota per subject.
func (s *Server) RateLimit(ctx context.Context, subject Subject, what string) (ok bool, retryAfter time.Duration, err error) {
	if s.limiter == nil {
		return true, 0, nil
	}
	return s.limiter.allow(ctx, subject, what)
}

// workKey returns the call's work key: WorkKey's answer, or the client's
// _meta.idempotencyKey when WorkKey is nil.
func (s *Server) workKey(req *mcp.CallToolRequest) string {
	if s.opts.WorkKey != nil {
		return s.opts.WorkKey(req)
	}
	k, _ := req.Params.Meta["idempotencyKey"].(string)
	return k
}

func rateLimited(retryAfter time.Duration) *mcp.CallToolResult {
	if retryAfter <= 0 {
		retryAfter = time.Millisecond
	}
	e := &refusal.Error{
		Code:       refusal.RateLimited,
		Retryable:  true,
		Message:    fmt.Sprintf("too many calls; retry in %v", retryAfter.Round(time.Millisecond)),
		RetryAfter: retryAfter,
	}
	return e.Result()
}

// recordOpened stores a session the go-sdk's handler just initialized
// (HTTPOptions.Sessions).
func (s *Server) recordOpened(ctx context.Context, x *sharedSessions, req mcp.Request, res mcp.Result) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	params, _ := req.GetParams().(*mcp.InitializeParams)
	ir, _ := res.(*mcp.InitializeResult)
	if ss == nil || ss.ID() == "" {
		return
	}
	subject, _ := s.identify(ctx, false, req)
	userID := ""
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		userID = ex.TokenInfo.UserID
	}
	x.opened(ctx, ss, subject, userID, params, ir)
}
