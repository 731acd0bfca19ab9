package gateway

import (
	"time"

	"github.com/gatehouse-dev/gatehouse/audit"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/auditlog"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/server"
)

// auditCall records one tools/call in the audit trail (gateway/internal/
// auditlog), its kind from the outcome: call, refusal, or
// approval.requested with the approval's ID.
func (p *pipeline) auditCall(subject server.Subject, req *callRequest, out *callOutcome, d time.Duration) {
	if p.audit == nil {
		return
	}
	c := auditlog.Call{Kind: audit.KindCall, Subject: string(subject), Tool: req.tool, Args: req.args, Outcome: out.label,
		Duration: d, Replayed: out.replayed}
	switch out.label {
	case outcomeOK, outcomeToolError, outcomeRPCError, outcomeError, outcomeNoAnswer:
	case string(refusal.ApprovalRequired):
		c.Kind = audit.KindApprovalRequested
	default: // a refusal code, unknown_tool
		c.Kind = audit.KindRefusal
	}
	if info, ok := p.served.tool(req.tool); ok {
		c.Server = info.Server
	}
	if out.result != nil {
		if sc, ok := out.result.StructuredContent.(map[string]any); ok {
			c.ApprovalID, _ = sc["approvalId"].(string)
		}
	}
	p.audit.Call(c)
}
