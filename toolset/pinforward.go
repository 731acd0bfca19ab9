package toolset

import (
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/pin"
	"github.com/gatehouse-dev/gatehouse/toolset/internal/published"
	"github.com/gatehouse-dev/gatehouse/toolset/internal/stored"
)

// Prompts and resource templates are pinned like tools: the same baseline
// (under keys with a space, see store.PromptKeyPrefix), the same trust on
// first use, the same decisions (pin.Compare) and the same drift
// diagnostics. What differs is how a decision is applied: a changed prompt
// or template is not listed at all (a prompt is text the caller shows a
// model; there is no neutral stand-in for it), and its requests are refused
// with CodeQuarantined. Plain resources are not pinned: they are data a
// server adds and removes as it pleases.

// driftKind is the DriftKind of a kind of item.
func driftKind(k stored.Kind) DriftKind {
	if k == stored.Prompt {
		return DriftPrompt
	}
	return DriftTemplate
}

// itemPrints is one listing of a kind, fingerprinted. Print names are the
// items' identities on their server: a prompt's name, a template's URI
// template.
type itemPrints struct {
	listed bool // listed (an absent capability lists nothing); else unknown
	prints []pin.ToolPrint
	drift  []DriftEvent // items that could not be fingerprinted
}

// itemState is a listing's view of one kind: its pins, and the decisions
// of the last judged listing (nil when it was not listed).
type itemState struct {
	stored.Items
	decisions map[string]pin.Decision
}

// seedItems adds the pins of every listed kind, and its marker, to a
// baseline about to be saved (stored.SeedKind). With have set, kinds
// already pinned in have are left out (the first sight of a kind on a
// server trusted before it was pinned).
func seedItems(seed map[string]string, fp *fingerprinted, have map[string]string) {
	for k, ip := range fp.items {
		if ip.listed {
			stored.SeedKind(seed, stored.Kind(k), ip.prints, have)
		}
	}
}

// listedItems is a listing of a kind fingerprinted (stored.PromptPrints,
// stored.TemplatePrints). An item that cannot be fingerprinted is left out
// (so never served) and reported.
func listedItems(server string, k stored.Kind, prints []pin.ToolPrint, rs []stored.Rejected) itemPrints {
	return itemPrints{listed: true, prints: prints, drift: withheld(server, driftKind(k), k.Noun(), rs)}
}

// promptPrints fingerprints a listing of prompts.
func promptPrints(server string, prompts []*mcp.Prompt) itemPrints {
	prints, rs := stored.PromptPrints(prompts)
	return listedItems(server, stored.Prompt, prints, rs)
}

// templatePrints fingerprints a listing of resource templates.
func templatePrints(server string, templates []*mcp.ResourceTemplate) itemPrints {
	prints, rs := stored.TemplatePrints(templates)
	return listedItems(server, stored.Template, prints, rs)
}

// fingerprintItems fingerprints the prompts and templates of a listing.
func fingerprintItems(server string, p published.Listing, fp *fingerprinted) {
	if p.PromptsListed {
		fp.items[stored.Prompt] = promptPrints(server, p.Prompts)
	}
	if p.TemplatesListed {
		fp.items[stored.Template] = templatePrints(server, p.Templates)
	}
}

// judgeItems compares a listing of one kind with its pins and fills the
// listing's decisions and drift events, worded like the tools'.
func (c *conn) judgeItems(l *listing, k stored.Kind, ip itemPrints) {
	st := &l.items[k]
	l.drift = append(l.drift, ip.drift...)
	if !ip.listed || !st.Pinned {
		return
	}
	st.decisions = map[string]pin.Decision{}
	sname, noun := pin.SanitizeName(c.name), k.Noun()
	for _, d := range pin.Compare(st.Base, ip.prints) {
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
		l.drift = append(l.drift, newDrift(c.name, driftKind(k), d, "%s", msg))
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
	if !st.Pinned {
		// Not pinned yet (a baseline from before they were pinned, or a
		// listing that failed): nothing is served until a listing pins
		// them, so ask for one.
		a.unjudged = len(ip.prints) > 0
		return a
	}
	for _, d := range pin.Compare(st.Base, ip.prints) {
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
// (record: diagnostics, first-sight pins, OnChange), paced by relist.Pacer:
// a storm of list_changed costs one re-listing.
func (c *conn) relistSoon() {
	t := c.ts
	if !c.relist.Announce() {
		return
	}
	started := t.background(func() {
		if !c.relist.Settle(t.life) {
			c.relist.Clear()
			return
		}
		_ = c.reconcileQueued(t.life)
	})
	if !started {
		c.relist.Clear()
	}
}

// quarantinedItem is the refusal of a request for a prompt (by projected
// name) or resource template (by URI template or a URI it matches) whose
// contract changed after it was trusted. It says no more than a
// quarantined tool's refusal: sanitized names and the remedy.
func quarantinedItem(c *conn, k stored.Kind, name string) error {
	sname := pin.SanitizeName(c.name)
	return &Error{Code: CodeQuarantined, Server: c.name, Err: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
		Message: fmt.Sprintf("%s %s of server %s changed after it was trusted, so it is withheld and its requests are refused until an operator re-trusts the server: gatehouse trust %s",
			k.Noun(), pin.SanitizeName(name), sname, sname)}}
}

// trustedItems lists a kind's pins for a TrustRecord, sorted by name.
func trustedItems(fp *fingerprinted, k stored.Kind) []TrustedTool {
	out := []TrustedTool{}
	for name, p := range pin.BaselineOf(fp.items[k].prints) {
		out = append(out, TrustedTool{Name: name, Fingerprint: p.Fingerprint})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
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
