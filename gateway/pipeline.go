package gateway

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/auditlog"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/health"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/inputstate"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/relay"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/telemetry"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/tracing"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/upauth"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/wire"
	"github.com/gatehouse-dev/gatehouse/internal/rawresult"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// callRequest is one tools/call as a front read it: what the pipeline
// decides on and what it sends. The go-sdk front (front_sdk.go) fills it
// from the go-sdk's request, the byte front (front_http.go) from the bytes
// of the HTTP request.
type callRequest struct {
	tool string
	// args is the arguments object's bytes, or nil.
	args json.RawMessage
	// meta is the caller's _meta to forward (as the go-sdk read it), or
	// metaJSON (as the byte front read it): without the keys the gateway
	// consumes (idempotencyKey, runId, progressToken) or the protocol
	// reserves.
	meta     map[string]any
	metaJSON json.RawMessage
	// key is _meta.idempotencyKey; badKey reports one that is present but
	// not a non-empty string.
	key    string
	badKey bool
	// badArgs reports arguments that are not a JSON object.
	badArgs bool
	// runID is _meta.runId ("" when absent), session the MCP session ID
	// ("" without one): together they name the firewall's run. badRunID
	// reports a runId that is present but not one validRunID accepts.
	runID, session string
	badRunID       bool
	// info is what the transport authenticated.
	info server.RequestInfo
	// caller is the relay's calling session, progress the caller's
	// progress token (nil: none).
	caller   *relay.Caller
	progress any
	// endStream: the front can end the caller's response stream without
	// an answer (see callOutcome.noAnswer).
	endStream bool
	// front names the front that read the call, for the log line: "sdk"
	// or "bytes".
	front string
	// hdr is the HTTP request's header (nil over stdio): its traceparent.
	hdr http.Header
	// retry is a multi round-trip retry's answers and sealed state, from
	// a caller that takes input (relay.Caller.TakesInput); input is what
	// goes upstream once the state is opened (the server's own).
	retry, input relay.Retry
}

// callOutcome is what the caller of a tools/call gets: the upstream's
// result as bytes, a result value, a JSON-RPC error, or no answer.
type callOutcome struct {
	raw    json.RawMessage     // the upstream's result object, as sent
	result *mcp.CallToolResult // a result value (a refusal, a replay, a decoded answer)
	err    error               // a JSON-RPC error
	// noAnswer: the upstream ended the call's stream without answering,
	// and the front ends the caller's the same way (endStream).
	noAnswer bool
	// label is the outcome in the log line and the metrics: "ok",
	// "tool_error", a refusal code, "unknown_tool", "rpc_error", "error",
	// "no_answer".
	label    string
	replayed bool
	// sender names the sender that carried the call ("sdk", "bytes"), or
	// "" when nothing was sent.
	sender string
}

// Outcome labels besides refusal codes (see metricOutcome).
const (
	outcomeOK          = "ok"
	outcomeToolError   = "tool_error"
	outcomeUnknownTool = "unknown_tool"
	outcomeRPCError    = "rpc_error"
	outcomeError       = "error"
	outcomeNoAnswer    = "no_answer"
)

// pipeline decides every tools/call the gateway serves, whichever front
// read it and whichever sender carries it: one order of checks, one
// journal claim, one shape of refusal, one log line. See call.
type pipeline struct {
	srv     *server.Server // admission: identity, rate limit, authorization
	served  *servedMap
	relay   *relay.Relay
	ts      *toolset.Toolset
	journal *durable.Journal
	guard   policy.Guard
	st      store.JournalStore
	health  *health.Backoff
	calls   *health.Inflight
	stopCtx context.Context // ends when shutdown stops waiting for calls
	tel     *telemetry.Instruments
	log     *slog.Logger
	// runs: the firewall counts calls per run (maxCallsPerRun > 0).
	runs bool
	// bytes: calls may go as bytes (http.bytePath); senders are chosen
	// per call (senderFor).
	bytes bool
	// audit records every call in the audit trail (nil: off).
	audit *auditlog.Recorder
	// upauth: servers with auth: (gateway/internal/upauth; nil: none).
	upauth *upauth.Manager
	// trace makes the calls' spans (nil: off; see gateway/tracing.go).
	trace *tracing.Tracer
	// inputs seals and opens the requestState of input requests passed
	// to callers that take input (gateway/inputs.go).
	inputs *inputstate.Sealer
}

// call is the one function that decides whether a tools/call is sent, and
// sends it. Every front hands every tools/call here, and both senders are
// reached only from here. The checks, in order:
//
//  1. admission (server.AdmitCall): the caller's identity, its rate limit,
//     then whether it may see the tool (a hidden tool is answered exactly
//     as a missing one);
//  2. shutdown: a gateway that is draining answers unavailable;
//  3. served state: a tool no longer served is tool_withdrawn, a
//     quarantined one quarantined;
//  4. mcp__describe_tool is answered here, for visible tools only, and
//     gatehouse__search_tools with the tools the caller may see (search.go);
//  5. the request itself: an idempotency key that is not a non-empty
//     string is denied, arguments that are not an object invalid params;
//  6. health: a server in its restart backoff answers unavailable, unless
//     the unit of work is journaled (then the journal answers);
//  7. guards and the journal: with a key, durable.Journal.Guarded (guards
//     and approvals first, then the claim, committed before anything is
//     sent); without one, the guards alone;
//  8. inside the effect, just before sending: the drift re-check
//     (toolset.Target: quarantined or withdrawn since step 3 is refused,
//     and recorded as a failure, never in doubt), then the sender
//     (senderFor: bytes or the go-sdk's client);
//  9. the answer: refusals as results, JSON-RPC errors passed on, a lost
//     upstream as unavailable, a stream ended without an answer mirrored;
//  10. one log line and the metrics (finish), and the call's entry in the
//     audit trail (gateway/audit.go).
func (p *pipeline) call(ctx context.Context, req *callRequest) (out callOutcome) {
	start := time.Now()
	subject := server.Subject("")
	callerCtx := ctx         // ctx becomes the call's own below, cancelled when call returns
	var keyed *durable.Audit // a keyed call's entry, written with its completion
	wasServed := false       // the tool was served when the call was admitted (step 3)
	srv := ""                // its server then
	ctx, span := p.trace.Start(ctx, req.session, req.hdr, req.meta, req.metaJSON)
	defer func() {
		d := time.Since(start)
		p.finish(subject, req.tool, req.front, &out, wasServed, callerCtx.Err() != nil, d)
		p.auditCall(subject, req, &out, d, srv, keyed)
		p.endSpan(span, req, &out)
	}()

	subject, res, err := p.srv.AdmitCall(ctx, req.info, req.tool)
	if res != nil || err != nil {
		return admissionOutcome(res, err)
	}
	span.Event("admission")
	if !p.calls.Enter() {
		return refused(&refusal.Error{Code: refusal.Unavailable, Retryable: true, RetryAfter: time.Second,
			Message: "the gateway is shutting down; retry the same call"})
	}
	defer p.calls.Leave()

	info, ok := p.served.tool(req.tool)
	wasServed, srv = ok, info.Server
	switch {
	case !ok && req.tool == searchToolName:
		return p.search(ctx, subject, req) // admitted: search is on
	case !ok:
		return refused(&refusal.Error{Code: refusal.ToolWithdrawn, Message: fmt.Sprintf("tool %s is no longer offered", req.tool)})
	case info.State == toolset.Quarantined:
		return refused(&refusal.Error{Code: refusal.Quarantined,
			Message: fmt.Sprintf("tool %s changed since it was trusted and is quarantined until an operator re-trusts its server", req.tool)})
	case req.tool == toolset.DescribeToolName:
		return p.describe(ctx, subject, req.info, req.args)
	case req.badKey:
		return refused(&refusal.Error{Code: refusal.Denied, Message: "_meta.idempotencyKey must be a non-empty string"})
	case req.badRunID:
		return refused(&refusal.Error{Code: refusal.Denied, Message: runIDRule})
	case req.badArgs:
		return callOutcome{label: outcomeRPCError, err: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "tools/call: arguments must be a JSON object"}}
	}
	// A caller that takes input: its state is bound to the call's round
	// (checked now, before anything is claimed or sent, on a retry; sealed
	// below when the server asks for input). Made only then: a plain call
	// digests nothing.
	if req.caller.TakesInput() {
		if req.retry.Present() {
			st, err := relay.OpenRetry(p.inputs, "tools/call", req.retry, round(info.Server, subject, req))
			if err != nil {
				return callOutcome{err: err, label: outcomeRPCError}
			}
			req.input = relay.Retry{Responses: req.retry.Responses, State: st}
			if req.key != "" {
				req.key = roundKey(req.key, req.input)
			}
		}
	}
	if wait, down := p.health.Down(info.Server); down && !p.recorded(ctx, subject, req.tool, req.key) {
		// Nothing is claimed or sent; a call already journaled is answered
		// from the journal below (replay, in_doubt...), server or not.
		return refused(&refusal.Error{Code: refusal.Unavailable, Retryable: true, RetryAfter: wait,
			Message: fmt.Sprintf("server %s is unavailable (restarting); retry in %v", info.Server, wait.Round(time.Millisecond))})
	}
	if r, err := p.upauth.Check(ctx, info.Server, string(subject)); r != nil && !p.recorded(ctx, subject, req.tool, req.key) {
		return refused(r) // auth_required, before the journal: the retry once connected runs (a recorded unit is answered below)
	} else if err != nil {
		return callOutcome{err: err, label: outcomeError}
	}

	// The call ends when the caller goes, or when shutdown stops waiting.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(p.stopCtx, cancel)()
	if p.runs {
		// Only the call cap reads the run: without one, the key and its
		// context cost allocations a call for nothing.
		ctx = context.WithValue(ctx, runKey{}, firewallRun(subject, req.runID, req.session))
	}

	var sentBy string
	defer func() { out.sender = sentBy }()
	var runID, callID string
	// raw is a fresh answer's bytes (the byte sender's), isError read from
	// them once: the journal records them as they are (internal/rawresult)
	// and the caller gets them; neither decodes them.
	var raw rawresult.Result
	// The effect's key is the journal's upstream key (runID:callID), ""
	// for an unkeyed call.
	effect := func(ctx context.Context, key string) (*mcp.CallToolResult, error) {
		span.Cleared(key != "")
		tg, err := p.ts.Target(ctx, req.tool)
		if err != nil {
			if r, ok := refusalOf(err); ok {
				// Quarantined or withdrawn since the check above: nothing
				// was sent, and the same call gets the same answer (Failed:
				// the journal records it as a failure, never in doubt).
				return nil, durable.Failed(r)
			}
			return nil, err
		}
		if key != "" && info.Contract != "" && tg.Contract != info.Contract {
			// The tool's trusted contract changed (a trust the served map
			// had not followed yet) since the journal checked the call,
			// and any approval, against info.Contract: nothing is sent.
			return nil, durable.Failed(&refusal.Error{Code: refusal.Quarantined,
				Message: fmt.Sprintf("tool %s changed as the call was made (its trusted contract is no longer the one the call was checked under); nothing was sent: send it again with a new idempotency key", req.tool)})
		}
		c := relay.Call{Args: req.args, Meta: req.meta, MetaJSON: req.metaJSON, Caller: req.caller, ProgressToken: req.progress, Key: key, Input: req.input}
		ctx, up := p.trace.Upstream(ctx, tg, &c)
		rep, err := p.senderFor(tg, &c, subject, req.info).send(ctx, tg, c)
		up.End(err, rep.result, rep.raw)
		sentBy = rep.via
		p.observeUpstream(info.Server, err, ctx.Err() != nil)
		if err != nil {
			if r, ok := refusalOf(err); ok {
				return nil, durable.Failed(r) // refused after a reconnect's re-listing
			}
			return nil, err
		}
		if rep.result == nil && rep.raw != nil {
			raw = rawresult.Result{JSON: rep.raw, IsError: wire.IsError(rep.raw)}
			return nil, nil
		}
		if res := rep.result; res != nil && res.InputRequests != nil {
			// The server asks the caller for input (the relay passes it
			// only to one that takes input): its state, sealed.
			sealed, err := p.inputs.Seal(round(info.Server, subject, req), res.RequestState)
			if err != nil {
				return nil, durable.Failed(err)
			}
			c := *res
			c.RequestState = sealed
			return &c, nil
		}
		return rep.result, nil
	}

	if req.key != "" {
		runID, callID = unitOfWork(subject, req.tool, req.key)
		// Contract: the tool's trusted contract as the served map holds it
		// (no store read); an approval is bound to it, so after a trust
		// that changes it the call asks again.
		c := durable.Call{RunID: runID, ToolCallID: callID, Server: info.Server, Tool: req.tool,
			RemoteName: info.RemoteName, Args: req.args, Owner: string(subject), Key: req.key, Contract: info.Contract}
		c.Audit = p.keyedAudit(subject, req, info.Server, runID, callID, start)
		keyed = c.Audit
		res, out.replayed, err = p.journal.Guarded(rawresult.With(ctx, &raw), c, p.guard, effect)
	} else {
		res, err = p.unkeyed(ctx, subject, req.tool, info, req.args, effect)
	}
	if raw.JSON != nil && !out.replayed && (err == nil || errors.Is(err, durable.ErrNotRecorded)) {
		if err != nil {
			p.log.Error("gateway: call ran but its outcome was not journaled", "tool", req.tool, "err", err)
		}
		out.raw, out.label = raw.JSON, outcomeOK
		if raw.IsError {
			out.label = outcomeToolError
		}
		return out
	}
	if errors.Is(err, toolset.ErrStreamEnded) && req.endStream {
		// The upstream ended the call's stream without answering: so does
		// the gateway, as a direct caller would see it.
		out.noAnswer, out.label = true, outcomeNoAnswer
		return out
	}
	replayed := out.replayed
	out = p.answer(info.Server, req.tool, res, err)
	out.replayed = replayed
	return out
}

// admissionOutcome is the answer to a call refused at admission: a
// rate_limited result, the unknown-tool error, or the limiter's failure.
func admissionOutcome(res *mcp.CallToolResult, err error) callOutcome {
	if res != nil {
		return callOutcome{result: res, label: string(refusal.RateLimited)}
	}
	if server.IsUnknownTool(err) {
		return callOutcome{err: err, label: outcomeUnknownTool}
	}
	return callOutcome{err: err, label: outcomeError}
}

// refused is the outcome of a refusal.
func refused(r *refusal.Error) callOutcome {
	return callOutcome{result: r.Result(), label: string(r.Code)}
}

// refusalOf returns the refusal a toolset error stands for (quarantined,
// tool_withdrawn: nothing was sent).
func refusalOf(err error) (*refusal.Error, bool) {
	var te *toolset.Error
	if !errors.As(err, &te) {
		return refusal.As(err) // subjectSender's (nothing was sent)
	}
	return te.Refusal()
}

// unkeyed runs a call without a work key: guards apply, nothing is
// journaled, and no idempotency key goes upstream.
func (p *pipeline) unkeyed(ctx context.Context, subject server.Subject, name string, info toolset.ToolInfo, args json.RawMessage, effect durable.Effect) (*mcp.CallToolResult, error) {
	d, err := policy.Evaluate(ctx, p.guard, policy.Call{Server: info.Server, Tool: name, RemoteName: info.RemoteName, Args: args, Subject: string(subject)})
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

// answer turns what the journal or the effect returned into what the
// caller gets.
func (p *pipeline) answer(srv, name string, res *mcp.CallToolResult, err error) callOutcome {
	if err == nil {
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		out := callOutcome{result: res, label: outcomeOK}
		if res.IsError {
			out.label = outcomeToolError
		}
		return out
	}
	if r, ok := refusal.As(err); ok {
		if r.Err != nil {
			p.log.Warn("gateway: call refused", "tool", name, "code", string(r.Code), "err", r.Err)
		}
		return refused(r)
	}
	if res != nil && errors.Is(err, durable.ErrNotRecorded) {
		p.log.Error("gateway: call ran but its outcome was not journaled", "tool", name, "err", err)
		return p.answer(srv, name, res, nil)
	}
	if ae := (*toolset.AnswerError)(nil); errors.As(err, &ae) {
		// The server answered the call with something not taken: the call
		// failed (and may have run); the server is sound.
		p.log.Warn("gateway: the server's answer was not taken", "tool", name, "err", err)
		return callOutcome{err: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: ae.Message}, label: outcomeRPCError}
	}
	if connectionLost(err) {
		// Before the JSON-RPC pass-through: the go-sdk reports a request
		// that never reached the server as a JSON-RPC error (-32005,
		// "rejected by transport") wrapping the dial error, which is the
		// gateway's own trouble, not an answer of the server's.
		wait, _ := p.health.Down(srv)
		return refused(&refusal.Error{Code: refusal.Unavailable, Retryable: true, RetryAfter: max(wait, time.Millisecond),
			Message: fmt.Sprintf("server %s is unavailable; the call may not have completed", srv)})
	}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return callOutcome{err: &jsonrpc.Error{Code: rpc.Code, Message: rpc.Message, Data: rpc.Data}, label: outcomeRPCError}
	}
	p.log.Error("gateway: call failed", "tool", name, "err", err)
	return callOutcome{label: outcomeError, result: &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
		Text: fmt.Sprintf("the call to %s failed at the gateway", name)}}}}
}

// describe answers mcp__describe_tool for tools the caller may see only.
func (p *pipeline) describe(ctx context.Context, subject server.Subject, info server.RequestInfo, args json.RawMessage) callOutcome {
	var in struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(args, &in)
	if in.Name == toolset.DescribeToolName || !p.served.visible(in.Name, subject, info) {
		// The toolset's own answer for a name it does not have: a hidden
		// tool cannot be told from a missing one.
		return callOutcome{label: outcomeToolError, result: &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
			Text: fmt.Sprintf("unknown tool %q: pass a tool name exactly as listed", in.Name)}}}}
	}
	res, err := p.ts.Call(ctx, toolset.DescribeToolName, map[string]any{"name": in.Name}, toolset.CallInfo{})
	return p.answer("", toolset.DescribeToolName, res, err)
}

// connectionLost reports errors after which the upstream must be
// reconnected.
func connectionLost(err error) bool {
	if errors.Is(err, toolset.ErrConnectionFailed) {
		return true
	}
	if errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, mcp.ErrSessionMissing) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	// A request the HTTP client could not deliver (refused, reset, no
	// route, an idle connection the server closed): the go-sdk wraps the
	// HTTP client's *url.Error (over a *net.OpError or net/http's own
	// errors) in its "rejected by transport" JSON-RPC error and keeps the
	// session, but the server is not there. A request the caller gave up
	// on is not the server's fault.
	var op *net.OpError
	if errors.As(err, &op) {
		return true
	}
	var ue *url.Error
	return errors.As(err, &ue) && !errors.Is(ue.Err, context.Canceled) && !errors.Is(ue.Err, context.DeadlineExceeded)
}

// recorded reports whether the unit of work (subject, tool, key) has a
// journal record.
func (p *pipeline) recorded(ctx context.Context, subject server.Subject, tool, key string) bool {
	if key == "" {
		return false
	}
	runID, callID := unitOfWork(subject, tool, key)
	_, err := p.st.GetRecord(ctx, store.RecordKey{Scope: journalScope, RunID: runID, ToolCallID: callID})
	return err == nil
}

// observeUpstream records a server's health after one upstream call.
func (p *pipeline) observeUpstream(srv string, err error, cancelled bool) {
	if cancelled { // a cancelled call says nothing about the server
		return
	}
	lost := err != nil && connectionLost(err)
	p.health.Observe(srv, lost)
	p.audit.Upstream(srv, lost)
	p.tel.Metrics.SetUpstreamUp(srv, !lost)
}

// finish writes the call's log line and counts it in the metrics. The
// metrics name the tool when it was served at admission (wasServed) or is
// served now, else unknownToolLabel: a caller-chosen name never becomes a
// label, and a tool withdrawn while its call ran is still counted under
// its own name (whether the served map had caught up by then was a race).
func (p *pipeline) finish(subject server.Subject, tool, front string, out *callOutcome, wasServed, cancelled bool, d time.Duration) {
	logCall(p.log, subject, tool, front, out, d)
	if !wasServed {
		if _, ok := p.served.tool(tool); !ok && !(tool == searchToolName && p.served.search.On) {
			tool = unknownToolLabel
		}
	}
	p.tel.Metrics.ObserveCall(tool, metricOutcome(out.label, cancelled), d)
}

// logCall writes a call's line to l: what l.LogAttrs would write, handed
// to l's handler as a record of its own. LogAttrs looks up its caller's
// program counter (runtime.Callers) for a source that no handler of the
// gateway prints: 0.65% of a plain call's gateway CPU (docs/BENCHMARKS.md).
func logCall(l *slog.Logger, subject server.Subject, tool, front string, out *callOutcome, d time.Duration) {
	ctx := context.Background()
	h := l.Handler()
	if !h.Enabled(ctx, slog.LevelInfo) {
		return
	}
	r := slog.NewRecord(time.Now(), slog.LevelInfo, "call", 0)
	r.AddAttrs(
		slog.String("subject", string(subject)),
		slog.String("tool", tool),
		slog.String("outcome", out.label),
		slog.Bool("replayed", out.replayed),
		slog.Float64("duration_ms", float64(d.Microseconds())/1000),
		slog.String("front", front),
		slog.String("sender", out.sender),
	)
	_ = h.Handle(ctx, r) // as LogAttrs: a handler's error is dropped
}

// maxRunIDLen is the longest _meta.runId the gateway accepts, in bytes.
const maxRunIDLen = 128

// runIDRule is the denied refusal's message for a runId out of bounds. It
// never repeats the value.
const runIDRule = "_meta.runId must be a string of 1 to 128 printable ASCII characters (no spaces or control characters)"

// validRunID reports whether a caller's _meta.runId is within bounds: 1 to
// maxRunIDLen bytes, each printable ASCII other than space (0x21-0x7e). A
// run ID names the caller's run, it carries no data: the bound keeps what a
// caller can make the gateway hash, compare and hold per call small, and
// the charset keeps it one unambiguous token wherever it is shown.
func validRunID(s string) bool {
	if len(s) == 0 || len(s) > maxRunIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// runKey carries the firewall's run of a call to the guard.
type runKey struct{}

// firewallRun names the run a call belongs to for the firewall: the
// caller's _meta.runId when it sends one (validRunID: bounded before it
// gets here), else its MCP session. It is scoped to the subject, so no
// caller can spend another's budget, and it is a hash (store.KeyHash), so
// the counter keys stay short and plain. A caller that sends another runId
// starts another run, with a budget of its own: the cap bounds one run,
// not a caller (that is the rate limit's job).
func firewallRun(subject server.Subject, runID, session string) string {
	if runID == "" {
		if session == "" {
			return ""
		}
		runID = "session:" + session
	}
	sum := store.KeyHash("gatehouse/run/v1", string(subject), runID)
	return "run_" + hex.EncodeToString(sum[:16])
}

// round is what the sealed state of a call's input requests is bound to.
func round(srv string, subject server.Subject, req *callRequest) inputstate.Binding {
	return inputstate.Binding{Server: srv, Subject: string(subject), Method: "tools/call", Name: req.tool, Args: inputstate.Digest(req.args)}
}

// roundKey is the work key of one round of a multi round-trip call: the
// caller's key with the server's state and the answers, so that each
// round is a unit of its own (a retry is not the first round's replay)
// and a round sent again is (the same answers to the same state).
func roundKey(key string, in relay.Retry) string {
	b, _ := json.Marshal(in.Responses)
	sum := store.KeyHash("gatehouse/gateway/round/v1", key, in.State, string(b))
	return key + "\x00round:" + hex.EncodeToString(sum[:16])
}

// unitOfWork names the journal record of (subject, tool, key): the run is
// the subject's use of the tool and the tool call the key within it, both
// hashed with the subject so one caller's key never names another's work.
// The upstream's _meta.idempotencyKey is runID:toolCallID; the caller's raw
// key never leaves the gateway.
func unitOfWork(subject server.Subject, tool, key string) (runID, toolCallID string) {
	run := store.KeyHash("gatehouse/gateway/v1", string(subject), tool)
	call := store.KeyHash("gatehouse/gateway/v1", string(subject), tool, key)
	return "gw_" + hex.EncodeToString(run[:12]), hex.EncodeToString(call[:])
}
