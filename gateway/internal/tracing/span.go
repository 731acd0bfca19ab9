package tracing

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/relay"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/wire"
	"github.com/gatehouse-dev/gatehouse/internal/egress"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// Attribute keys: OTel's MCP and GenAI semantic conventions, and the
// gateway's own under gatehouse.*. Nothing a caller sends as data
// (arguments, results, _meta values, tokens, idempotency keys) is ever an
// attribute.
const (
	keyMethod      = "mcp.method.name"
	keySession     = "mcp.session.id"
	keyOperation   = "gen_ai.operation.name"
	keyTool        = "gen_ai.tool.name"
	keyErrorType   = "error.type"
	keyTransport   = "network.transport"
	keyProtoName   = "network.protocol.name"
	keyAddress     = "server.address"
	keyPort        = "server.port"
	keyOutcome     = "gatehouse.outcome"
	keyRefusal     = "gatehouse.refusal.code"
	keyStep        = "gatehouse.step"
	keyReplayed    = "gatehouse.replayed"
	keyFront       = "gatehouse.front"
	keySender      = "gatehouse.sender"
	keyServer      = "gatehouse.server"
	methodToolCall = "tools/call"
)

// Call is the server span of one tools/call through the gateway. Its
// methods do nothing on a nil *Call (tracing off).
type Call struct {
	span trace.Span
}

// Start starts the server span of a tools/call: named "tools/call" until
// End names its tool, its parent the caller's trace context (_meta's
// traceparent, else the HTTP header's; see parent), on transport "tcp"
// (hdr non-nil: HTTP) or "pipe" (stdio). meta or metaJSON is the caller's
// _meta as the front read it. It returns ctx unchanged and nil when t is
// off.
func (t *Tracer) Start(ctx context.Context, session string, hdr http.Header, meta map[string]any, metaJSON json.RawMessage) (context.Context, *Call) {
	if !t.On() {
		return ctx, nil
	}
	tp, ts := metaTrace(meta, metaJSON)
	pctx, links := parent(ctx, hdr, tp, ts)
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = append(attrs, attribute.String(keyMethod, methodToolCall), attribute.String(keyOperation, "execute_tool"))
	if session != "" {
		attrs = append(attrs, attribute.String(keySession, session))
	}
	if hdr != nil {
		attrs = append(attrs, attribute.String(keyTransport, "tcp"), attribute.String(keyProtoName, "http"))
	} else {
		attrs = append(attrs, attribute.String(keyTransport, "pipe"))
	}
	ctx, span := t.tracer.Start(pctx, methodToolCall, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attrs...), trace.WithLinks(links...))
	return ctx, &Call{span: span}
}

// Outcome is how a call ended, for End.
type Outcome struct {
	// Tool is the tool's name when the gateway serves it ("" for a name it
	// does not: never put in the span's name, which must stay of low
	// cardinality).
	Tool string
	// Label is the outcome of the gateway's log line and metrics: "ok",
	// "tool_error", a refusal code, "unknown_tool", "rpc_error", "error" or
	// "no_answer".
	Label string
	// Err is the JSON-RPC error answered, if any (its code is the
	// error.type).
	Err error
	// Replayed: the journal answered. Keyed: the call had an idempotency
	// key (a sent one was recorded by the journal: the completion event).
	Replayed, Keyed bool
	// Front and Sender name the front that read the call and the sender
	// that carried it ("" for none); Server is the upstream server of the
	// tool ("" when unknown).
	Front, Sender, Server string
}

// Event records a step the call passed: "admission" (identity, rate limit,
// visibility), "guards" (policy and approvals), "claim" (the journal's
// claim, committed before sending), "completion" (the journal's record of
// the outcome).
func (c *Call) Event(step string) {
	if c == nil {
		return
	}
	c.span.AddEvent("gatehouse."+step, trace.WithAttributes(attribute.String(keyOutcome, "passed")))
}

// End names the span after its tool, sets the outcome's attributes (a
// refusal's code and the step that refused, as an event too; error.type
// and an error status for anything but ok) and ends it.
func (c *Call) End(o Outcome) {
	if c == nil {
		return
	}
	s := c.span
	if o.Keyed && o.Sender != "" {
		c.Event("completion")
	}
	if o.Tool != "" {
		s.SetName(methodToolCall + " " + o.Tool)
		s.SetAttributes(attribute.String(keyTool, o.Tool))
	}
	attrs := []attribute.KeyValue{attribute.String(keyOutcome, o.Label), attribute.Bool(keyReplayed, o.Replayed),
		attribute.String(keyFront, o.Front)}
	if o.Sender != "" {
		attrs = append(attrs, attribute.String(keySender, o.Sender))
	}
	if o.Server != "" {
		attrs = append(attrs, attribute.String(keyServer, o.Server))
	}
	var rpc *jsonrpc.Error
	switch code := refusal.Code(o.Label); {
	case o.Label == "ok":
	case code.Known():
		step := stepOf(code)
		attrs = append(attrs, attribute.String(keyErrorType, o.Label), attribute.String(keyRefusal, o.Label))
		s.AddEvent("gatehouse."+step, trace.WithAttributes(attribute.String(keyOutcome, "refused"), attribute.String(keyRefusal, o.Label)))
		attrs = append(attrs, attribute.String(keyStep, step))
		s.SetStatus(codes.Error, "refused: "+o.Label)
	case errors.As(o.Err, &rpc):
		attrs = append(attrs, attribute.String(keyErrorType, strconv.FormatInt(rpc.Code, 10)))
		s.SetStatus(codes.Error, rpc.Message)
	default:
		attrs = append(attrs, attribute.String(keyErrorType, o.Label))
		s.SetStatus(codes.Error, o.Label)
	}
	s.SetAttributes(attrs...)
	s.End()
}

// stepOf names the step of the pipeline that refuses with code.
func stepOf(code refusal.Code) string {
	switch code {
	case refusal.RateLimited:
		return "rate_limit"
	case refusal.ApprovalRequired, refusal.ApprovalDenied:
		return "approval"
	case refusal.Denied, refusal.CallLimit:
		return "firewall"
	case refusal.RunBusy, refusal.KeyReused, refusal.InDoubt:
		return "claim"
	case refusal.Quarantined, refusal.ToolWithdrawn:
		return "served"
	case refusal.Unavailable:
		return "health"
	case refusal.AuthRequired:
		return "upstream_auth"
	}
	return "gateway"
}

// Upstream is the client span of one call sent upstream. Its methods do
// nothing on a nil *Upstream.
type Upstream struct {
	span trace.Span
}

// Upstream starts the client span of sending c to tg, a child of ctx's
// span (the call's), and puts its trace context on what is sent: c's _meta
// (traceparent and tracestate, replacing the caller's) and, through the
// returned context, the HTTP headers of the requests to the server's own
// origin (egress.WithHeaders; a stdio server gets _meta only). It returns
// ctx unchanged and nil when t is off.
func (t *Tracer) Upstream(ctx context.Context, tg toolset.Target, c *relay.Call) (context.Context, *Upstream) {
	if !t.On() {
		return ctx, nil
	}
	u := tg.Upstream
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs, attribute.String(keyMethod, methodToolCall), attribute.String(keyOperation, "execute_tool"),
		attribute.String(keyTool, tg.Remote), attribute.String(keyServer, u.Name()))
	if u.Type() == "stdio" {
		attrs = append(attrs, attribute.String(keyTransport, "pipe"))
	} else {
		attrs = append(attrs, attribute.String(keyTransport, "tcp"), attribute.String(keyProtoName, "http"))
		if endpoint, _, ok := u.HTTP(); ok {
			if pu, err := url.Parse(endpoint); err == nil {
				attrs = append(attrs, attribute.String(keyAddress, pu.Hostname()))
				if p, err := strconv.Atoi(pu.Port()); err == nil {
					attrs = append(attrs, attribute.Int(keyPort, p))
				}
			}
		}
	}
	ctx, span := t.tracer.Start(ctx, methodToolCall+" "+tg.Remote, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	mc := propagation.MapCarrier{}
	traceContext.Inject(ctx, mc)
	if mc["traceparent"] != "" {
		c.Meta, c.MetaJSON = injectMeta(c.Meta, c.MetaJSON, mc["traceparent"], mc["tracestate"])
		h := http.Header{"Traceparent": {mc["traceparent"]}}
		if ts := mc["tracestate"]; ts != "" {
			h["Tracestate"] = []string{ts}
		}
		ctx = egress.WithHeaders(ctx, h)
	}
	return ctx, &Upstream{span: span}
}

// End ends the client span: err is the sender's error (nil: the server
// answered with result, or with raw, the result object's bytes).
func (u *Upstream) End(err error, result *mcp.CallToolResult, raw json.RawMessage) {
	if u == nil {
		return
	}
	toolError := result != nil && result.IsError || result == nil && raw != nil && wire.IsError(raw)
	switch {
	case err != nil:
		et := errorType(err)
		u.span.SetAttributes(attribute.String(keyErrorType, et))
		u.span.SetStatus(codes.Error, et)
	case toolError:
		u.span.SetAttributes(attribute.String(keyErrorType, "tool_error"))
		u.span.SetStatus(codes.Error, "tool_error")
	}
	u.span.End()
}

// Cleared records that the call passed the guards (policy, approvals) and,
// when claimed, the journal's claim: it is about to be sent.
func (c *Call) Cleared(claimed bool) {
	if c == nil {
		return
	}
	c.Event("guards")
	if claimed {
		c.Event("claim")
	}
}
