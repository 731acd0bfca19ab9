package relay

//lint:file-ignore SA1019 relaying sampling, elicitation, roots and logging (deprecated by SEP-2577, still in 2025-11-25) is this package's job.

import (
	"context"
	"errors"
	"iter"
	"slices"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/relay/internal/upsub"
	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/internal/projection"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// forwardable returns the servers whose tools are served that allow lets
// through.
func (r *Relay) forwardable(ctx context.Context, allow allowFunc) ([]*toolset.Upstream, error) {
	ups, err := r.ts.Upstreams(ctx)
	if err != nil {
		return nil, err
	}
	out := ups[:0]
	for _, u := range ups {
		if allow.allows(u.Name()) {
			out = append(out, u)
		}
	}
	return out, nil
}

// capabilities returns the union of the upstream servers' resources,
// prompts, completions and logging capabilities (what a gateway should
// advertise).
func (r *Relay) capabilities(ctx context.Context) (*mcp.ServerCapabilities, error) {
	ups, err := r.forwardable(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := &mcp.ServerCapabilities{}
	for _, u := range ups {
		caps := u.Capabilities()
		if caps.Resources != nil {
			if out.Resources == nil {
				out.Resources = &mcp.ResourceCapabilities{ListChanged: true}
			}
			out.Resources.Subscribe = out.Resources.Subscribe || caps.Resources.Subscribe
		}
		if caps.Prompts != nil {
			out.Prompts = &mcp.PromptCapabilities{ListChanged: true}
		}
		if caps.Completions != nil {
			out.Completions = &mcp.CompletionCapabilities{}
		}
		if caps.Logging != nil {
			out.Logging = &mcp.LoggingCapabilities{}
		}
	}
	return out, nil
}

// listResources lists the resources of every server allow lets through,
// URIs as the servers publish them. A URI published by two servers is
// withheld (both) and logged: nobody shadows anybody. So is a URI with
// characters projection.Sanitize removes (a caller must send it back
// exactly). Names, titles, descriptions, MIME types and _meta are
// sanitized.
func (r *Relay) listResources(ctx context.Context, allow allowFunc) ([]*mcp.Resource, error) {
	out, err := collectListed(ctx, r, allow, func(l *listed) map[*toolset.Upstream][]*mcp.Resource { return l.resources })
	sort.Slice(out, func(i, j int) bool { return out[i].URI < out[j].URI })
	return out, err
}

// listResourceTemplates lists the trusted resource templates of every
// server allow lets through, but those whose URI template has characters
// projection.Sanitize removes (neither listed nor routed).
func (r *Relay) listResourceTemplates(ctx context.Context, allow allowFunc) ([]*mcp.ResourceTemplate, error) {
	return collectListed(ctx, r, allow, func(l *listed) map[*toolset.Upstream][]*mcp.ResourceTemplate { return l.templates })
}

// listPrompts lists the trusted prompts of every server allow lets through
// under projected names (the tools' rules: prefix__name, or the name alone
// with prefix ""), but those with an argument whose name has characters
// projection.Sanitize removes (neither listed nor routed: unknown).
func (r *Relay) listPrompts(ctx context.Context, allow allowFunc) ([]*mcp.Prompt, error) {
	out, err := collectListed(ctx, r, allow, func(l *listed) map[*toolset.Upstream][]*mcp.Prompt { return l.prompts })
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// listEvery lists every page of one kind of u's items on its shared
// session (a lost session re-established once). On an error it returns
// what was read before it.
func listEvery[T any](ctx context.Context, r *Relay, u *toolset.Upstream, list func(*mcp.ClientSession) iter.Seq2[T, error]) ([]T, error) {
	var out []T
	err := r.forward(ctx, u, nil, func(s *mcp.ClientSession) error {
		out = out[:0]
		for item, err := range list(s) {
			if err != nil {
				return err
			}
			out = append(out, item)
		}
		return nil
	})
	return out, err
}

// collectListed gathers one kind of listing from every server allow lets
// through, in server order.
func collectListed[T any](ctx context.Context, r *Relay, allow allowFunc, pick func(*listed) map[*toolset.Upstream][]T) ([]T, error) {
	ups, err := r.forwardable(ctx, allow)
	if err != nil {
		return nil, err
	}
	all, err := r.listAll(ctx)
	if err != nil {
		return nil, err
	}
	byUp := pick(all)
	var out []T
	for _, u := range ups {
		out = append(out, byUp[u]...)
	}
	return out, nil
}

type listed struct {
	resources map[*toolset.Upstream][]*mcp.Resource
	templates map[*toolset.Upstream][]*mcp.ResourceTemplate
	prompts   map[*toolset.Upstream][]*mcp.Prompt
}

// listAll lists resources, templates and prompts of every live server
// (through the shared sessions) and rebuilds the routing maps. Prompts and
// templates are judged against their server's pins as they are listed
// (Upstream.AdmitPrompts): only trusted ones are listed and routed;
// changed ones are remembered for their refusal.
func (r *Relay) listAll(ctx context.Context) (*listed, error) {
	ups, err := r.forwardable(ctx, nil)
	if err != nil {
		return nil, err
	}
	l := &listed{resources: map[*toolset.Upstream][]*mcp.Resource{}, templates: map[*toolset.Upstream][]*mcp.ResourceTemplate{}, prompts: map[*toolset.Upstream][]*mcp.Prompt{}}
	owner := map[string][]*toolset.Upstream{}
	powner := map[string][]promptRoute{}
	qprompts := map[string]promptRoute{}
	var tmpls, qtmpls []routedTemplate
	for _, u := range ups {
		if u.Live() == nil {
			// A woken server is connected on first use: this is one.
			if _, err := u.Session(ctx); err != nil {
				r.log.Debug("relay: connecting to list", "server", u.Name(), "err", err)
				continue
			}
		}
		gen := u.Generation() // before the listing: a judgement after it makes these routes stale
		caps := u.Capabilities()
		if caps.Resources != nil {
			rs, _ := listEvery(ctx, r, u, func(s *mcp.ClientSession) iter.Seq2[*mcp.Resource, error] { return s.Resources(ctx, nil) })
			l.resources[u] = make([]*mcp.Resource, 0, len(rs))
			for _, res := range rs {
				if projection.Sanitize(res.URI) != res.URI { // listed neither sanitized nor as sent
					r.log.Warn("relay: resource URI with hidden characters; withheld", "server", u.Name(), "uri", pin.SanitizeName(res.URI))
					continue
				}
				cp := *res
				cp.Name, cp.Title, cp.Description = projection.Sanitize(res.Name), projection.Sanitize(res.Title), projection.Sanitize(res.Description)
				cp.MIMEType, cp.Meta = projection.Sanitize(res.MIMEType), projection.SanitizeObject(res.Meta)
				l.resources[u] = append(l.resources[u], &cp)
			}
			live, err := listEvery(ctx, r, u, func(s *mcp.ClientSession) iter.Seq2[*mcp.ResourceTemplate, error] {
				return s.ResourceTemplates(ctx, nil)
			})
			if err == nil {
				a := u.AdmitTemplates(live)
				l.templates[u] = nil
				for _, rt := range live {
					tm, terr := uritemplate.New(rt.URITemplate)
					switch {
					case a.Quarantined[rt.URITemplate]:
						if terr == nil {
							qtmpls = append(qtmpls, routedTemplate{tmpl: tm, up: u, gen: gen})
						}
						continue
					case !a.Trusted[rt.URITemplate]:
						continue
					case projection.Sanitize(rt.URITemplate) != rt.URITemplate: // listed neither sanitized nor as sent
						r.log.Warn("relay: resource template with hidden characters; withheld", "server", u.Name(), "template", pin.SanitizeName(rt.URITemplate))
						continue
					}
					cp := *rt
					cp.Name, cp.Title, cp.Description = projection.Sanitize(rt.Name), projection.Sanitize(rt.Title), projection.Sanitize(rt.Description)
					cp.MIMEType, cp.Meta = projection.Sanitize(rt.MIMEType), projection.SanitizeObject(rt.Meta)
					l.templates[u] = append(l.templates[u], &cp)
					if terr == nil {
						tmpls = append(tmpls, routedTemplate{tmpl: tm, up: u, gen: gen})
					}
				}
			}
			for _, res := range l.resources[u] {
				owner[res.URI] = append(owner[res.URI], u)
			}
		}
		if caps.Prompts != nil {
			live, err := listEvery(ctx, r, u, func(s *mcp.ClientSession) iter.Seq2[*mcp.Prompt, error] { return s.Prompts(ctx, nil) })
			if err == nil {
				a := u.AdmitPrompts(live)
				l.prompts[u] = nil
				for _, p := range live {
					if a.Quarantined[p.Name] {
						qprompts[u.ProjectedName(p.Name)] = promptRoute{up: u, remote: p.Name, gen: gen}
						continue
					}
					if !a.Trusted[p.Name] {
						continue
					}
					if slices.ContainsFunc(p.Arguments, func(arg *mcp.PromptArgument) bool { return arg != nil && projection.Sanitize(arg.Name) != arg.Name }) {
						r.log.Warn("relay: prompt argument name with hidden characters; withheld", "server", u.Name(), "prompt", pin.SanitizeName(p.Name))
						continue
					}
					cp := *p
					cp.Name = u.ProjectedName(p.Name)
					cp.Title, cp.Description = projection.Sanitize(p.Title), projection.Sanitize(p.Description)
					cp.Meta = projection.SanitizeObject(p.Meta)
					cp.Arguments = nil
					for _, a := range p.Arguments {
						if a == nil {
							continue // a null in the server's list: nothing to forward
						}
						ac := *a
						ac.Title, ac.Description = projection.Sanitize(a.Title), projection.Sanitize(a.Description)
						cp.Arguments = append(cp.Arguments, &ac)
					}
					l.prompts[u] = append(l.prompts[u], &cp)
					powner[cp.Name] = append(powner[cp.Name], promptRoute{up: u, remote: p.Name, gen: gen})
				}
			}
		}
	}
	uris := map[string]*toolset.Upstream{}
	for uri, us := range owner {
		if len(us) == 1 {
			uris[uri] = us[0]
			continue
		}
		r.log.Warn("relay: resource URI published by several servers; withheld from all", "uri", pin.SanitizeName(uri), "servers", len(us))
		for _, u := range us {
			l.resources[u] = withoutURI(l.resources[u], uri)
		}
	}
	prompts := map[string]promptRoute{}
	for name, rs := range powner {
		if len(rs) == 1 {
			prompts[name] = rs[0]
			continue
		}
		r.log.Warn("relay: prompt name projected by several servers; withheld from all", "prompt", pin.SanitizeName(name))
		for _, pr := range rs {
			l.prompts[pr.up] = withoutPrompt(l.prompts[pr.up], name)
		}
	}
	r.mu.Lock()
	r.uris, r.templates, r.prompts = uris, tmpls, prompts
	r.qprompts, r.qtemplates = qprompts, qtmpls
	r.mu.Unlock()
	return l, nil
}

func withoutURI(rs []*mcp.Resource, uri string) []*mcp.Resource {
	return slices.DeleteFunc(slices.Clone(rs), func(r *mcp.Resource) bool { return r.URI == uri })
}

func withoutPrompt(ps []*mcp.Prompt, name string) []*mcp.Prompt {
	return slices.DeleteFunc(slices.Clone(ps), func(p *mcp.Prompt) bool { return p.Name == name })
}

// matchTemplateLocked returns the server of the templates uri matches
// (nil when none, or several servers'), and whether one of them is stale
// (see promptRoute.fresh).
func (r *Relay) matchTemplateLocked(uri string) (found *toolset.Upstream, stale bool) {
	for _, rt := range r.templates {
		if rt.tmpl.Regexp().MatchString(uri) {
			stale = stale || !rt.fresh()
			if found != nil && found != rt.up {
				return nil, stale // ambiguous: nobody
			}
			found = rt.up
		}
	}
	return found, stale
}

// routeURI returns the server of a resource URI from the last listing, and
// whether it was routed by a stale template.
func (r *Relay) routeURI(uri string) (*toolset.Upstream, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if u := r.uris[uri]; u != nil {
		return u, false
	}
	return r.matchTemplateLocked(uri)
}

// resolveURI routes a URI, listing again once when it is unknown or was
// routed by a template listed before its server was last judged.
func (r *Relay) resolveURI(ctx context.Context, uri string, allow allowFunc) (*toolset.Upstream, error) {
	u, stale := r.routeURI(uri)
	if u == nil || stale {
		if _, err := r.listAll(ctx); err != nil {
			return nil, err
		}
		u, _ = r.routeURI(uri)
	}
	if u == nil {
		if q, raw := r.quarantinedTemplate(uri, false); q != nil && allow.allows(q.Name()) {
			return nil, q.QuarantinedTemplate(raw)
		}
	}
	if u == nil || !allow.allows(u.Name()) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return u, nil
}

// quarantinedTemplate returns the server and URI template of a quarantined
// resource template that uri matches (or, with raw, that is uri).
func (r *Relay) quarantinedTemplate(uri string, raw bool) (*toolset.Upstream, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rt := range r.qtemplates {
		if raw && rt.tmpl.Raw() == uri || !raw && rt.tmpl.Regexp().MatchString(uri) {
			return rt.up, rt.tmpl.Raw()
		}
	}
	return nil, ""
}

// readResource reads a resource from the server that publishes its URI
// (or a template matching it), for from (forwardContent: a server whose
// content is each subject's own is read on the subject's own session).
// An unknown or hidden URI gets the resource-not-found error. The
// answer's cacheScope is the upstream's, or "private" when it states none.
func (r *Relay) readResource(ctx context.Context, caller *Caller, params *mcp.ReadResourceParams, allow allowFunc, from asker) (*mcp.ReadResourceResult, error) {
	u, err := r.resolveURI(ctx, params.URI, allow)
	if err != nil {
		return nil, err
	}
	cr, err := r.openContent(ctx, caller, from, u.Name(), "resources/read", params.URI, nil, Retry{params.InputResponses, params.RequestState})
	if err != nil {
		return nil, err
	}
	var res *mcp.ReadResourceResult
	err = r.forwardContent(ctx, u, r.callerState(caller), from, func(ctx context.Context, s *mcp.ClientSession) error {
		p := *params
		p.Meta = forwardMeta(params.Meta)
		p.InputResponses, p.RequestState = nil, ""
		if cr.retry {
			p.InputResponses, p.RequestState = params.InputResponses, cr.state
		}
		var err error
		res, err = s.ReadResource(ctx, &p)
		return err
	})
	if err == nil && res != nil && res.InputRequests != nil {
		c := *res
		if err := r.sealContent(caller, cr, c.InputRequests, c.RequestState, func(s string) { c.RequestState = s }); err != nil {
			return nil, err
		}
		return &c, nil
	}
	if res != nil && res.CacheScope == "" { // read for this caller: private unless the upstream says otherwise
		c := *res
		c.CacheScope = "private"
		res = &c
	}
	return res, err
}

// subscribe subscribes the caller to a resource's updates. A caller with
// an upstream session of its own to the URI's server (see Caller) holds
// the subscription there: a server may scope what it sends to the session
// that asked (server-everything sends the updates its
// toggle-subscriber-updates tool starts only on that tool's session, for
// that session's subscriptions), and the caller's calls go through that
// session. Its updates reach that caller alone (ownUpdate). Every other
// subscription is held on the server's shared session, whoever subscribes:
// one upstream subscription serves every subscriber, and an update is the
// server's, about its resource, for the sessions subscribed to it
// (onResourceUpdated). A server whose content is each subject's own
// (Options.Subjects) is refused (subscribeOwn): its shared session reads
// as nobody's account.
func (r *Relay) subscribe(ctx context.Context, caller *Caller, uri string, allow allowFunc) error {
	u, err := r.resolveURI(ctx, uri, allow)
	if err != nil {
		return err
	}
	if r.own(u) {
		return subscribeOwn(u)
	}
	st := r.callerState(caller)
	if st != nil && st.dedicated() {
		if held, err := r.subscribeDedicated(ctx, u, st, uri); held || err != nil {
			return err
		}
		// A cap keeps it from a session of its own: it shares.
	}
	// Subscribing and the last unsubscribing of a server's URIs take
	// turns: an unsubscribe decided before this subscribe cannot reach
	// the server after it. The caller is registered once subscribed.
	mu := r.lock(u)
	mu.Lock()
	defer mu.Unlock()
	err = r.forward(ctx, u, nil, func(s *mcp.ClientSession) error {
		return r.ups.Subscribe(ctx, s, upsub.Target{Server: u.Name(), HTTP: u.Type() == "streamable-http"}, uri, true)
	})
	if err != nil || st == nil {
		return err
	}
	r.mu.Lock()
	gone := caller.released.Load() // release sets it under r.mu
	if !gone {
		m := r.subs[uri]
		if m == nil {
			m = map[string]*callerState{}
			r.subs[uri] = m
		}
		m[caller.id] = st
	}
	orphan := gone && len(r.subs[uri]) == 0
	r.mu.Unlock()
	if orphan { // its release could not see this subscription: undo it
		return r.forward(ctx, u, nil, func(s *mcp.ClientSession) error { return r.ups.Unsubscribe(ctx, s, uri) })
	}
	return nil
}

// subscribeDedicated subscribes st's own session to u (made now if
// needed) to uri. held=false with a nil error: a cap keeps the caller
// from a session of its own.
func (r *Relay) subscribeDedicated(ctx context.Context, u *toolset.Upstream, st *callerState, uri string) (held bool, err error) {
	err = r.forward(ctx, u, st, func(s *mcp.ClientSession) error {
		if r.serverOf(st, s) == "" {
			return errCapped
		}
		if err := r.ups.Subscribe(ctx, s, ownTarget(u), uri, true); err != nil {
			return err
		}
		st.mu.Lock()
		if st.closed {
			st.mu.Unlock()
			return &toolset.Error{Code: toolset.CodeClosed, Server: u.Name(), Err: errors.New("the caller was released")}
		}
		if st.subs == nil {
			st.subs = map[string]ownSub{}
		}
		st.subs[uri] = ownSub{up: u, sess: s}
		st.mu.Unlock()
		return nil
	})
	if errors.Is(err, errCapped) {
		return false, nil
	}
	return true, err
}

// ownTarget is the upsub target of a caller's own session to u.
func ownTarget(u *toolset.Upstream) upsub.Target {
	return upsub.Target{Server: u.Name(), HTTP: u.Type() == "streamable-http", Own: true}
}

// adopt moves st's subscriptions to URIs of u onto s, its new session of
// its own there: those it held on an earlier one (lost since), and those
// held for it on the shared session (made before it had a session of its
// own, e.g. before it set a logging level), which it then leaves. A
// subscription s refuses stays where it was (or, when its session was
// lost, ends) and is logged.
func (r *Relay) adopt(ctx context.Context, u *toolset.Upstream, st *callerState, s *mcp.ClientSession) {
	st.mu.Lock()
	var again []string
	for uri, h := range st.subs {
		if h.up == u && h.sess != s {
			again = append(again, uri)
		}
	}
	st.mu.Unlock()
	r.mu.Lock()
	var shared []string
	for uri, m := range r.subs {
		if _, ok := m[st.caller.id]; ok {
			shared = append(shared, uri)
		}
	}
	r.mu.Unlock()
	hold := func(uri string) bool {
		if err := r.ups.Subscribe(ctx, s, ownTarget(u), uri, true); err != nil {
			r.log.Warn("relay: subscribing a caller's own upstream session", "server", u.Name(), "err", err)
			return false
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.closed {
			return false
		}
		if st.subs == nil {
			st.subs = map[string]ownSub{}
		}
		st.subs[uri] = ownSub{up: u, sess: s}
		return true
	}
	for _, uri := range again {
		if !hold(uri) {
			st.mu.Lock()
			if h, ok := st.subs[uri]; ok && h.sess != s {
				delete(st.subs, uri)
			}
			st.mu.Unlock()
		}
	}
	for _, uri := range shared {
		if ru, _ := r.routeURI(uri); ru != u || !hold(uri) {
			continue
		}
		if err := r.leaveShared(ctx, u, st.caller.id, uri); err != nil {
			r.log.Debug("relay: unsubscribing upstream", "server", u.Name(), "err", err)
		}
	}
}

// ownUpdate delivers an update that arrived on st's own session s to st's
// session alone, when st holds a subscription to its URI there and the
// URI is s's server's; anything else is dropped and counted.
func (r *Relay) ownUpdate(st *callerState, s *mcp.ClientSession, p *mcp.ResourceUpdatedNotificationParams) {
	if p == nil {
		return
	}
	st.mu.Lock()
	h, ok := st.subs[p.URI]
	st.mu.Unlock()
	server := r.serverOf(st, s)
	if u, _ := r.routeURI(p.URI); !ok || h.sess != s || u == nil || u != h.up {
		r.log.Debug("relay: resource update on a caller's own session for no subscription of it there; dropped", "server", server)
		r.dropped(server, DroppedResourceUpdated)
		return
	}
	if f := st.caller.handlers.updated; f != nil {
		f(p)
	}
}

// unsubscribe ends the caller's subscription (upstream too when it was
// the last subscriber of the shared session's, or when it was held on
// the caller's own session). A server whose content is each subject's own
// has none (subscribe): nothing is sent.
func (r *Relay) unsubscribe(ctx context.Context, caller *Caller, uri string, allow allowFunc) error {
	u, err := r.resolveURI(ctx, uri, allow)
	if err != nil {
		return err
	}
	if r.own(u) {
		return nil
	}
	st := r.callerState(caller)
	if st == nil {
		mu := r.lock(u) // see subscribe
		mu.Lock()
		defer mu.Unlock()
		return r.forward(ctx, u, nil, func(s *mcp.ClientSession) error {
			return r.ups.Unsubscribe(ctx, s, uri)
		})
	}
	st.mu.Lock()
	h, mine := st.subs[uri]
	if mine {
		delete(st.subs, uri)
	}
	st.mu.Unlock()
	if mine {
		return r.ups.Unsubscribe(ctx, h.sess, uri)
	}
	return r.leaveShared(ctx, u, caller.id, uri)
}

// leaveShared takes caller id's subscription to uri off u's shared
// session: the upstream subscription ends with its last subscriber.
func (r *Relay) leaveShared(ctx context.Context, u *toolset.Upstream, id, uri string) error {
	mu := r.lock(u) // see subscribe
	mu.Lock()
	defer mu.Unlock()
	r.mu.Lock()
	m := r.subs[uri]
	delete(m, id)
	last := len(m) == 0
	if last {
		delete(r.subs, uri)
	}
	r.mu.Unlock()
	if !last {
		return nil
	}
	return r.forward(ctx, u, nil, func(s *mcp.ClientSession) error {
		return r.ups.Unsubscribe(ctx, s, uri)
	})
}
