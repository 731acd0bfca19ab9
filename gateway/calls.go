package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/internal/projection"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// reservedMetaPrefix marks _meta keys the protocol reserves: a caller's are
// never forwarded.
const reservedMetaPrefix = "io.modelcontextprotocol/"

// Caller-side _meta keys the gateway consumes and does not forward.
const (
	metaIdempotencyKey = "idempotencyKey"
	metaRunID          = "runId"
	metaProgressToken  = "progressToken"
)

// identify maps the verified bearer token to its subject. Without auth every
// caller is LocalSubject (the gateway then listens on loopback only).
func (g *Gateway) identify(_ context.Context, info server.RequestInfo) (server.Subject, error) {
	return g.subjectOf(info.TokenInfo != nil, tokenUser(info))
}

func tokenUser(info server.RequestInfo) string {
	if info.TokenInfo == nil {
		return ""
	}
	return info.TokenInfo.UserID
}

func (g *Gateway) subjectOf(hasToken bool, user string) (server.Subject, error) {
	if g.cfg.Auth == nil {
		return LocalSubject, nil
	}
	if !hasToken || user == "" {
		return "", errors.New("gateway: no verified token")
	}
	return server.Subject(user), nil
}

// visible reports whether subject may see and call the tool: the tool is
// served, tools.allow/block let it through, and the subject's scopes cover
// it.
func (g *Gateway) visible(name string, subject server.Subject) bool {
	if _, ok := g.tool(name); !ok {
		return false
	}
	if name != projection.DescribeToolName {
		if len(g.policyAllow) > 0 && !g.policyAllow[name] {
			return false
		}
		if g.policyBlock[name] {
			return false
		}
	}
	return g.auth.allows(string(subject), name)
}

// buildGuard composes the firewall (call caps per run, contract pinning
// against the toolset's baselines) and the operator's requireApproval
// list. The firewall counts per gateway run (see runKey).
func (g *Gateway) buildGuard() (policy.Guard, error) {
	var guards []policy.Guard
	fw, err := policy.NewFirewall(policy.FirewallOptions{
		MaxCallsPerRun: g.cfg.Firewall.MaxCallsPerRun,
		Counters:       g.st,
		Scope:          JournalScope,
		CounterTTL:     g.cfg.Journal.TTL,
		Contracts:      g.ts,
		// The toolset pins every tool it serves on first sight, so a
		// served tool without a pin means the map and the baseline
		// disagree: refuse rather than ask for an approval that could
		// only trust an unknown contract call by call.
		Unpinned: policy.Deny,
	})
	if err != nil {
		return nil, err
	}
	guards = append(guards, policy.GuardFunc(func(ctx context.Context, c policy.Call) (policy.Decision, error) {
		c.RunID, _ = ctx.Value(runKey{}).(string)
		if t, ok := g.tool(c.Tool); ok && t.ServerID != "" {
			// The row ID names the server even when two share a name.
			c.Server = t.ServerID
		}
		d, err := fw.Check(ctx, c)
		if err == nil && d.Verdict == policy.RequireApproval && d.Reason == policy.ReasonContractChanged {
			d = g.driftDecision(ctx, c)
		}
		return d, err
	}))
	if len(g.approval) > 0 {
		guards = append(guards, policy.GuardFunc(func(_ context.Context, c policy.Call) (policy.Decision, error) {
			if g.approval[c.Tool] {
				return policy.NeedsApproval("the operator's config lists " + c.Tool + " in tools.requireApproval"), nil
			}
			return policy.Allowed(), nil
		}))
	}
	return policy.Compose(guards...), nil
}

// runKey carries the gateway run of a call to the firewall.
type runKey struct{}

// gatewayRun names the run a call belongs to for the firewall: the
// caller's _meta.runId when it sends one, else the MCP session. It is
// scoped to the subject, so no caller can spend another's budget.
func gatewayRun(subject server.Subject, req *mcp.CallToolRequest) string {
	run, _ := req.Params.Meta[metaRunID].(string)
	if run == "" && req.Session != nil {
		if id := req.Session.ID(); id != "" {
			run = "session:" + id
		}
	}
	if run == "" {
		return ""
	}
	return string(subject) + "\x00" + run
}

// unitOfWork names the journal record of (subject, tool, key): the run is
// the subject's use of the tool and the tool call the key within it, both
// hashed with the subject so one caller's key never names another's work.
// The upstream's _meta.idempotencyKey is runID:toolCallID; the caller's raw
// key never leaves the gateway.
func unitOfWork(subject server.Subject, tool, key string) (runID, toolCallID string) {
	h := sha256.New()
	part := func(s string) { // length-prefixed: no choice of parts can mimic another
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	part("gatehouse/gateway/v1")
	part(string(subject))
	part(tool)
	run := h.Sum(nil)
	part(key)
	return "gw_" + hex.EncodeToString(run[:12]), hex.EncodeToString(h.Sum(nil))
}

// forwardMeta returns the caller's _meta without reserved keys and without
// the keys the gateway consumes, as a fresh map.
func forwardMeta(m mcp.Meta) map[string]any {
	var out map[string]any
	for k, v := range m {
		if strings.HasPrefix(k, reservedMetaPrefix) || k == metaIdempotencyKey || k == metaRunID || k == metaProgressToken {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(m))
		}
		out[k] = v
	}
	return out
}

// refusal builds a gateway refusal result.
func refuse(code refusal.Code, retryable bool, retryAfter time.Duration, format string, args ...any) *mcp.CallToolResult {
	return (&refusal.Error{Code: code, Retryable: retryable, RetryAfter: retryAfter, Message: fmt.Sprintf(format, args...)}).Result()
}

// call is the handler of every served tool.
func (g *Gateway) call(ctx context.Context, name string, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
	start := time.Now()
	rec := callRecordFrom(ctx)
	caller, _ := server.CallerFromContext(ctx)
	subject := caller.Subject()
	if rec == nil { // stdio: no outer middleware; log here
		rec = &callRecord{}
		reqCtx := ctx // the call's own ctx is cancelled when it returns
		defer func() {
			g.finishCall(string(subject), name, outcomeOf(rec, res, err), rec.replayed, reqCtx.Err() != nil, time.Since(start))
		}()
	}
	if !g.calls.enter() {
		rec.outcome = string(refusal.Unavailable)
		return refuse(refusal.Unavailable, true, time.Second, "the gateway is shutting down; retry the same call"), nil
	}
	defer g.calls.leave()

	info, refused := g.servedTool(rec, name)
	if refused != nil {
		return refused, nil
	}
	if name == projection.DescribeToolName {
		return g.describe(ctx, subject, req)
	}
	key, isString := req.Params.Meta[metaIdempotencyKey].(string)
	if _, present := req.Params.Meta[metaIdempotencyKey]; present && (!isString || key == "") {
		rec.outcome = string(refusal.Denied)
		return refuse(refusal.Denied, false, 0, "_meta.idempotencyKey must be a non-empty string"), nil
	}
	if down := g.serverDown(rec, info); down != nil && !g.recorded(ctx, subject, name, key) {
		// Nothing is claimed or sent; a call already journaled is answered
		// from the journal below (replay, in_doubt...), server or not.
		return down, nil
	}
	args := json.RawMessage(req.Params.Arguments)
	meta := forwardMeta(req.Params.Meta)
	fcaller, progress, done := g.forwardCall(ctx, req) // forward_wiring.go
	defer done()

	// The call ends when the caller goes, or when shutdown stops waiting.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(g.stopCtx, cancel)()
	if g.cfg.Firewall.MaxCallsPerRun > 0 {
		// Only the call cap reads the run: without one, the key and its
		// context cost four allocations a call for nothing.
		ctx = context.WithValue(ctx, runKey{}, gatewayRun(subject, req))
	}

	var runID, callID string
	effect := func(ctx context.Context, ikey string) (*mcp.CallToolResult, error) {
		var a any
		if len(args) > 0 {
			a = args
		}
		r, err := g.ts.Call(ctx, name, a, toolset.CallInfo{RunID: runID, ToolCallID: callID, Meta: meta, Caller: fcaller, ProgressToken: progress})
		g.observeUpstream(info.Server, err, ctx.Err() != nil)
		if err == nil {
			return r, nil
		}
		if de, ok := toolsetRefusal(err); ok {
			// Quarantined or withdrawn since the check above: nothing was
			// sent, and the same call gets the same answer (Failed: the
			// journal records it as a failure, never in doubt).
			return nil, durable.Failed(de)
		}
		return r, err
	}

	var replayed bool
	if key != "" {
		runID, callID = unitOfWork(subject, name, key)
		c := durable.Call{RunID: runID, ToolCallID: callID, Server: info.Server, Tool: name,
			RemoteName: info.RemoteName, Args: args, Owner: string(subject)}
		res, replayed, err = g.journal.Guarded(ctx, c, g.guard, effect)
	} else {
		res, err = g.unkeyed(ctx, subject, name, info, args, effect)
	}
	rec.replayed = replayed
	if errors.Is(err, toolset.ErrStreamEnded) && !g.cfg.HTTP.JSONResponse && req.Extra != nil && req.Extra.CloseSSEStream != nil {
		// The upstream ended the call's stream without answering: so does
		// the gateway (the answer below goes nowhere), as a direct caller
		// would see it.
		rec.outcome = outcomeNoAnswer
		req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{})
		return nil, err
	}
	return g.answer(rec, info.Server, name, res, err)
}

// servedTool returns the served tool called name, or the refusal for a
// withdrawn or quarantined one (recorded in rec).
func (g *Gateway) servedTool(rec *callRecord, name string) (toolset.ToolInfo, *mcp.CallToolResult) {
	info, ok := g.tool(name)
	if !ok {
		rec.outcome = string(refusal.ToolWithdrawn)
		return info, refuse(refusal.ToolWithdrawn, false, 0, "tool %s is no longer offered", name)
	}
	if info.State == toolset.Quarantined {
		rec.outcome = string(refusal.Quarantined)
		return info, refuse(refusal.Quarantined, false, 0, "tool %s changed since it was trusted and is quarantined until an operator re-trusts its server", name)
	}
	return info, nil
}

// serverDown returns the refusal for a call to a server waiting for its
// restart backoff (recorded in rec), or nil.
func (g *Gateway) serverDown(rec *callRecord, info toolset.ToolInfo) *mcp.CallToolResult {
	wait, down := g.health.down(info.Server)
	if !down {
		return nil
	}
	rec.outcome = string(refusal.Unavailable)
	return refuse(refusal.Unavailable, true, wait, "server %s is unavailable (restarting); retry in %v", info.Server, wait.Round(time.Millisecond))
}

// unkeyed runs a call without a work key: guards apply, nothing is
// journaled, and no idempotency key goes upstream.
func (g *Gateway) unkeyed(ctx context.Context, subject server.Subject, name string, info toolset.ToolInfo, args json.RawMessage, effect durable.Effect) (*mcp.CallToolResult, error) {
	d, err := policy.Evaluate(ctx, g.guard, policy.Call{Server: info.Server, Tool: name, RemoteName: info.RemoteName, Args: args, Subject: string(subject)})
	if err != nil {
		return nil, &refusal.Error{Code: refusal.Denied, Message: "the call could not be checked; it was not run", Err: err}
	}
	switch d.Verdict {
	case policy.Allow:
		return effect(ctx, "")
	case policy.RequireApproval:
		return nil, &refusal.Error{Code: refusal.Denied,
			Message: fmt.Sprintf("the call to %s needs an operator's approval; send it with _meta.idempotencyKey so the approved call can be retried", name)}
	default:
		code := d.Code
		if code == "" {
			code = refusal.Denied
		}
		return nil, &refusal.Error{Code: code, Message: d.Reason}
	}
}

// answer turns the outcome of a call into what the caller gets.
func (g *Gateway) answer(rec *callRecord, srv, name string, res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	if err == nil {
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		return res, nil
	}
	if de, ok := refusal.As(err); ok {
		rec.outcome = string(de.Code)
		if de.Err != nil {
			g.log.Warn("gateway: call refused", "tool", name, "code", de.Code, "err", de.Err)
		}
		return de.Result(), nil
	}
	if res != nil && errors.Is(err, durable.ErrNotRecorded) {
		g.log.Error("gateway: call ran but its outcome was not journaled", "tool", name, "err", err)
		return res, nil
	}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		rec.outcome = "rpc_error"
		return nil, &jsonrpc.Error{Code: rpc.Code, Message: rpc.Message, Data: rpc.Data}
	}
	if connectionLost(err) {
		rec.outcome = string(refusal.Unavailable)
		wait, _ := g.health.down(srv)
		return refuse(refusal.Unavailable, true, max(wait, time.Millisecond),
			"server %s is unavailable; the call may not have completed", srv), nil
	}
	g.log.Error("gateway: call failed", "tool", name, "err", err)
	rec.outcome = "error"
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
		Text: fmt.Sprintf("the call to %s failed at the gateway", name)}}}, nil
}

// describe answers mcp__describe_tool for tools the caller may see only.
func (g *Gateway) describe(ctx context.Context, subject server.Subject, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(req.Params.Arguments, &in)
	if in.Name == projection.DescribeToolName || !g.visible(in.Name, subject) {
		// The toolset's own answer for a name it does not have: a hidden
		// tool cannot be told from a missing one.
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
			Text: fmt.Sprintf("unknown tool %q: pass a tool name exactly as listed", in.Name)}}}, nil
	}
	return g.ts.Call(ctx, projection.DescribeToolName, map[string]any{"name": in.Name}, toolset.CallInfo{})
}

// connectionLost reports errors after which the upstream must be
// reconnected.
func connectionLost(err error) bool {
	if errors.Is(err, toolset.ErrConnectionFailed) {
		return true
	}
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, mcp.ErrSessionMissing) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// recorded reports whether the unit of work (subject, tool, key) has a
// journal record.
func (g *Gateway) recorded(ctx context.Context, subject server.Subject, tool, key string) bool {
	if key == "" {
		return false
	}
	runID, callID := unitOfWork(subject, tool, key)
	_, err := g.st.GetRecord(ctx, store.RecordKey{Scope: JournalScope, RunID: runID, ToolCallID: callID})
	return err == nil
}
