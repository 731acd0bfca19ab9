package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/config"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/stablelist"
	"github.com/gatehouse-dev/gatehouse/internal/metatool"
	"github.com/gatehouse-dev/gatehouse/internal/toolsearch"
	"github.com/gatehouse-dev/gatehouse/server"
)

// Tool search in the gateway. Unless search.enabled is false, the gateway
// serves its own tool gatehouse__search_tools (answered by the pipeline,
// like mcp__describe_tool, with the tools the caller may see), and gives
// the stable tools/list (package stablelist) to the callers who get it.
// Every tool stays registered on the go-sdk's servers: the stable list
// replaces the answer to tools/list, nothing else, so a tool the list
// does not show is called by name through the one pipeline.

// searchToolName is the gateway's tool search tool (docs/reference/wire.md): it
// takes {"query": string, "limit": int} and answers structuredContent
// {"tools": [{"name", "description", "inputSchema", "score"}]}, best first.
const searchToolName = stablelist.Name

// stableList returns the stable tools/list of a caller, and whether the
// caller gets it.
func (m *servedMap) stableList(subject server.Subject, info server.RequestInfo) ([]*mcp.Tool, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.search.List(m.tools, m.sizes, func(name string) bool { return m.visible(name, subject, info) })
}

// stableLists is the receiving middleware that answers tools/list with the
// stable list to the callers who get it. The list has one page: a cursor
// is invalid params, as for the relay's lists. The hardened server's
// middleware, outside this one, filters the answer by the caller's
// visibility as always.
func (g *Gateway) stableLists(local bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			lreq, ok := req.(*mcp.ListToolsRequest)
			if method != "tools/list" || !ok {
				return next(ctx, method, req)
			}
			subject, ok := g.relaySubject(ctx, req, local)
			if !ok {
				return next(ctx, method, req)
			}
			tools, stable := g.served.stableList(server.Subject(subject), server.InfoOf(req, local))
			if !stable {
				return next(ctx, method, req)
			}
			if lreq.Params != nil && lreq.Params.Cursor != "" {
				return nil, errStableCursor
			}
			return &mcp.ListToolsResult{Tools: tools}, nil
		}
	}
}

// errStableCursor answers a cursor on the stable list.
var errStableCursor = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor: the stable tool list has one page"}

// search answers gatehouse__search_tools: the tools the caller may see
// (the same check as tools/list and tools/call, applied before the cut)
// that fit the query, best first; arguments that are wrong are a tool
// error that says why.
func (p *pipeline) search(ctx context.Context, subject server.Subject, req *callRequest) callOutcome {
	a, err := metatool.ParseSearchArgs(req.args, p.served.search.Limit)
	if err != nil {
		return callOutcome{label: outcomeToolError, result: metatool.ErrorResult(err)}
	}
	hits, err := p.ts.SearchFor(ctx, a.Query, a.Limit, func(name string) bool {
		return p.served.visible(name, subject, req.info)
	})
	if err != nil {
		return p.answer("", searchToolName, nil, err)
	}
	return callOutcome{label: outcomeOK, result: metatool.SearchResult(a, hits)}
}

// loadSearchModel reads the embedding model search.model names, if any
// (docs/search.md): nil when none is configured.
func loadSearchModel(cfg *Config) (*toolsearch.Model, error) {
	dir := cfg.SearchModelDir()
	if dir == "" {
		return nil, nil
	}
	m, err := toolsearch.LoadModel(dir)
	if err != nil {
		return nil, config.Errorf(cfg, "search.model",
			"point it at a directory with a model2vec model's model.safetensors and tokenizer.json (docs/search.md), or leave it out",
			"%v", err)
	}
	return m, nil
}
