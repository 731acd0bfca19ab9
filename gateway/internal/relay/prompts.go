package relay

//lint:file-ignore SA1019 relaying sampling, elicitation, roots and logging (deprecated by SEP-2577, still in 2025-11-25) is this package's job.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// resolvePrompt routes a projected prompt name, listing again once when
// it is unknown. Unknown and hidden names get the same error.
func (r *Relay) resolvePrompt(ctx context.Context, name string, allow allowFunc) (promptRoute, error) {
	get := func() (promptRoute, bool) {
		r.mu.Lock()
		defer r.mu.Unlock()
		pr, ok := r.prompts[name]
		return pr, ok
	}
	pr, ok := get()
	if !ok || !pr.fresh() {
		if _, err := r.listAll(ctx); err != nil {
			return promptRoute{}, err
		}
		pr, ok = get()
	}
	if !ok {
		r.mu.Lock()
		q, quarantined := r.qprompts[name]
		r.mu.Unlock()
		if quarantined && allow.allows(q.up.Name()) {
			return promptRoute{}, q.up.QuarantinedPrompt(q.remote)
		}
	}
	if !ok || !allow.allows(pr.up.Name()) {
		return promptRoute{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", name)}
	}
	return pr, nil
}

// getPrompt gets a prompt by its projected name, for from
// (forwardContent).
func (r *Relay) getPrompt(ctx context.Context, caller *Caller, params *mcp.GetPromptParams, allow allowFunc, from asker) (*mcp.GetPromptResult, error) {
	pr, err := r.resolvePrompt(ctx, params.Name, allow)
	if err != nil {
		return nil, err
	}
	var args any
	if params.Arguments != nil {
		args = params.Arguments
	}
	cr, err := r.openContent(ctx, caller, from, pr.up.Name(), "prompts/get", params.Name, args, Retry{params.InputResponses, params.RequestState})
	if err != nil {
		return nil, err
	}
	var res *mcp.GetPromptResult
	err = r.forwardContent(ctx, pr.up, r.callerState(caller), from, func(ctx context.Context, s *mcp.ClientSession) error {
		p := *params
		p.Name = pr.remote
		p.Meta = forwardMeta(params.Meta)
		p.InputResponses, p.RequestState = nil, ""
		if cr.retry {
			p.InputResponses, p.RequestState = params.InputResponses, cr.state
		}
		var err error
		res, err = s.GetPrompt(ctx, &p)
		return err
	})
	if err == nil && res != nil && res.InputRequests != nil {
		c := *res
		if err := r.sealContent(caller, cr, c.InputRequests, c.RequestState, func(s string) { c.RequestState = s }); err != nil {
			return nil, err
		}
		return &c, nil
	}
	return res, err
}

// complete forwards completion/complete to the server of the prompt (by
// projected name) or resource template (by URI template) it refers to,
// for from (forwardContent).
func (r *Relay) complete(ctx context.Context, caller *Caller, params *mcp.CompleteParams, allow allowFunc, from asker) (*mcp.CompleteResult, error) {
	if params == nil || params.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing ref"}
	}
	p := *params
	p.Meta = forwardMeta(params.Meta)
	ref := *params.Ref
	p.Ref = &ref
	var u *toolset.Upstream
	switch ref.Type {
	case "ref/prompt":
		pr, err := r.resolvePrompt(ctx, ref.Name, allow)
		if err != nil {
			return nil, err
		}
		u, ref.Name = pr.up, pr.remote
	case "ref/resource":
		var stale bool
		u, stale = r.templateOwner(ref.URI)
		if u == nil || stale {
			if _, err := r.listAll(ctx); err != nil {
				return nil, err
			}
			u, _ = r.templateOwner(ref.URI)
		}
		if u == nil {
			if q, raw := r.quarantinedTemplate(ref.URI, true); q != nil && allow.allows(q.Name()) {
				return nil, q.QuarantinedTemplate(raw)
			}
		}
		if u == nil {
			// A concrete URI in the ref: route it like a read.
			var err error
			if u, err = r.resolveURI(ctx, ref.URI, allow); err != nil {
				return nil, err
			}
		}
		if !allow.allows(u.Name()) {
			return nil, mcp.ResourceNotFoundError(ref.URI)
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown ref type %q", ref.Type)}
	}
	var res *mcp.CompleteResult
	err := r.forwardContent(ctx, u, r.callerState(caller), from, func(ctx context.Context, s *mcp.ClientSession) error {
		var err error
		res, err = s.Complete(ctx, &p)
		return err
	})
	return res, err
}

// templateOwner returns the server of a URI template (nil when none, or
// several servers'), and whether its route is stale.
func (r *Relay) templateOwner(tmpl string) (found *toolset.Upstream, stale bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rt := range r.templates {
		if rt.tmpl.Raw() == tmpl {
			stale = stale || !rt.fresh()
			if found != nil && found != rt.up {
				return nil, stale
			}
			found = rt.up
		}
	}
	return found, stale
}

// setLoggingLevel sets the caller's log level. The caller then gets
// dedicated upstream sessions (created with this level; existing ones are
// told), so the log messages of its requests reach it and no one else
// (and its resource subscriptions move there: adopt). Servers whose
// content is each subject's own (Options.Subjects) are skipped: no
// session is opened to them for a level. A
// server a cap keeps the caller from (acquire) is not told (its shared
// session is everyone's): the answer is then a *jsonrpc.Error with
// CodeUpstreamCap naming those servers, and the level reaches each of them
// when a slot frees and the caller's next request there takes it.
func (r *Relay) setLoggingLevel(ctx context.Context, caller *Caller, level mcp.LoggingLevel, allow allowFunc) error {
	st := r.callerState(caller)
	if st == nil {
		return nil
	}
	st.mu.Lock()
	st.level = level
	st.mu.Unlock()
	ups, err := r.forwardable(ctx, allow)
	if err != nil {
		return err
	}
	var capped []string
	for _, u := range ups {
		// A server whose content is each subject's own answers no one
		// through a session the relay opens (it would carry the gateway's
		// credentials, not the caller's): its level is not set.
		if u.Capabilities().Logging == nil || r.own(u) {
			continue
		}
		err := r.forward(ctx, u, st, func(s *mcp.ClientSession) error {
			if r.serverOf(st, s) == "" {
				return errCapped
			}
			return s.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level})
		})
		if err == errCapped {
			capped = append(capped, u.Name())
		} else if err != nil {
			r.log.Debug("relay: setting the log level upstream", "server", u.Name(), "err", err)
		}
	}
	if len(capped) > 0 {
		data, _ := json.Marshal(map[string]any{"servers": capped})
		return &jsonrpc.Error{Code: CodeUpstreamCap, Data: data, Message: fmt.Sprintf(
			"the log level was not applied to %s: the gateway's cap on upstream sessions of their own is reached there; their log messages do not reach this session until a slot frees",
			strings.Join(capped, ", "))}
	}
	return nil
}

// CodeUpstreamCap is the JSON-RPC error code of a logging/setLevel that
// could not reach every server because a cap on upstream sessions
// (Options.UpstreamPerServer, Options.UpstreamPerSubject) is reached. Its
// data is {"servers": [names]}.
const CodeUpstreamCap = -32031

// errCapped: a caller's request reached a server's shared session because
// of a cap, for something only its own session may carry.
var errCapped = errors.New("relay: no upstream session of the caller's own (cap reached)")
