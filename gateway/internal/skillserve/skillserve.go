// Package skillserve serves the skills of a *skills.Catalog to MCP
// clients through the gateway's go-sdk servers, as resources and prompts
// answered by the gateway itself and never forwarded:
//
//   - resources: each skill's body at skill://PLUGIN/NAME/SKILL.md (name and
//     description the skill's, mimeType text/markdown) and each of its
//     listed files at skill://PLUGIN/NAME/PATH, all in resources/list and
//     readable by resources/read (text as text/markdown for .md and
//     text/plain otherwise, binary assets as blob with their type);
//   - prompts: one per skill, named PromptName(PLUGIN, NAME) (the tools'
//     projection: PLUGIN__NAME when legal), without arguments, whose
//     prompts/get answers the body as one user message.
//
// The skill: scheme is the gateway's: an upstream's resource or template
// whose URI has it (in any case) is withheld from every list, and no
// resources/read, subscribe or completion of a skill: URI reaches an
// upstream. An upstream prompt projected under a skill prompt's name is
// withheld too, for as long as the gateway runs (a skill withheld by trust
// leaves its name to no one).
//
// Visibility is the caller's (Options.Visibility, by prompt name: the
// gateway's skill scopes). A skill the caller may not see is neither
// listed nor read: its resources answer exactly as an unknown resource,
// its prompt exactly as an unknown prompt.
//
// The catalog is swapped atomically (Server.Set): every caller of the
// same visibility sees the same lists, and a swap that changes them
// announces notifications/resources/list_changed and prompts/list_changed.
package skillserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/internal/projection"
	"github.com/gatehouse-dev/gatehouse/skills"
)

// servedSkill is one skill of the catalog as the gateway serves it.
type servedSkill struct {
	skill  skills.Skill
	prompt string // the projected name: the prompt's and the scope's
}

// skillView is one catalog as served: a snapshot never changed once
// published.
type skillView struct {
	cat     *skills.Catalog
	byName  map[string]*servedSkill    // prompt name -> skill
	byKey   map[[2]string]*servedSkill // (plugin, name) -> skill
	ordered []*servedSkill             // by prompt name
}

// Options configure a Server. Visibility and Limit are required.
type Options struct {
	// Logger receives the warnings (a skill's file that escapes or
	// changed, two skills under one name). Nil discards them.
	Logger *slog.Logger
	// Visibility returns which skills (by prompt name) the caller of req
	// (local: served by the stdio server) may see.
	Visibility func(ctx context.Context, req mcp.Request, local bool) func(prompt string) bool
	// Limit spends the caller's rate limit on a read or a prompt answered
	// here; an error refuses it and is the answer.
	Limit func(ctx context.Context, req mcp.Request, local bool, method string) error
	// Servers returns the go-sdk servers told of list changes. Nil: none.
	Servers func() []*mcp.Server
}

// Server serves a catalog's skills on the gateway's go-sdk servers (its
// Middleware on each). Make one with New.
type Server struct {
	log        *slog.Logger
	visibility func(ctx context.Context, req mcp.Request, local bool) func(prompt string) bool
	limit      func(ctx context.Context, req mcp.Request, local bool, method string) error
	servers    func() []*mcp.Server

	cur atomic.Pointer[skillView]

	mu sync.Mutex // orders swaps
	// reserved are the prompt names of every skill served since start:
	// an upstream prompt under one of them stays withheld while its skill
	// is withheld (a drifted skill's name is not the upstream's to take).
	reserved atomic.Pointer[map[string]bool]
}

// New returns a Server of cat (nil: no skills).
func New(cat *skills.Catalog, opts Options) *Server {
	ss := &Server{log: opts.Logger, visibility: opts.Visibility, limit: opts.Limit, servers: opts.Servers}
	if ss.log == nil {
		ss.log = slog.New(slog.DiscardHandler)
	}
	ss.reserved.Store(&map[string]bool{})
	ss.cur.Store(&skillView{byName: map[string]*servedSkill{}, byKey: map[[2]string]*servedSkill{}})
	ss.Set(cat)
	return ss
}

// PromptName is the name of the prompt of the skill (plugin, name), and
// of its scope (skill:NAME): the tools' projection, PLUGIN__NAME when that
// is a legal name.
func PromptName(plugin, name string) string { return projection.Name(plugin, name) }

// Catalog returns the catalog served now (nil: none).
func (ss *Server) Catalog() *skills.Catalog { return ss.cur.Load().cat }

// view builds what a catalog serves. Two skills projected under one name
// (plugins whose names differ only in characters the projection replaces)
// are both withheld and logged: nobody shadows anybody.
func (ss *Server) view(cat *skills.Catalog) *skillView {
	v := &skillView{cat: cat, byName: map[string]*servedSkill{}, byKey: map[[2]string]*servedSkill{}}
	if cat == nil {
		return v
	}
	dup := map[string]bool{}
	for _, s := range cat.Skills() {
		name := PromptName(s.Plugin, s.Name)
		if _, ok := v.byName[name]; ok {
			dup[name] = true
			continue
		}
		v.byName[name] = &servedSkill{skill: s, prompt: name}
	}
	for name := range dup {
		ss.log.Warn("skills: skill projected under the name of another; both withheld", "prompt", pin.SanitizeName(name))
		delete(v.byName, name)
	}
	for _, s := range v.byName {
		v.byKey[[2]string{s.skill.Plugin, s.skill.Name}] = s
		v.ordered = append(v.ordered, s)
	}
	sort.Slice(v.ordered, func(i, j int) bool { return v.ordered[i].prompt < v.ordered[j].prompt })
	return v
}

// Set serves cat from now on (nil serves no skills), for every caller at
// once, and tells every session when what may be listed changed.
func (ss *Server) Set(cat *skills.Catalog) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	next := ss.view(cat)
	old := ss.cur.Load()
	res := make(map[string]bool, len(*ss.reserved.Load())+len(next.byName))
	for n := range *ss.reserved.Load() {
		res[n] = true
	}
	for n := range next.byName {
		res[n] = true
	}
	ss.reserved.Store(&res)
	ss.cur.Store(next)
	if sameListing(old, next) || ss.servers == nil {
		return
	}
	for _, s := range ss.servers() {
		// The go-sdk announces list changes when its registry changes: a
		// placeholder added and removed at once is never listed (the
		// middlewares answer lists) but makes it tell every session.
		s.AddResource(&mcp.Resource{URI: skillPlaceholderURI, Name: "placeholder"}, skillPlaceholderRead)
		s.RemoveResources(skillPlaceholderURI)
		s.AddPrompt(&mcp.Prompt{Name: skillPlaceholderPrompt}, skillPlaceholderGet)
		s.RemovePrompts(skillPlaceholderPrompt)
	}
}

const (
	skillPlaceholderURI    = "gatehouse:skills-placeholder"
	skillPlaceholderPrompt = "gatehouse__skills_placeholder"
)

func skillPlaceholderRead(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return nil, mcp.ResourceNotFoundError(skillPlaceholderURI)
}

func skillPlaceholderGet(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return &mcp.GetPromptResult{}, nil
}

// sameListing reports whether two views list the same resources and
// prompts (for every caller: visibility is by prompt name).
func sameListing(a, b *skillView) bool {
	if len(a.ordered) != len(b.ordered) {
		return false
	}
	for i, x := range a.ordered {
		y := b.ordered[i]
		if x.prompt != y.prompt || x.skill.Plugin != y.skill.Plugin || x.skill.Name != y.skill.Name ||
			x.skill.Description != y.skill.Description || !slices.Equal(x.skill.Files, y.skill.Files) {
			return false
		}
	}
	return true
}

// isSkillURI reports whether uri has the skill: scheme (schemes are
// case-insensitive, RFC 3986 §3.1): the gateway's, never an upstream's.
func isSkillURI(uri string) bool {
	return len(uri) >= len("skill:") && strings.EqualFold(uri[:len("skill:")], "skill:")
}

// skillMIME is the MIME type a skill's file is listed with: Markdown for
// .md, else none (resources/read says: text/plain for text, the file's
// type for a binary one).
func skillMIME(p string) string {
	if strings.EqualFold(path.Ext(p), ".md") {
		return "text/markdown"
	}
	return ""
}

// resources lists the skills' resources the caller may see.
func (v *skillView) resources(visible func(prompt string) bool) []*mcp.Resource {
	var out []*mcp.Resource
	for _, s := range v.ordered {
		if !visible(s.prompt) {
			continue
		}
		sk := s.skill
		out = append(out, &mcp.Resource{
			URI: skills.URI(sk.Plugin, sk.Name, skills.BodyPath), Name: sk.Name,
			Title:       fmt.Sprintf("Skill %s (plugin %s)", sk.Name, sk.Plugin),
			Description: sk.Description, MIMEType: "text/markdown",
		})
		for _, f := range sk.Files {
			out = append(out, &mcp.Resource{
				URI: skills.URI(sk.Plugin, sk.Name, f.Path), Name: sk.Name + "/" + f.Path,
				Title:       fmt.Sprintf("%s of skill %s (plugin %s)", f.Path, sk.Name, sk.Plugin),
				Description: fmt.Sprintf("A %s file of the skill %s: read it when the skill's instructions refer to %s.", f.Kind, sk.Name, f.Path),
				MIMEType:    skillMIME(f.Path), Size: f.Size,
			})
		}
	}
	return out
}

// prompts lists the skills' prompts the caller may see.
func (v *skillView) prompts(visible func(prompt string) bool) []*mcp.Prompt {
	var out []*mcp.Prompt
	for _, s := range v.ordered {
		if visible(s.prompt) {
			out = append(out, &mcp.Prompt{Name: s.prompt, Title: fmt.Sprintf("Skill %s (plugin %s)", s.skill.Name, s.skill.Plugin),
				Description: s.skill.Description})
		}
	}
	return out
}

// unknownPrompt is the answer to prompts/get of a prompt the gateway does
// not serve to the caller: exactly the relay's for an unknown name.
func unknownPrompt(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", name)}
}

// read answers resources/read of a skill: URI for a caller who may see
// what visible allows.
func (ss *Server) read(ctx context.Context, uri string, visible func(string) bool) (*mcp.ReadResourceResult, error) {
	v := ss.cur.Load()
	plugin, name, p, err := skills.ParseURI(uri)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	s := v.byKey[[2]string{plugin, name}]
	if s == nil || !visible(s.prompt) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if p == skills.BodyPath {
		body, err := v.cat.Body(ctx, plugin, name)
		if err != nil {
			return nil, ss.readError(uri, err)
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: body}}}, nil
	}
	if !slices.ContainsFunc(s.skill.Files, func(f skills.File) bool { return f.Path == p }) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	c, err := v.cat.ReadFile(ctx, plugin, name, p)
	if err != nil {
		return nil, ss.readError(uri, err)
	}
	// Text is Markdown or plain text (a script too: it is read, never
	// run); anything else is a blob with the catalog's MIME type.
	rc := &mcp.ResourceContents{URI: uri, Text: c.Text, MIMEType: "text/plain"}
	switch {
	case c.Blob != nil:
		rc.Text, rc.Blob, rc.MIMEType = "", c.Blob, c.MIMEType
		if rc.MIMEType == "" {
			rc.MIMEType = "application/octet-stream"
		}
	case skillMIME(p) != "":
		rc.MIMEType = skillMIME(p)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{rc}}, nil
}

// readError turns a catalog's refusal to read a skill's body or file into
// the answer: a file gone is not found; one too large, resolving out of
// its skill, or changed since it was hashed is refused by a message that
// says which without naming any path on disk.
func (ss *Server) readError(uri string, err error) error {
	switch {
	case errors.Is(err, skills.ErrNotFound):
		return mcp.ResourceNotFoundError(uri)
	case errors.Is(err, skills.ErrTooLarge):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("%s is larger than the gateway serves", uri)}
	case errors.Is(err, skills.ErrEscapes):
		ss.log.Warn("skills: a skill's file resolves out of its skill's directory; not served", "uri", pin.SanitizeName(uri))
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("%s is not served: it resolves out of its skill's directory", uri)}
	case errors.Is(err, skills.ErrChanged):
		ss.log.Warn("skills: a skill's file changed on disk since it was loaded; not served", "uri", pin.SanitizeName(uri))
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("%s is not served: it changed on disk since the gateway loaded it", uri)}
	}
	ss.log.Error("skills: reading a skill failed", "uri", pin.SanitizeName(uri), "err", err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s could not be read", uri)}
}

// get answers prompts/get of a skill's prompt (reserved: its name is a
// skill's) for a caller who may see what visible allows.
func (ss *Server) get(ctx context.Context, name string, visible func(string) bool) (*mcp.GetPromptResult, error) {
	v := ss.cur.Load()
	s := v.byName[name]
	if s == nil || !visible(s.prompt) {
		return nil, unknownPrompt(name)
	}
	body, err := v.cat.Body(ctx, s.skill.Plugin, s.skill.Name)
	if err != nil {
		return nil, ss.readError(skills.URI(s.skill.Plugin, s.skill.Name, skills.BodyPath), err)
	}
	return &mcp.GetPromptResult{
		Description: s.skill.Description,
		Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: body}}},
	}, nil
}

// Middleware answers the skills' part of the resources and prompts
// methods, outside the relay's middleware (which answers the upstreams'):
// lists are the relay's answer without what would shadow a skill, plus the
// skills the caller may see; a skill: URI or a skill's prompt name is
// answered here and never passed on.
func (ss *Server) Middleware(local bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if !skillMethod(method) {
				return next(ctx, method, req) // tools/call and the rest: nothing more on their path
			}
			var vis func(string) bool // decided once per request, when needed
			visible := func(prompt string) bool {
				if vis == nil {
					vis = ss.visibility(ctx, req, local)
				}
				return vis(prompt)
			}
			switch method {
			case "initialize", "server/discover":
				res, err := next(ctx, method, req)
				if err != nil || len(ss.cur.Load().ordered) == 0 {
					return res, err
				}
				return advertiseSkills(res), nil
			case "resources/list":
				res, err := next(ctx, method, req)
				lr, ok := res.(*mcp.ListResourcesResult)
				if err != nil || !ok || lr == nil {
					return res, err
				}
				out := *lr
				out.Resources = slices.DeleteFunc(slices.Clone(lr.Resources), func(r *mcp.Resource) bool { return isSkillURI(r.URI) })
				out.Resources = append(out.Resources, ss.cur.Load().resources(visible)...)
				sort.SliceStable(out.Resources, func(i, j int) bool { return out.Resources[i].URI < out.Resources[j].URI })
				return &out, nil
			case "resources/templates/list":
				res, err := next(ctx, method, req)
				lr, ok := res.(*mcp.ListResourceTemplatesResult)
				if err != nil || !ok || lr == nil {
					return res, err
				}
				out := *lr
				out.ResourceTemplates = slices.DeleteFunc(slices.Clone(lr.ResourceTemplates), func(t *mcp.ResourceTemplate) bool {
					return isSkillURI(t.URITemplate)
				})
				return &out, nil
			case "resources/read":
				p, _ := req.GetParams().(*mcp.ReadResourceParams)
				if p == nil || !isSkillURI(p.URI) {
					break
				}
				if err := ss.limit(ctx, req, local, method); err != nil {
					return nil, err
				}
				return ss.read(ctx, p.URI, visible)
			case "resources/subscribe", "resources/unsubscribe":
				var uri string
				switch p := req.GetParams().(type) {
				case *mcp.SubscribeParams:
					if p != nil {
						uri = p.URI
					}
				case *mcp.UnsubscribeParams:
					if p != nil {
						uri = p.URI
					}
				}
				if !isSkillURI(uri) {
					break
				}
				// A skill changes only with the catalog (list_changed):
				// a visible one's subscription is granted and never sent
				// an update; any other is unknown.
				if _, err := ss.resolve(uri, visible); err != nil {
					return nil, err
				}
				return &emptyResult{}, nil
			case "prompts/list":
				res, err := next(ctx, method, req)
				lr, ok := res.(*mcp.ListPromptsResult)
				if err != nil || !ok || lr == nil {
					return res, err
				}
				out := *lr
				reserved := *ss.reserved.Load()
				out.Prompts = slices.DeleteFunc(slices.Clone(lr.Prompts), func(p *mcp.Prompt) bool { return reserved[p.Name] })
				out.Prompts = append(out.Prompts, ss.cur.Load().prompts(visible)...)
				sort.SliceStable(out.Prompts, func(i, j int) bool { return out.Prompts[i].Name < out.Prompts[j].Name })
				return &out, nil
			case "prompts/get":
				p, _ := req.GetParams().(*mcp.GetPromptParams)
				if p == nil || !(*ss.reserved.Load())[p.Name] {
					break
				}
				if err := ss.limit(ctx, req, local, method); err != nil {
					return nil, err
				}
				return ss.get(ctx, p.Name, visible)
			case "completion/complete":
				p, _ := req.GetParams().(*mcp.CompleteParams)
				if p == nil || p.Ref == nil {
					break
				}
				switch {
				case p.Ref.Type == "ref/prompt" && (*ss.reserved.Load())[p.Ref.Name]:
					// A skill's prompt takes no arguments: nothing to complete.
					if s := ss.cur.Load().byName[p.Ref.Name]; s == nil || !visible(s.prompt) {
						return nil, unknownPrompt(p.Ref.Name)
					}
					return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
				case p.Ref.Type == "ref/resource" && isSkillURI(p.Ref.URI):
					return nil, mcp.ResourceNotFoundError(p.Ref.URI)
				}
			}
			return next(ctx, method, req)
		}
	}
}

// emptyResult is the answer of a method without a result ({}).
type emptyResult struct{ mcp.ResultBase }

// skillMethod reports whether Middleware looks at method.
func skillMethod(method string) bool {
	switch method {
	case "initialize", "server/discover", "resources/list", "resources/templates/list", "resources/read",
		"resources/subscribe", "resources/unsubscribe", "prompts/list", "prompts/get", "completion/complete":
		return true
	}
	return false
}

// resolve returns the skill a skill: URI names, if the caller may see it
// and the catalog lists the path; else the unknown resource's error.
func (ss *Server) resolve(uri string, visible func(string) bool) (*servedSkill, error) {
	plugin, name, p, err := skills.ParseURI(uri)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	s := ss.cur.Load().byKey[[2]string{plugin, name}]
	if s == nil || !visible(s.prompt) ||
		p != skills.BodyPath && !slices.ContainsFunc(s.skill.Files, func(f skills.File) bool { return f.Path == p }) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return s, nil
}

// advertiseSkills makes an initialize or discover result advertise
// resources and prompts (with list_changed), which the skills are.
func advertiseSkills(res mcp.Result) mcp.Result {
	merge := func(c *mcp.ServerCapabilities) *mcp.ServerCapabilities {
		var out mcp.ServerCapabilities
		if c != nil {
			out = *c
		}
		if out.Resources == nil {
			out.Resources = &mcp.ResourceCapabilities{ListChanged: true}
		}
		out.Prompts = &mcp.PromptCapabilities{ListChanged: true}
		return &out
	}
	switch r := res.(type) {
	case *mcp.InitializeResult:
		cp := *r
		cp.Capabilities = merge(r.Capabilities)
		return &cp
	case *mcp.DiscoverResult:
		cp := *r
		cp.Capabilities = merge(r.Capabilities)
		return &cp
	}
	return res
}
