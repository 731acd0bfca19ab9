package stored

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/store"
)

// Rejected is an item of a listing that has no print, so it cannot be
// trusted: the caller withholds it and reports it.
type Rejected struct {
	// Name is the item's identity on its server: a tool's or prompt's
	// name, a resource template's URI template.
	Name string
	// Reason is why it has no print.
	Reason Reason
}

// Reason is why a listed item was rejected.
type Reason int

// Unprintable: the item cannot be fingerprinted (a schema or annotations
// that are not canonicalizable JSON, a string that is not UTF-8).
const Unprintable Reason = iota

// ToolContract is the part of a tool the pin package fingerprints.
func ToolContract(tool *mcp.Tool) (pin.Contract, error) {
	c := pin.Contract{Name: tool.Name, Title: tool.Title, Description: tool.Description}
	var err error
	raw := func(v any) json.RawMessage {
		if v == nil || err != nil {
			return nil
		}
		var b []byte
		b, err = json.Marshal(v)
		return b
	}
	c.InputSchema = raw(tool.InputSchema)
	c.OutputSchema = raw(tool.OutputSchema)
	if tool.Annotations != nil {
		c.Annotations = raw(tool.Annotations)
	}
	return c, err
}

// ToolPrints fingerprints a listing of tools, in order. A nil tool is
// skipped; a tool that cannot be fingerprinted is left out and returned as
// rejected, in order. Any name is fingerprinted (the baseline keeps kinds
// apart, so a name with a space is a tool's name like any other).
func ToolPrints(tools []*mcp.Tool) ([]pin.ToolPrint, []Rejected) {
	out := make([]pin.ToolPrint, 0, len(tools))
	var rs []Rejected
	for _, tool := range tools {
		if tool == nil {
			continue
		}
		c, err := ToolContract(tool)
		var p pin.ToolPrint
		if err == nil {
			err = storable(store.KindTool, tool.Name)
		}
		if err == nil {
			p, err = pin.NewToolPrint(c)
		}
		if err != nil {
			rs = append(rs, Rejected{Name: tool.Name, Reason: Unprintable})
			continue
		}
		out = append(out, p)
	}
	return out, rs
}

// CachedToolPrints returns the prints of tools from a stored catalogue's
// cache (DecodeCatalogueCached): first those the cache holds, in order,
// then the ones it lacks (or holds damaged) fingerprinted by ToolPrints.
func CachedToolPrints(tools []*mcp.Tool, cached map[string]string) ([]pin.ToolPrint, []Rejected) {
	out := make([]pin.ToolPrint, 0, len(tools))
	var missing []*mcp.Tool
	for _, tool := range tools {
		p, err := pin.ParsePin(cached[tool.Name])
		if err != nil || p.Unnamed == "" {
			missing = append(missing, tool)
			continue
		}
		out = append(out, pin.ToolPrint{Name: tool.Name, Fingerprint: p.Fingerprint, Unnamed: p.Unnamed})
	}
	more, rs := ToolPrints(missing)
	return append(out, more...), rs
}

// PromptContract is the part of a prompt the pin package fingerprints.
func PromptContract(p *mcp.Prompt) pin.PromptContract {
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

// TemplateContract is the part of a resource template the pin package
// fingerprints.
func TemplateContract(r *mcp.ResourceTemplate) (pin.TemplateContract, error) {
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

// PromptPrint is a prompt's print: its name and pin.PromptFingerprint.
func PromptPrint(p *mcp.Prompt) (pin.ToolPrint, error) {
	fp, err := pin.PromptFingerprint(PromptContract(p))
	return pin.ToolPrint{Name: p.Name, Fingerprint: fp}, err
}

// TemplatePrint is a resource template's print: its URI template and
// pin.TemplateFingerprint.
func TemplatePrint(r *mcp.ResourceTemplate) (pin.ToolPrint, error) {
	c, err := TemplateContract(r)
	if err != nil {
		return pin.ToolPrint{}, err
	}
	fp, err := pin.TemplateFingerprint(c)
	return pin.ToolPrint{Name: r.URITemplate, Fingerprint: fp}, err
}

// PromptPrints fingerprints a listing of prompts, as ToolPrints does tools
// (a prompt is rejected only as Unprintable).
func PromptPrints(prompts []*mcp.Prompt) ([]pin.ToolPrint, []Rejected) {
	return printsOf(prompts, store.KindPrompt, PromptPrint, func(p *mcp.Prompt) string { return p.Name })
}

// TemplatePrints fingerprints a listing of resource templates, as
// PromptPrints does prompts.
func TemplatePrints(templates []*mcp.ResourceTemplate) ([]pin.ToolPrint, []Rejected) {
	return printsOf(templates, store.KindTemplate, TemplatePrint, func(r *mcp.ResourceTemplate) string { return r.URITemplate })
}

// storable reports whether every store can pin a name of kind (no NUL
// byte, valid UTF-8): an item whose name cannot be pinned cannot be
// trusted, so it is rejected rather than failing its whole server.
func storable(kind store.BaselineKind, name string) error {
	return store.BaselineKey{Kind: kind, Name: name}.Validate()
}

func printsOf[T any](items []*T, kind store.BaselineKind, print func(*T) (pin.ToolPrint, error), id func(*T) string) ([]pin.ToolPrint, []Rejected) {
	out := make([]pin.ToolPrint, 0, len(items))
	var rs []Rejected
	for _, it := range items {
		if it == nil {
			continue
		}
		p, err := print(it)
		if err == nil {
			err = storable(kind, id(it))
		}
		if err != nil {
			rs = append(rs, Rejected{Name: id(it), Reason: Unprintable})
			continue
		}
		out = append(out, p)
	}
	return out, rs
}
