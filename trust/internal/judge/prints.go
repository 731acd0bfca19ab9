package judge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/trust/internal/published"
	"github.com/gatehouse-dev/gatehouse/trust/internal/stored"
)

// Items is one listed kind of forwarded item (prompts or resource
// templates), fingerprinted. Print names are the items' identities.
type Items struct {
	// Listed says the kind was listed (an absent capability lists
	// nothing); otherwise it is unknown and not judged.
	Listed bool
	Prints []pin.ToolPrint
	// Rejected are the items that could not be fingerprinted.
	Rejected []Event

	prompts   map[string]*mcp.Prompt
	templates map[string]*mcp.ResourceTemplate
}

// Prints is a listing fingerprinted.
type Prints struct {
	// Tools are the tools' prints, in listing order.
	Tools []pin.ToolPrint
	// Rejected are the tools that could not be fingerprinted (withheld).
	Rejected []Event
	// Items are the prompts and resource templates, by stored.Kind.
	Items [stored.NumKinds]Items
	// Instructions is the fingerprint of the server's instructions; ""
	// when unknown (a listing read from the store).
	Instructions string

	tools map[string]*mcp.Tool // for the contract views
}

// Fingerprint fingerprints a fresh listing of server.
func Fingerprint(server string, p published.Listing) Prints {
	prints, rs := stored.ToolPrints(p.Tools)
	fp := Prints{Tools: prints, Rejected: rejected(server, pin.ChangeTool, "tool", rs), Instructions: p.Instructions}
	fp.index(p.Tools)
	if p.PromptsListed {
		prints, rs := stored.PromptPrints(p.Prompts)
		fp.Items[stored.Prompt] = Items{Listed: true, Prints: prints, Rejected: rejected(server, pin.ChangePrompt, "prompt", rs),
			prompts: byName(p.Prompts, func(x *mcp.Prompt) string { return x.Name })}
	}
	if p.TemplatesListed {
		prints, rs := stored.TemplatePrints(p.Templates)
		fp.Items[stored.Template] = Items{Listed: true, Prints: prints, Rejected: rejected(server, pin.ChangeTemplate, "resource template", rs),
			templates: byName(p.Templates, func(x *mcp.ResourceTemplate) string { return x.URITemplate })}
	}
	return fp
}

// Lists reports, without fingerprinting l, whether l is the listing fp
// was made from: the same instructions, and the same tools, prompts and
// resource templates, equal as decoded (reflect.DeepEqual), by name. Then
// l's prints are fp's. It answers false whenever it cannot tell cheaply (a
// name listed twice, a kind listed in one and not the other): fingerprint
// l then.
func (fp *Prints) Lists(l published.Listing) bool {
	if l.Instructions != fp.Instructions || !same(l.Tools, fp.tools, len(fp.Tools)+len(fp.Rejected), func(t *mcp.Tool) string { return t.Name }) {
		return false
	}
	p, t := &fp.Items[stored.Prompt], &fp.Items[stored.Template]
	if l.PromptsListed != p.Listed || l.TemplatesListed != t.Listed {
		return false
	}
	return (!p.Listed || same(l.Prompts, p.prompts, len(p.Prints)+len(p.Rejected), func(x *mcp.Prompt) string { return x.Name })) &&
		(!t.Listed || same(l.Templates, t.templates, len(t.Prints)+len(t.Rejected), func(x *mcp.ResourceTemplate) string { return x.URITemplate }))
}

// same reports whether listed holds exactly the items of index (by name,
// equal as decoded), each once; count is how many items index was made
// from (more than its length when one was listed twice).
func same[T any](listed []*T, index map[string]*T, count int, name func(*T) string) bool {
	if len(listed) != count || len(index) != count {
		return false
	}
	seen := make(map[string]bool, len(listed))
	for _, x := range listed {
		if x == nil {
			return false
		}
		n := name(x)
		if seen[n] {
			return false
		}
		seen[n] = true
		if y := index[n]; y == nil || !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// FromCatalogue fingerprints a stored catalogue's tools, taking the pins
// its cache holds (stored.CachedToolPrints).
func FromCatalogue(server string, tools []*mcp.Tool, cached map[string]string) Prints {
	prints, rs := stored.CachedToolPrints(tools, cached)
	fp := Prints{Tools: prints, Rejected: rejected(server, pin.ChangeTool, "tool", rs)}
	fp.index(tools)
	return fp
}

// LivePrompts fingerprints a live listing of prompts (as a relay serves
// it), for Admit.
func LivePrompts(server string, prompts []*mcp.Prompt) Items {
	prints, rs := stored.PromptPrints(prompts)
	return Items{Listed: true, Prints: prints, Rejected: rejected(server, pin.ChangePrompt, "prompt", rs)}
}

// LiveTemplates is LivePrompts for resource templates.
func LiveTemplates(server string, templates []*mcp.ResourceTemplate) Items {
	prints, rs := stored.TemplatePrints(templates)
	return Items{Listed: true, Prints: prints, Rejected: rejected(server, pin.ChangeTemplate, "resource template", rs)}
}

func (fp *Prints) index(tools []*mcp.Tool) {
	fp.tools = byName(tools, func(t *mcp.Tool) string { return t.Name })
}

func byName[T any](xs []*T, name func(*T) string) map[string]*T {
	m := make(map[string]*T, len(xs))
	for _, x := range xs {
		if x == nil {
			continue
		}
		if _, dup := m[name(x)]; !dup {
			m[name(x)] = x
		}
	}
	return m
}

// Current returns the tools' current fingerprints by name.
func (fp *Prints) Current() map[string]string {
	m := make(map[string]string, len(fp.Tools))
	for _, p := range fp.Tools {
		m[p.Name] = p.Fingerprint
	}
	return m
}

// toolView is the contract view of the listed tool name with print p.
func (fp *Prints) toolView(name, print string) json.RawMessage {
	t := fp.tools[name]
	if t == nil {
		return pin.FingerprintView(print)
	}
	c, err := stored.ToolContract(t)
	if err != nil {
		return pin.FingerprintView(print)
	}
	return pin.ToolView(c, print)
}

// itemView is the contract view of a listed prompt or template.
func (fp *Prints) itemView(k stored.Kind, name, print string) json.RawMessage {
	it := &fp.Items[k]
	if k == stored.Prompt {
		if p := it.prompts[name]; p != nil {
			return pin.PromptView(stored.PromptContract(p), print)
		}
		return pin.FingerprintView(print)
	}
	if r := it.templates[name]; r != nil {
		if c, err := stored.TemplateContract(r); err == nil {
			return pin.TemplateView(c, print)
		}
	}
	return pin.FingerprintView(print)
}

// Entries is the listing as a baseline: every print with its contract
// view, the instructions ("" when unknown or none), and a marker for each
// listed kind.
// It is what a trust of this listing records.
func Entries(fp Prints) store.Baseline { return entries(&fp, true) }

func entries(fp *Prints, views bool) store.Baseline {
	b := store.Baseline{}
	for name, p := range pin.BaselineOf(fp.Tools) {
		e := store.BaselineEntry{Value: p.String()}
		if views {
			e.Contract = fp.toolView(name, p.Fingerprint)
		}
		b[store.BaselineKey{Kind: store.KindTool, Name: name}] = e
	}
	// Always present, even empty: a baseline with no tools still exists,
	// so tools that appear later are new after trust, not first sight.
	b[store.BaselineKey{Kind: store.KindInstructions}] = store.BaselineEntry{Value: fp.Instructions}
	for k := stored.Kind(0); k < stored.NumKinds; k++ {
		seedKind(b, fp, k, views)
	}
	return b
}

// seedKind adds the pins of a listed kind and its marker to b.
func seedKind(b store.Baseline, fp *Prints, k stored.Kind, views bool) {
	it := &fp.Items[k]
	if !it.Listed {
		return
	}
	for name, p := range pin.BaselineOf(it.Prints) {
		e := store.BaselineEntry{Value: p.String()}
		if views {
			e.Contract = fp.itemView(k, name, p.Fingerprint)
		}
		b[store.BaselineKey{Kind: k.Store(), Name: name}] = e
	}
	b[k.Marker()] = store.BaselineEntry{Value: store.PinnedMarker}
}

// Seed is what a listing adds to a stored baseline have: everything when
// have is empty (first sight); otherwise what have never pinned (the
// instructions, or a kind first seen on a server trusted before the kind
// was pinned).
func Seed(fp Prints, have store.Baseline) store.Baseline {
	if len(have) == 0 {
		return Entries(fp)
	}
	b := store.Baseline{}
	if _, ok := have[store.BaselineKey{Kind: store.KindInstructions}]; !ok && fp.Instructions != "" {
		b[store.BaselineKey{Kind: store.KindInstructions}] = store.BaselineEntry{Value: fp.Instructions}
	}
	for k := stored.Kind(0); k < stored.NumKinds; k++ {
		if _, ok := have[k.Marker()]; !ok {
			seedKind(b, &fp, k, true)
		}
	}
	return b
}

// FirstSight is the baseline a listing records on a server's first sight:
// the listing itself, except the tools of a row that predates baselines
// (catalogue is its stored catalogue, nil when there is none): their
// baseline is what it stored, not what the server says now.
func FirstSight(server string, fp Prints, catalogue []byte) store.Baseline {
	seed := Entries(fp)
	if catalogue == nil {
		return seed
	}
	prev, cached, err := stored.DecodeCatalogueCached(catalogue)
	if err != nil {
		return seed
	}
	for k := range seed {
		if k.Kind == store.KindTool {
			delete(seed, k)
		}
	}
	for k, e := range Entries(FromCatalogue(server, prev, cached)) {
		if k.Kind == store.KindTool {
			seed[k] = e
		}
	}
	return seed
}

// Woken judges a server woken from its stored catalogue against its
// baseline tb (pinned: the stored baseline is not empty; a row from before
// baselines has its catalogue as its baseline). A catalogue that does not
// decode is an error, with the verdict of a listing of nothing against tb
// (the catalogue is a cache: the server's next listing is judged).
func Woken(server string, catalogue []byte, tb stored.Baseline, pinned bool) ([]*mcp.Tool, Prints, Verdict, error) {
	tools, cached, err := stored.DecodeCatalogueCached(catalogue)
	if err != nil {
		v := Verdict{Decisions: map[string]pin.Decision{}, Base: tb.Tools, Instructions: tb.Instructions}
		for k := range v.Items {
			v.Items[k] = ItemVerdict{Items: tb.Items[k]}
		}
		return nil, Prints{}, v, err
	}
	fp := FromCatalogue(server, tools, cached)
	if !pinned {
		tb.Tools = pin.BaselineOf(fp.Tools)
	}
	return tools, fp, Judge(server, fp, tb, true), nil
}

// ListingFingerprint names a listing: the SHA-256 (hex) of its entries'
// kinds, names and values (not the contract views: the values are their
// fingerprints), sorted. Two listings with one fingerprint would be
// recorded as the same baseline.
func ListingFingerprint(fp Prints) string {
	return EntriesFingerprint(entries(&fp, false))
}

// EntriesFingerprint is ListingFingerprint of a listing already made a
// baseline.
func EntriesFingerprint(b store.Baseline) string { return DomainFingerprint("gatehouse/listing/v1", b) }

// DomainFingerprint names a listing made a baseline b in a domain of its
// own (a skills listing's is "gatehouse/skills-listing/v1"): the SHA-256
// (hex) of the domain and of its entries' kinds, names and values, sorted
// and length-prefixed.
func DomainFingerprint(domain string, b store.Baseline) string {
	keys := make([]store.BaselineKey, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Kind != keys[j].Kind {
			return keys[i].Kind < keys[j].Kind
		}
		return keys[i].Name < keys[j].Name
	})
	h := sha256.New()
	h.Write([]byte(domain + "\n"))
	for _, k := range keys {
		// Length-prefixed, so no choice of names can make two listings
		// hash alike.
		for _, s := range []string{string(k.Kind), k.Name, b[k].Value} {
			var n [4]byte
			n[0], n[1], n[2], n[3] = byte(len(s)>>24), byte(len(s)>>16), byte(len(s)>>8), byte(len(s))
			h.Write(n[:])
			h.Write([]byte(s))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Print is ListingFingerprint(*fp): the name of the listing.
func (fp *Prints) Print() string { return ListingFingerprint(*fp) }
