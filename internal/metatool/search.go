package metatool

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/toolsearch"
)

// Names of the search meta-tool.
const (
	// AgentSearchName is the toolset's (toolset.Options.SearchTool), in
	// the mcp__ namespace of the toolset's own tools beside
	// mcp__describe_tool.
	AgentSearchName = "mcp__search_tools"
	// GatewaySearchName is the gateway's (docs/reference/wire.md).
	GatewaySearchName = "gatehouse__search_tools"
)

// Limits of the number of hits.
const (
	// DefaultLimit is the number of hits when a call gives none (the
	// gateway's search.limit default).
	DefaultLimit = 8
	// MaxLimit is the most hits a call may ask for.
	MaxLimit = 50
)

// A Tool is one tool of a map, as the map serves it: what the index holds
// and what a hit answers.
type Tool struct {
	// Name is the tool's name in the map (the name a caller calls).
	Name string
	// Server is the server that offers it: the index is replaced per
	// server.
	Server string
	// Title and Description are the tool's, as the map shows them (a
	// quarantined tool's are the map's quarantine text).
	Title, Description string
	// InputSchema is the tool's full input schema as the map serves it. It
	// is read, never modified.
	InputSchema map[string]any
	// Contract changes whenever InputSchema does (a contract hash and the
	// tool's state). Empty means unknown: the schema is encoded to tell.
	Contract string
}

// A Hit is one tool found, in the answer's shape (docs/reference/wire.md).
type Hit struct {
	// Name is the tool's name: call it by that name.
	Name string `json:"name"`
	// Title is the tool's title, if it has one.
	Title string `json:"title,omitempty"`
	// Description is the tool's description as the map shows it.
	Description string `json:"description"`
	// InputSchema is the tool's full input schema. It is shared with the
	// map: never modify it.
	InputSchema map[string]any `json:"inputSchema"`
	// Score is the search's score: higher is a better match. Result rounds
	// it to two decimals.
	Score float64 `json:"score"`
	// Server is the server that offers the tool (not part of the answer).
	Server string `json:"-"`
}

// Finder keeps a toolsearch index of one tool map current. Its zero value
// is ready; it is safe for concurrent use. Sync brings it to the map's
// current state; Search reads it without waiting for a Sync.
type Finder struct {
	mu     sync.Mutex        // serializes Sync
	prints map[string]string // server -> print of the tools indexed
	ix     atomic.Pointer[toolsearch.Index]
	tools  atomic.Pointer[map[string]Tool]  // the map last synced, by name
	synced atomic.Pointer[uint64]           // the generation last synced; nil before the first
	model  atomic.Pointer[toolsearch.Model] // the index's semantic stage, if any
}

// SetModel sets the embedding model the index re-ranks with
// (toolsearch.Options.Model). It counts only before the first Sync, which
// builds the index; later calls change nothing.
func (f *Finder) SetModel(m *toolsearch.Model) {
	if m != nil {
		f.model.Store(m)
	}
}

// Sync brings the index to generation gen of the map, a number that grows
// whenever the map changes: when gen is newer than the generation last
// synced (or none was), tools is called for the map's tools, and the
// servers whose tools changed (or that are gone) are replaced in the
// index. An older or the same generation changes nothing, so searches
// racing with a change never take the index back. Once Sync returns, no
// Search finds a tool by text the map of that generation no longer shows.
func (f *Finder) Sync(gen uint64, tools func() []Tool) {
	if s := f.synced.Load(); s != nil && *s >= gen {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.synced.Load(); s != nil && *s >= gen {
		return
	}
	byServer := map[string][]Tool{}
	byName := map[string]Tool{}
	for _, t := range tools() {
		byServer[t.Server] = append(byServer[t.Server], t)
		byName[t.Name] = t
	}
	// The map first: a search meanwhile answers with what the map shows
	// now, and drops hits of tools no longer in it.
	f.tools.Store(&byName)
	ix := f.ix.Load()
	if ix == nil {
		ix = toolsearch.New(&toolsearch.Options{Model: f.model.Load()})
		f.ix.Store(ix)
	}
	prints := make(map[string]string, len(byServer))
	for server, list := range byServer {
		p := serverPrint(list)
		prints[server] = p
		if f.prints[server] != p {
			ix.Replace(server, docs(list))
		}
	}
	for server := range f.prints {
		if _, ok := prints[server]; !ok {
			ix.Replace(server, nil)
		}
	}
	f.prints = prints
	f.synced.Store(&gen)
}

// Search returns up to limit tools of the map last synced that fit q and
// that allow accepts (nil accepts all), best first. allow is applied
// before the cut, so a caller gets as many hits as it may see.
func (f *Finder) Search(q *toolsearch.Query, limit int, allow func(name string) bool) []Hit {
	ix, tools := f.ix.Load(), f.tools.Load()
	if ix == nil || tools == nil || q == nil {
		return nil
	}
	m := *tools
	found := ix.SearchQuery(q, limit, func(name string) bool {
		_, ok := m[name]
		return ok && (allow == nil || allow(name))
	})
	hits := make([]Hit, 0, len(found))
	for _, h := range found {
		t := m[h.Name]
		hits = append(hits, Hit{Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, Score: h.Score, Server: t.Server})
	}
	return hits
}

// Find is Sync then Search for a query as text, of up to limit hits
// (limit <= 0: DefaultLimit). A query with nothing to search is an error
// wrapping toolsearch.ErrEmptyQuery, ErrNoWords or ErrInvalidUTF8.
func (f *Finder) Find(gen uint64, tools func() []Tool, query string, limit int, allow func(name string) bool) ([]Hit, error) {
	q, err := toolsearch.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	if limit <= 0 {
		limit = DefaultLimit
	}
	f.Sync(gen, tools)
	return f.Search(q, limit, allow), nil
}

// Call answers one call of the search meta-tool with args (any value that
// encodes to the arguments object): Sync, then the hits allow accepts
// (SearchResult), or the tool error that says what is wrong with args.
func (f *Finder) Call(gen uint64, tools func() []Tool, args any, defaultLimit int, allow func(name string) bool) *mcp.CallToolResult {
	raw, ok := args.(json.RawMessage)
	if !ok {
		raw, _ = json.Marshal(args)
	}
	a, err := ParseSearchArgs(raw, defaultLimit)
	if err != nil {
		return ErrorResult(err)
	}
	f.Sync(gen, tools)
	return SearchResult(a, f.Search(a.Parsed, a.Limit, allow))
}

// serverPrint is a print of a server's tools: it changes when any indexed
// text does.
func serverPrint(list []Tool) string {
	keys := make([]string, len(list))
	for i, t := range list {
		c := t.Contract
		if c == "" {
			b, _ := json.Marshal(t.InputSchema)
			c = string(b)
		}
		keys[i] = strings.Join([]string{t.Name, t.Title, t.Description, c}, "\x00")
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%d:%s", len(k), k)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// docs are the index's documents of a server's tools.
func docs(list []Tool) []toolsearch.Doc {
	out := make([]toolsearch.Doc, len(list))
	for i, t := range list {
		out[i] = toolsearch.Doc{Name: t.Name, Server: t.Server, Title: t.Title, Description: t.Description}
		if b, err := json.Marshal(t.InputSchema); err == nil {
			// A schema the index cannot read (over 1 MiB, properties
			// that are no object) is searched by its other fields.
			out[i].Params, _ = toolsearch.ParamsFromSchema(b)
		}
	}
	return out
}

// SearchDefinition is the search meta-tool called name, whose calls without a limit
// get defaultLimit hits.
func SearchDefinition(name string, defaultLimit int) *mcp.Tool {
	return &mcp.Tool{
		Name:  name,
		Title: "Search tools",
		Description: "Finds the tools that fit a task among every tool available here, best first, with each tool's " +
			"description and full input schema. Say what you want to do in a few words (\"open a pull request\", " +
			"\"list the files in a folder\"). Any tool found can then be called by its name, whether it is listed or not.",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"query": map[string]any{"type": "string",
					"description": "What the tool should do, in a few words."},
				"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": MaxLimit,
					"description": fmt.Sprintf("How many tools to return at most (default %d).", defaultLimit)},
			},
			"required": []any{"query"},
		},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}
}

// SearchResult is the search meta-tool's answer: structuredContent {"tools": [...]}
// best first, with scores rounded to two decimals (a hit found scores at
// least 0.01: a weak match is not shown as none), and the same as text.
func SearchResult(a SearchArgs, hits []Hit) *mcp.CallToolResult {
	out := SearchAnswer{Tools: make([]Hit, len(hits))}
	for i, h := range hits {
		h.Score = math.Round(h.Score*100) / 100
		if h.Score < 0.01 {
			h.Score = 0.01
		}
		if h.InputSchema == nil {
			h.InputSchema = map[string]any{"type": "object"}
		}
		out.Tools[i] = h
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out.Text(a.Query)}}, StructuredContent: out}
}

// SearchAnswer is the search meta-tool's structured content.
type SearchAnswer struct {
	Tools []Hit `json:"tools"`
}

// Text renders the answer to query for a reader of text: one paragraph
// per tool, best first, with its input schema as JSON.
func (a SearchAnswer) Text(query string) string {
	var b strings.Builder
	if len(a.Tools) == 0 {
		fmt.Fprintf(&b, "No tool matches %q. Try other words: what the tool does, or what it acts on.", query)
		return b.String()
	}
	noun := "tools match"
	if len(a.Tools) == 1 {
		noun = "tool matches"
	}
	fmt.Fprintf(&b, "%d %s %q, best first. Call a tool by its name with arguments that fit its input schema.\n",
		len(a.Tools), noun, query)
	for i, h := range a.Tools {
		schema, _ := json.Marshal(h.InputSchema)
		fmt.Fprintf(&b, "\n%d. %s (score %.2f)\n", i+1, h.Name, h.Score)
		if h.Title != "" {
			fmt.Fprintf(&b, "   %s\n", h.Title)
		}
		if h.Description != "" {
			fmt.Fprintf(&b, "   %s\n", strings.ReplaceAll(h.Description, "\n", "\n   "))
		}
		fmt.Fprintf(&b, "   input schema: %s\n", schema)
	}
	return b.String()
}

// ErrorResult is a meta-tool's answer to a call it cannot serve: a tool
// error that says why (arguments, a query with nothing to search).
func ErrorResult(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
}
