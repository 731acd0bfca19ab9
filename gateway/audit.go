package gateway

import (
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/auditlog"
	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// auditCall records one tools/call in the audit trail (gateway/internal/
// auditlog), its kind from the outcome: call, refusal, or
// approval.requested with the approval's ID. A keyed call whose entry was
// committed with its journal completion (keyed.Written) is not recorded
// again. srv is the server of the tool when the call was admitted ("" when
// it was not served then).
func (p *pipeline) auditCall(subject server.Subject, req *callRequest, out *callOutcome, d time.Duration, srv string, keyed *durable.Audit) {
	if p.audit == nil {
		return
	}
	if keyed != nil && keyed.Written != nil {
		p.audit.Committed(*keyed.Written)
		return
	}
	c := auditlog.Call{Kind: audit.KindCall, Subject: string(subject), Tool: req.tool, Args: req.args, Outcome: out.label,
		Duration: d, Replayed: out.replayed, NotRecorded: keyed != nil && keyed.Err != nil}
	switch out.label {
	case outcomeOK, outcomeToolError, outcomeRPCError, outcomeError, outcomeNoAnswer:
	case string(refusal.ApprovalRequired):
		c.Kind = audit.KindApprovalRequested
	default: // a refusal code, unknown_tool
		c.Kind = audit.KindRefusal
	}
	if srv != "" {
		c.Server = srv // the server the call was admitted for
	} else if info, ok := p.served.tool(req.tool); ok {
		c.Server = info.Server // served since (a call refused as withdrawn)
	}
	if out.result != nil {
		if sc, ok := out.result.StructuredContent.(map[string]any); ok {
			c.ApprovalID, _ = sc["approvalId"].(string)
		}
	}
	p.audit.Call(c)
}

// keyedAudit is the entry of a keyed call, for the journal to commit with
// the call's completion (durable.Audit): its outcome read from the
// effect's answer as answer reads it, its duration up to the completion,
// the caller's key and the journal record (runID, callID) in its detail.
// Nil when the audit trail is off.
func (p *pipeline) keyedAudit(subject server.Subject, req *callRequest, srv, runID, callID string, start time.Time) *durable.Audit {
	if p.audit == nil {
		return nil
	}
	return &durable.Audit{Link: audit.Link, Entry: func(res *mcp.CallToolResult, err error) store.AuditEntry {
		kind, outcome := completionOutcome(res, err)
		return p.audit.Entry(auditlog.Call{Kind: kind, Subject: string(subject), Server: srv, Tool: req.tool, Args: req.args,
			Outcome: outcome, Duration: time.Since(start), Key: req.key, RunID: runID, ToolCallID: callID})
	}}
}

// completionOutcome is the kind and outcome of the entry of a call whose
// effect answered res, err and whose outcome the journal records: the
// label answer gives the same answer.
func completionOutcome(res *mcp.CallToolResult, err error) (kind, outcome string) {
	switch {
	case err == nil && res != nil && res.IsError:
		return audit.KindCall, outcomeToolError
	case err == nil:
		return audit.KindCall, outcomeOK
	}
	if r, ok := refusal.As(err); ok {
		return audit.KindRefusal, string(r.Code)
	}
	var rpc *jsonrpc.Error
	if ae := (*toolset.AnswerError)(nil); errors.As(err, &ae) || errors.As(err, &rpc) {
		return audit.KindCall, outcomeRPCError
	}
	return audit.KindCall, outcomeError
}
