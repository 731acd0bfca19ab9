package relay

//lint:file-ignore SA1019 relaying sampling, elicitation and roots (deprecated by SEP-2577, still in 2025-11-25) is this package's job.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/inputstate"
)

// Multi round-trip requests (SEP-2322). A server at 2026-07-28 asks for
// input by answering tools/call, prompts/get or resources/read with input
// requests and a requestState, and is asked again with the answers and the
// state. The shared sessions do not fulfill input requests (the toolset's
// client passes them on); a caller's own session does, through the caller
// (the go-sdk's client asks the caller's session: 2025-11-25).
//
// A caller at 2026-07-28 (TakesInput) gets them: the requests as the server
// sent them, when it announced the capability each needs (in its
// request's _meta), and in place of the server's requestState a sealed one
// (inputstate) bound to the server, its subject, the request's name and
// arguments and an expiry. Its retry's state is opened and checked before
// anything is forwarded, and the server gets its own state back. Any
// replica opens it: nothing is stored. Any other caller on a shared
// session gets an error that says why it was not asked.

// TakesInput reports whether the caller answers input requests itself
// (it speaks 2026-07-28): an upstream's input requests are passed to it
// with a sealed requestState. A nil caller does not.
func (c *Caller) TakesInput() bool { return c != nil && c.takesInput }

// Retry is a multi round-trip retry as a caller at 2026-07-28 sent it:
// its answers and its (sealed) requestState.
type Retry struct {
	Responses mcp.InputResponseMap
	State     string
}

// Present reports whether the request was a retry.
func (rt Retry) Present() bool { return rt.State != "" || rt.Responses != nil }

// errInputNotForwarded answers a request whose server asked for input the
// caller cannot be asked for on the session the request took.
func errInputNotForwarded(reqs mcp.InputRequestMap, caller *Caller) error {
	msg := fmt.Sprintf("the server asked for input (%s) that the gateway forwards only to a caller at 2026-07-28, or to a stateful caller that announced the capability", inputKinds(reqs))
	if caller.TakesInput() {
		msg = fmt.Sprintf("the server asked for input (%s) that the calling client did not announce in its request's capabilities", inputKinds(reqs))
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: msg}
}

// inputKinds names the capabilities input requests need, sorted.
func inputKinds(reqs mcp.InputRequestMap) string {
	var kinds []string
	for _, ir := range reqs {
		k := inputKind(ir)
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	if len(kinds) == 0 {
		return "none: the server is busy"
	}
	return strings.Join(kinds, ", ")
}

func inputKind(ir mcp.InputRequest) string {
	switch ir.(type) {
	case *mcp.ElicitParams:
		return "elicitation"
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return "sampling"
	case *mcp.ListRootsParams:
		return "roots"
	}
	return fmt.Sprintf("%T", ir)
}

// inputNeeds is the capability an input request needs (0: unknown).
func inputNeeds(ir mcp.InputRequest) Needs {
	switch ir.(type) {
	case *mcp.ElicitParams:
		return NeedsElicitation
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return NeedsSampling
	case *mcp.ListRootsParams:
		return NeedsRoots
	}
	return 0
}

// passInput reports (nil) whether a server's input requests may go to the
// caller: it takes input and announced what each needs. A load-shedding
// answer (no requests: retry later) goes to any caller that takes input.
func passInput(caller *Caller, reqs mcp.InputRequestMap) error {
	if !caller.TakesInput() {
		return errInputNotForwarded(reqs, caller)
	}
	has := NeedsOf(caller.inputCaps)
	for _, ir := range reqs {
		if n := inputNeeds(ir); n == 0 || has&n == 0 {
			return errInputNotForwarded(reqs, caller)
		}
	}
	return nil
}

// StateError is the answer to a retry whose requestState does not open or
// is not the request's own (inputstate's errors): invalid params, and
// nothing was forwarded.
func StateError(method string, err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: %v; nothing was forwarded", method, err)}
}

// ErrNoState answers inputResponses sent without the requestState this
// gateway issues with every input request.
var errNoState = fmt.Errorf("inputResponses without requestState (%w)", inputstate.ErrMalformed)

// OpenRetry opens a retry's sealed state for b: the server's own state.
func OpenRetry(s *inputstate.Sealer, method string, rt Retry, b inputstate.Binding) (string, error) {
	if rt.State == "" {
		return "", StateError(method, errNoState)
	}
	st, err := s.Open(rt.State, b)
	if err != nil {
		return "", StateError(method, err)
	}
	return st, nil
}

// subjectOf is the caller's subject for a binding.
func (r *Relay) subjectOf(ctx context.Context, from asker) (string, bool) {
	if r.o.Subject == nil {
		return "", true
	}
	return r.o.Subject(ctx, from.req, from.local)
}

// contentRound is a prompts/get or resources/read for a caller that
// takes input: what its state is bound to, and the server's state of its
// retry.
type contentRound struct {
	subject, server, method, name string
	args                          any
	state                         string // the server's own, opened from the retry's
	retry                         bool
}

// binding is what the round's state is bound to (made when it is needed:
// a plain request digests nothing).
func (cr contentRound) binding() inputstate.Binding {
	var raw []byte
	if cr.args != nil {
		raw, _ = json.Marshal(cr.args)
	}
	return inputstate.Binding{Server: cr.server, Subject: cr.subject, Method: cr.method, Name: cr.name, Args: inputstate.Digest(raw)}
}

// openContent checks a prompts/get or resources/read retry (rt) of caller
// for server: the binding its state must have, and the server's own state.
// A caller that does not take input sends nothing of a retry upstream.
func (r *Relay) openContent(ctx context.Context, caller *Caller, from asker, server, method, name string, args any, rt Retry) (contentRound, error) {
	if !caller.TakesInput() || r.o.Inputs == nil {
		return contentRound{}, nil
	}
	subject, ok := r.subjectOf(ctx, from)
	if !ok {
		return contentRound{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: method + ": the caller is not identified"}
	}
	cr := contentRound{subject: subject, server: server, method: method, name: name, args: args}
	if !rt.Present() {
		return cr, nil
	}
	st, err := OpenRetry(r.o.Inputs, method, rt, cr.binding())
	if err != nil {
		return contentRound{}, err
	}
	cr.state, cr.retry = st, true
	return cr, nil
}

// sealContent passes a server's input requests on to the caller with a
// sealed state (the result is a copy), or answers why not.
func (r *Relay) sealContent(caller *Caller, cr contentRound, reqs mcp.InputRequestMap, state string, set func(sealed string)) error {
	if err := passInput(caller, reqs); err != nil || r.o.Inputs == nil {
		if err == nil {
			err = errInputNotForwarded(reqs, nil)
		}
		return err
	}
	sealed, err := r.o.Inputs.Seal(cr.binding(), state)
	if err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	set(sealed)
	return nil
}
