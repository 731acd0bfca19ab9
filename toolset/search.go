package toolset

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/metatool"
	"github.com/gatehouse-dev/gatehouse/internal/projection"
	"github.com/gatehouse-dev/gatehouse/internal/toolsearch"
)

// Search connects the servers if needed and returns up to limit tools of
// the map that fit query, best first, with their full input schemas
// (limit <= 0 means 8). The index follows the map: a quarantined tool is
// found by its name and the toolset's quarantine text only, never by its
// drifted text, and a withheld tool is not found. A query with nothing to
// search is an error wrapping toolsearch.ErrEmptyQuery, ErrNoWords or
// ErrInvalidUTF8.
func (t *Toolset) Search(ctx context.Context, query string, limit int) ([]SearchHit, error) {
	return t.SearchFor(ctx, query, limit, nil)
}

// SearchFor is Search among the tools allow accepts (nil: all), asked of
// every match before the cut to limit: a gateway passes a caller's
// visibility.
func (t *Toolset) SearchFor(ctx context.Context, query string, limit int, allow func(name string) bool) ([]SearchHit, error) {
	cat, err := t.ensure(ctx)
	if err != nil {
		return nil, err
	}
	t.finder.SetModel(t.opts.SearchModel)
	return t.finder.Find(cat.seq, cat.searchable, query, limit, allow)
}

// searchable is what the index holds of the catalog: each server's tools
// as the map shows them (not the toolset's own).
func (cat *catalog) searchable() (out []metatool.Tool) {
	for _, e := range cat.byName {
		if e.meta == "" {
			out = append(out, metatool.Tool{Name: e.info.Name, Server: e.info.Server, Title: e.info.Title,
				Description: e.info.Description, InputSchema: e.full, Contract: e.info.ContractHash + "/" + string(e.info.State)})
		}
	}
	return out
}

// ownCall answers the toolset's own tools (mcp__search_tools,
// mcp__describe_tool) from cat.
func (t *Toolset) ownCall(cat *catalog, name string, args any) (*mcp.CallToolResult, error) {
	if name == SearchToolName {
		t.finder.SetModel(t.opts.SearchModel)
		return t.finder.Call(cat.seq, cat.searchable, args, metatool.DefaultLimit, nil), nil
	}
	res, err := metatool.Describe(args, func(name string) (string, map[string]any, bool) {
		e, ok := cat.byName[name]
		if !ok || e.meta != "" {
			return "", nil, false
		}
		return e.info.Description, projection.ReduceSchema(e.full, projection.Inline), true
	})
	if err != nil {
		return nil, &Error{Code: CodeCallFailed, Tool: name, Err: err}
	}
	return res, nil
}

// SearchModel is a static embedding model in the model2vec format that
// Search re-ranks its best candidates with (Options.SearchModel).
type SearchModel = toolsearch.Model

// LoadSearchModel reads a static embedding model from dir: its
// model.safetensors and tokenizer.json (docs/search.md says where to get
// one and what it costs). Nothing is downloaded.
func LoadSearchModel(dir string) (*SearchModel, error) { return toolsearch.LoadModel(dir) }
