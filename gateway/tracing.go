package gateway

import "github.com/gatehouse-dev/gatehouse/gateway/internal/tracing"

// endSpan ends a call's span (nil: tracing off, see package tracing) with
// its outcome, naming the tool only when it is served: a caller's made-up
// name never names a span.
func (p *pipeline) endSpan(span *tracing.Call, req *callRequest, out *callOutcome) {
	if span == nil {
		return
	}
	o := tracing.Outcome{Label: out.label, Err: out.err, Replayed: out.replayed, Keyed: req.key != "", Front: req.front, Sender: out.sender}
	if info, ok := p.served.tool(req.tool); ok {
		o.Tool, o.Server = req.tool, info.Server
	} else if req.tool == searchToolName && p.served.search.On {
		o.Tool = req.tool
	}
	span.End(o)
}
