package toolset

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/pin"
	"github.com/gatehouse-dev/gatehouse/store"
)

// Prompts and resource templates are pinned like tools: the same baseline
// (under keys with a space, see store.PromptKeyPrefix), the same trust on
// first use, the same decisions (pin.Compare) and the same drift
// diagnostics. What differs is how a decision is applied: a changed prompt
// or template is not listed at all (a prompt is text the caller shows a
// model; there is no neutral stand-in for it), and its requests are refused
// with CodeQuarantined. Plain resources are not pinned: they are data a
// server adds and removes as it pleases.

// itemKind is a kind of forwarded item pinned like a tool.
type itemKind int

const (
	kindPrompt itemKind = iota
	kindTemplate
	numKinds
)

// noun names the kind in diagnostics and errors.
func (k itemKind) noun() string {
	if k == kindPrompt {
		return "prompt"
	}
	return "resource template"
}

// driftKind is the kind's DriftKind.
func (k itemKind) driftKind() DriftKind {
	if k == kindPrompt {
		return DriftPrompt
	}
	return DriftTemplate
}

// keyPrefix starts the baseline key of one item of the kind.
func (k itemKind) keyPrefix() string {
	if k == kindPrompt {
		return store.PromptKeyPrefix
	}
	return store.TemplateKeyPrefix
}

// pinnedKey is the baseline key saying the kind was pinned.
func (k itemKind) pinnedKey() string {
	if k == kindPrompt {
		return store.PromptsPinnedKey
	}
	return store.TemplatesPinnedKey
}

// reservedKey reports whether a baseline key (or a tool name) is in the
// namespace of non-tool entries: it contains a space, which no MCP tool
// name can.
func reservedKey(s string) bool { return strings.Contains(s, " ") }

// itemPrints is one listing of a kind, fingerprinted. Print names are the
// items' identities on their server: a prompt's name, a template's URI
// template.
type itemPrints struct {
	listed bool // listed (an absent capability lists nothing); else unknown
	prints []pin.ToolPrint
	drift  []DriftEvent // items that could not be fingerprinted
}

// itemBase is the trusted part of a baseline for one kind.
type itemBase struct {
	pinned bool // the kind was pinned (store.PromptsPinnedKey...)
	base   pin.Baseline
}

// itemState is a listing's view of one kind: its pins, and the decisions
// of the last judged listing (nil when it was not listed).
type itemState struct {
	itemBase
	decisions map[string]pin.Decision
}

// trustBase is a parsed stored baseline.
type trustBase struct {
	tools           pin.Baseline
	instructions    string
	hasInstructions bool
	items           [numKinds]itemBase
}

// parseBaseline reads a stored baseline: the tool pins, the instructions
// fingerprint, and the pins of prompts and resource templates. A damaged
// entry is an error: a damaged baseline is never treated as absent. A key
// with a space that this build does not know is ignored (a newer build's).
func parseBaseline(m map[string]string) (trustBase, error) {
	b := trustBase{tools: make(pin.Baseline, len(m))}
	for k := range b.items {
		b.items[k].base = pin.Baseline{}
	}
outer:
	for key, s := range m {
		if key == store.InstructionsKey {
			b.instructions, b.hasInstructions = s, true
			continue
		}
		for k := itemKind(0); k < numKinds; k++ {
			if key == k.pinnedKey() {
				b.items[k].pinned = true
				continue outer
			}
			if name, ok := strings.CutPrefix(key, k.keyPrefix()); ok {
				p, err := pin.ParsePin(s)
				if err != nil {
					return trustBase{}, fmt.Errorf("%s %s: %w", k.noun(), pin.SanitizeName(name), err)
				}
				b.items[k].base[name] = p
				continue outer
			}
		}
		if reservedKey(key) {
			continue
		}
		p, err := pin.ParsePin(s)
		if err != nil {
			return trustBase{}, fmt.Errorf("tool %s: %w", pin.SanitizeName(key), err)
		}
		b.tools[key] = p
	}
	return b, nil
}

// seedItems adds the pins of every listed kind, and its marker, to a
// baseline about to be saved. With only set, kinds already pinned in have
// are left out (the first sight of a kind on a server trusted before it
// was pinned).
func seedItems(seed map[string]string, fp *fingerprinted, have map[string]string) {
	for k := itemKind(0); k < numKinds; k++ {
		ip := fp.items[k]
		if !ip.listed {
			continue
		}
		if _, ok := have[k.pinnedKey()]; ok {
			continue
		}
		for name, p := range pin.BaselineOf(ip.prints) {
			seed[k.keyPrefix()+name] = p.String()
		}
		seed[k.pinnedKey()] = store.PinnedMarker
	}
}

// promptContract is the part of a prompt the pin package fingerprints.
func promptContract(p *mcp.Prompt) pin.PromptContract {
	c := pin.PromptContract{Name: p.Name, Title: p.Title, Description: p.Description}
	for _, a := range p.Arguments {
		if a == nil {
			c.Arguments = append(c.Arguments, pin.PromptArgument{})
			continue
		}
		c.Arguments = append(c.Arguments, pin.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
	}
	return c
}

// templateContract is the part of a resource template the pin package
// fingerprints.
func templateContract(r *mcp.ResourceTemplate) (pin.TemplateContract, error) {
	c := pin.TemplateContract{URITemplate: r.URITemplate, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType}
	if r.Annotations != nil {
		b, err := json.Marshal(r.Annotations)
		if err != nil {
			return c, err
		}
		c.Annotations = b
	}
	return c, nil
}

func promptPrint(p *mcp.Prompt) (pin.ToolPrint, error) {
	fp, err := pin.PromptFingerprint(promptContract(p))
	return pin.ToolPrint{Name: p.Name, Fingerprint: fp}, err
}

func templatePrint(r *mcp.ResourceTemplate) (pin.ToolPrint, error) {
	c, err := templateContract(r)
	if err != nil {
		return pin.ToolPrint{}, err
	}
	fp, err := pin.TemplateFingerprint(c)
	return pin.ToolPrint{Name: r.URITemplate, Fingerprint: fp}, err
}

// printsOfItems fingerprints a listing of prompts or templates. An item
// that cannot be fingerprinted is left out (so never served) and reported.
func printsOfItems[T any](server string, k itemKind, items []*T, print func(*T) (pin.ToolPrint, error), id func(*T) string) itemPrints {
	out := itemPrints{listed: true, prints: make([]pin.ToolPrint, 0, len(items))}
	for _, it := range items {
		if it == nil {
			continue
		}
		p, err := print(it)
		if err != nil {
			out.drift = append(out.drift, newDrift(server, k.driftKind(), pin.Decision{Tool: id(it), Action: pin.Withheld},
				"%s %s of server %s cannot be fingerprinted, so it cannot be trusted; it is withheld",
				k.noun(), pin.SanitizeName(id(it)), pin.SanitizeName(server)))
			continue
		}
		out.prints = append(out.prints, p)
	}
	return out
}

func promptID(p *mcp.Prompt) string             { return p.Name }
func templateID(r *mcp.ResourceTemplate) string { return r.URITemplate }

// fingerprintItems fingerprints the prompts and templates of a listing.
func fingerprintItems(server string, p published, fp *fingerprinted) {
	if p.promptsListed {
		fp.items[kindPrompt] = printsOfItems(server, kindPrompt, p.prompts, promptPrint, promptID)
	}
	if p.templatesListed {
		fp.items[kindTemplate] = printsOfItems(server, kindTemplate, p.templates, templatePrint, templateID)
	}
}

// judgeItems compares a listing of one kind with its pins and fills the
// listing's decisions and drift events, worded like the tools'.
func (c *conn) judgeItems(l *listing, k itemKind, ip itemPrints) {
	st := &l.items[k]
	l.drift = append(l.drift, ip.drift...)
	if !ip.listed || !st.pinned {
		return
	}
	st.decisions = map[string]pin.Decision{}
	sname, noun := pin.SanitizeName(c.name), k.noun()
	for _, d := range pin.Compare(st.base, ip.prints) {
		if d.Action == pin.New {
			d.Action = pin.Withheld // the kind is pinned: new is new after trust
		}
		st.decisions[d.Tool] = d
		iname := pin.SanitizeName(d.Tool)
		var msg string
		switch d.Action {
		case pin.Quarantined:
			if d.Conflict {
				msg = fmt.Sprintf("server %s publishes %s %s more than once with different contents; it is quarantined until the server is re-trusted", sname, noun, iname)
			} else {
				msg = fmt.Sprintf("the %s %s on server %s changed after it was trusted; it is quarantined (not listed, its requests refused) until an operator re-trusts the server: gatehouse trust %s", noun, iname, sname, sname)
			}
		case pin.Withheld:
			if d.Conflict {
				msg = fmt.Sprintf("server %s publishes %s %s more than once with different contents; it is withheld", sname, noun, iname)
			} else {
				msg = fmt.Sprintf("server %s published a new %s %s after it was trusted; it is withheld until an operator re-trusts the server: gatehouse trust %s", sname, noun, iname, sname)
			}
		case pin.Removed:
			msg = fmt.Sprintf("server %s no longer publishes its trusted %s %s; it is dropped", sname, noun, iname)
		default:
			continue
		}
		l.drift = append(l.drift, newDrift(c.name, k.driftKind(), d, "%s", msg))
	}
}

// admission is how a live listing of one kind is served: the items whose
// fingerprint is pinned (by identity), and the ones whose pin they no
// longer match (refused with CodeQuarantined). Everything else (new after
// trust, not fingerprintable, the kind not pinned yet) is neither: it is
// absent.
type admission struct {
	trusted     map[string]bool
	quarantined map[string]bool
	unjudged    bool // something differs from the last judged listing
}

// admit judges a live listing against a server's pins.
func admit(st itemState, ip itemPrints) admission {
	a := admission{trusted: map[string]bool{}, quarantined: map[string]bool{}}
	if !st.pinned {
		// Not pinned yet (a baseline from before they were pinned, or a
		// listing that failed): nothing is served until a listing pins
		// them, so ask for one.
		a.unjudged = len(ip.prints) > 0
		return a
	}
	for _, d := range pin.Compare(st.base, ip.prints) {
		switch d.Action {
		case pin.Trusted:
			a.trusted[d.Tool] = true
			continue
		case pin.Removed:
			continue
		case pin.Quarantined:
			a.quarantined[d.Tool] = true
		case pin.New:
			d.Action = pin.Withheld // as judgeItems: the kind is pinned
		}
		// Drift the last judged listing did not see: re-list so it is
		// reported (diagnostics, the gateway's metrics).
		if last, ok := st.decisions[d.Tool]; !ok || last.Action != d.Action || last.Fingerprint != d.Fingerprint {
			a.unjudged = true
		}
	}
	return a
}

// relistSoon re-lists a server in the background through the drift checks
// (record: diagnostics, first-sight pins, OnChange), coalescing requests
// that arrive while one is waiting.
func (c *conn) relistSoon() {
	t := c.ts
	if c.relistQueued.Swap(true) {
		return
	}
	started := t.background(func() {
		// A change announced before the flag is cleared is covered by the
		// listing that follows.
		c.relistMu.Lock()
		c.relistQueued.Store(false)
		c.relistMu.Unlock()
		_ = c.reconcile(t.life, false)
	})
	if !started {
		c.relistQueued.Store(false)
	}
}

// quarantinedItem is the refusal of a request for a prompt (by projected
// name) or resource template (by URI template or a URI it matches) whose
// contract changed after it was trusted. It says no more than a
// quarantined tool's refusal: sanitized names and the remedy.
func quarantinedItem(c *conn, k itemKind, name string) error {
	sname := pin.SanitizeName(c.name)
	return &Error{Code: CodeQuarantined, Server: c.name, Err: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
		Message: fmt.Sprintf("%s %s of server %s changed after it was trusted, so it is withheld and its requests are refused until an operator re-trusts the server: gatehouse trust %s",
			k.noun(), pin.SanitizeName(name), sname, sname)}}
}

// trustedItems lists a kind's pins for a TrustRecord, sorted by name.
func trustedItems(fp *fingerprinted, k itemKind) []TrustedTool {
	out := []TrustedTool{}
	for name, p := range pin.BaselineOf(fp.items[k].prints) {
		out = append(out, TrustedTool{Name: name, Fingerprint: p.Fingerprint})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// listItems lists a session's prompts and resource templates, when the
// server has them. A failed listing leaves the kind unlisted (its pins
// are not judged or recorded by this listing) and is returned for the log.
func listItems(ctx context.Context, sess *mcp.ClientSession, p *published) []error {
	var caps *mcp.ServerCapabilities
	if res := sess.InitializeResult(); res != nil {
		caps = res.Capabilities
	}
	var errs []error
	p.promptsListed, p.templatesListed = true, true
	if caps != nil && caps.Prompts != nil {
		for pr, err := range sess.Prompts(ctx, nil) {
			if err != nil {
				p.prompts, p.promptsListed = nil, false
				errs = append(errs, fmt.Errorf("listing prompts: %w", err))
				break
			}
			p.prompts = append(p.prompts, pr)
		}
	}
	if caps != nil && caps.Resources != nil {
		for r, err := range sess.ResourceTemplates(ctx, nil) {
			if err != nil {
				p.templates, p.templatesListed = nil, false
				errs = append(errs, fmt.Errorf("listing resource templates: %w", err))
				break
			}
			p.templates = append(p.templates, r)
		}
	}
	return errs
}

// announceItems tells SessionHooks.ListChanged that a server's prompts and
// resources may look different after its pins changed.
func (t *Toolset) announceItems(c *conn) {
	f := t.hooks().ListChanged
	if f == nil || t.isClosed() {
		return
	}
	caps := c.capabilities()
	if caps.Prompts != nil {
		f(c.name, PromptsChanged)
	}
	if caps.Resources != nil {
		f(c.name, ResourcesChanged)
	}
}
