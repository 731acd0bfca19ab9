package gateway

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callRecord is filled by the tool handler and read by the logging
// middleware: what the gateway decided about one call.
type callRecord struct {
	outcome  string
	replayed bool
}

type callRecordKey struct{}

func callRecordFrom(ctx context.Context) *callRecord {
	r, _ := ctx.Value(callRecordKey{}).(*callRecord)
	return r
}

// logMiddleware writes one line per tools/call: subject, tool, outcome,
// duration. Argument values are never logged.
func (g *Gateway) logMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		creq, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok {
			return next(ctx, method, req)
		}
		start := time.Now()
		rec := &callRecord{}
		res, err := next(context.WithValue(ctx, callRecordKey{}, rec), method, req)
		var user string
		hasToken := false
		if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
			hasToken, user = true, ex.TokenInfo.UserID
		}
		subject, _ := g.subjectOf(hasToken, user)
		cres, _ := res.(*mcp.CallToolResult)
		g.finishCall(string(subject), creq.Params.Name, outcomeOf(rec, cres, err), rec.replayed, ctx.Err() != nil, time.Since(start))
		return res, err
	}
}

// outcomeOf names what a call came to: "ok", "tool_error" (the tool
// answered isError), a refusal code, "unknown_tool", "rpc_error" or
// "error".
func outcomeOf(rec *callRecord, res *mcp.CallToolResult, err error) string {
	if rec != nil && rec.outcome != "" {
		return rec.outcome
	}
	if err != nil {
		var rpc *jsonrpc.Error
		if errors.As(err, &rpc) && rpc.Code == jsonrpc.CodeInvalidParams && strings.HasPrefix(rpc.Message, "unknown tool") {
			return "unknown_tool"
		}
		if errors.As(err, &rpc) {
			return "rpc_error"
		}
		return "error"
	}
	if res == nil {
		return "ok"
	}
	if res.IsError {
		// A refusal made before the handler (rate_limited) carries its code.
		if m, ok := res.StructuredContent.(map[string]any); ok && (rec == nil || rec.outcome == "") {
			if code, ok := m["code"].(string); ok && code == "rate_limited" {
				return code
			}
		}
		return "tool_error"
	}
	return "ok"
}

// finishCall logs one call and counts it in the metrics.
func (g *Gateway) finishCall(subject, tool, outcome string, replayed, cancelled bool, d time.Duration) {
	g.logCall(subject, tool, outcome, replayed, d)
	g.observeCall(tool, outcome, cancelled, d)
}

func (g *Gateway) logCall(subject, tool, outcome string, replayed bool, d time.Duration) {
	g.log.LogAttrs(context.Background(), slog.LevelInfo, "call",
		slog.String("subject", subject),
		slog.String("tool", tool),
		slog.String("outcome", outcome),
		slog.Bool("replayed", replayed),
		slog.Float64("duration_ms", float64(d.Microseconds())/1000),
	)
}
