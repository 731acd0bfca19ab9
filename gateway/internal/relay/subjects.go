package relay

//lint:file-ignore SA1019 relaying sampling and elicitation (deprecated by SEP-2577, still in 2025-11-25) to the callers of subject sessions is this package's job.

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// SubjectContent reaches the servers whose content is each subject's own
// (Options.Subjects): servers that answer with the account of whoever
// asks (the gateway's servers with auth: user or exchange), so that their
// resources, prompts and completions must come from that subject's own
// upstream session, never from the server's shared session or a session
// the relay opened for a caller (both carry the gateway's credentials).
type SubjectContent interface {
	// Own reports whether server's content is each subject's own.
	Own(server string) bool
	// Do runs op on subject's own upstream session to server for req
	// (whose transport's credentials may be what that session needs: a
	// token to exchange), with the context op must send with. It returns
	// op's error, or the error that answers req instead when subject may
	// not reach server now (its own account not connected): a
	// *jsonrpc.Error reaches the caller as it is, data included.
	Do(ctx context.Context, server, subject string, req mcp.Request, op func(context.Context, *mcp.ClientSession) error) error
}

// asker is who sent a forwarded request: the request (its session, its
// transport's credentials) and whether the stdio server serves it.
type asker struct {
	req   mcp.Request
	local bool
}

// own reports whether u's content is each subject's own (Options.Subjects).
func (r *Relay) own(u *toolset.Upstream) bool {
	return r.o.Subjects != nil && r.o.Subjects.Own(u.Name())
}

// forwardContent runs op, a request for u's content on behalf of the
// caller st (from: its request), where that content comes from: the
// session of the caller's subject's own when u's content is each
// subject's (Options.Subjects), else the caller's session as forward
// picks it. op gets the context to send with.
func (r *Relay) forwardContent(ctx context.Context, u *toolset.Upstream, st *callerState, from asker, op func(context.Context, *mcp.ClientSession) error) error {
	if !r.own(u) {
		return r.forward(ctx, u, st, func(s *mcp.ClientSession) error { return op(ctx, s) })
	}
	if r.closed() {
		return &toolset.Error{Code: toolset.CodeClosed}
	}
	subject, ok := "", from.req != nil
	if ok && r.o.Subject != nil {
		subject, ok = r.o.Subject(ctx, from.req, from.local)
	}
	if !ok {
		// Nobody's session: the content is nobody's to read.
		return errNoSubject
	}
	if st != nil {
		// The subject's session asks this caller, or passes the server's
		// input requests to it (SubjectClient).
		ctx = context.WithValue(ctx, callerCtxKey{}, st)
	}
	return r.o.Subjects.Do(ctx, u.Name(), subject, from.req, op)
}

// WithCaller returns ctx carrying caller (nil: ctx as it is), for a
// request of caller sent on its subject's own upstream session
// (SubjectClient): the session's input requests are the caller's.
func (r *Relay) WithCaller(ctx context.Context, caller *Caller) context.Context {
	if st := r.callerState(caller); st != nil {
		return context.WithValue(ctx, callerCtxKey{}, st)
	}
	return ctx
}

// PassesInput reports whether the caller a request is sent for (ctx:
// WithCaller, or the relay's own forwarding) answers a server's input
// requests itself (Caller.TakesInput): its subject's session for it must
// pass them on (SubjectClient).
func PassesInput(ctx context.Context) bool {
	st, _ := ctx.Value(callerCtxKey{}).(*callerState)
	return st != nil && st.caller.TakesInput()
}

// SubjectClient sets, in o, what a client of the subjects' own upstream
// sessions (the gateway's servers with auth: user or exchange, whose
// sessions serve every caller of one subject) does with a server's input
// requests (a multi round-trip result, SEP-2322), as the relay does on
// the sessions it makes: for callers that take input (passInput true,
// PassesInput), nothing: the result reaches the request's sender, which
// passes it on to its caller with a sealed state, as from a shared
// session. For the others, the go-sdk's client fulfills them by asking
// the caller of the request (its context: WithCaller), as a caller's own
// session does: sampling and elicitation when the caller announced them,
// refused otherwise (and roots/list answered with the client's roots,
// none, as there).
func SubjectClient(o *mcp.ClientOptions, passInput bool) {
	if passInput {
		o.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
		return
	}
	o.CreateMessageWithToolsHandler = func(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
		st, _ := ctx.Value(callerCtxKey{}).(*callerState)
		return askSampling(ctx, st, req.Params)
	}
	o.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		st, _ := ctx.Value(callerCtxKey{}).(*callerState)
		return askElicitation(ctx, st, req.Params)
	}
}

// errNoSubject answers a request for a per-subject server's content whose
// caller has no subject the relay could learn.
var errNoSubject = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the gateway has no subject for this request, whose server answers each subject with its own account"}

// subscribeOwn is the answer to resources/subscribe for a URI of a server
// whose content is each subject's own: refused, and nothing is sent. An
// update on a subject's own session could not be kept to that subject's
// sessions (the go-sdk's server tells every session subscribed to a URI),
// and the server's shared session, which could hold the subscription,
// reads as the gateway's account, not the caller's.
func subscribeOwn(u *toolset.Upstream) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
		"resources/subscribe is not offered for server %s: its resources are each caller's own account's, and the gateway cannot keep updates to the account that subscribed; read the resource again instead (or, if its content is the same for everyone, an operator sets servers.%s.sharedContent)",
		u.Name(), u.Name())}
}
