package relay

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// The prompts and resource templates a relay forwards are judged against
// their server's pins (toolset.Upstream.AdmitPrompts, AdmitTemplates) as
// they are listed. These tests were toolset/pinforward_test.go's; the ones
// that need no forwarding stayed there.

// docsServer is a real go-sdk server over streamable HTTP on 127.0.0.1
// with one tool, prompts and resource templates a test can change while it
// runs (the go-sdk announces each change with list_changed). A prompt's
// get answers its current description; a read answers "<description>:<uri>".
type docsServer struct {
	srv  *mcp.Server
	url  string
	mu   sync.Mutex
	desc map[string]string // prompt name or URI template -> description
}

func newDocsServer(t *testing.T) *docsServer {
	t.Helper()
	d := &docsServer{desc: map[string]string{}}
	d.srv = mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, &mcp.ServerOptions{
		CompletionHandler: func(_ context.Context, r *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{r.Params.Ref.Name + r.Params.Ref.URI}}}, nil
		},
	})
	d.setTool("Searches the docs.")
	d.setPrompt("greet", "Says hello.")
	d.setPrompt("summarize", "Summarizes a text.")
	d.setTemplate("docs://page/{id}", "A page.")
	d.setTemplate("docs://user/{id}", "A user.")
	d.url = serveHTTP(t, d.srv)
	return d
}

func (d *docsServer) server() toolset.Server { return remote("docs", d.url) }

func (d *docsServer) setTool(desc string) {
	mcp.AddTool(d.srv, &mcp.Tool{Name: "search", Description: desc}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found"}}}, nil, nil
	})
}

func (d *docsServer) setPrompt(name, desc string) {
	d.mu.Lock()
	d.desc[name] = desc
	d.mu.Unlock()
	d.srv.AddPrompt(&mcp.Prompt{Name: name, Description: desc, Arguments: []*mcp.PromptArgument{{Name: "topic", Description: "The topic."}}},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			d.mu.Lock()
			defer d.mu.Unlock()
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: d.desc[name]}}}}, nil
		})
}

func (d *docsServer) setTemplate(tmpl, desc string) {
	d.mu.Lock()
	d.desc[tmpl] = desc
	d.mu.Unlock()
	d.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: tmpl, Name: "t", Description: desc},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			d.mu.Lock()
			defer d.mu.Unlock()
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: d.desc[tmpl] + ":" + r.Params.URI}}}, nil
		})
}

func promptNames(t *testing.T, r *Relay) []string {
	t.Helper()
	ps, err := r.listPrompts(ctxT(t), nil)
	if err != nil {
		t.Fatalf("listPrompts: %v", err)
	}
	return names(ps)
}

func templateNames(t *testing.T, r *Relay) []string {
	t.Helper()
	rs, err := r.listResourceTemplates(ctxT(t), nil)
	if err != nil {
		t.Fatalf("listResourceTemplates: %v", err)
	}
	var out []string
	for _, rt := range rs {
		out = append(out, rt.URITemplate)
	}
	slices.Sort(out)
	return out
}

func getPrompt(r *Relay, ctx context.Context, name string) (string, error) {
	res, err := r.getPrompt(ctx, nil, &mcp.GetPromptParams{Name: name, Arguments: map[string]string{"topic": "x"}}, nil, asker{})
	if err != nil {
		return "", err
	}
	return res.Messages[0].Content.(*mcp.TextContent).Text, nil
}

func toolState(t *testing.T, r *Relay, name string) toolset.State {
	t.Helper()
	list, err := r.Toolset().Tools(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range list {
		if ti.Name == name {
			return ti.State
		}
	}
	t.Fatalf("no tool %s in %v", name, list)
	return ""
}

// isQuarantined checks a refusal: the toolset's quarantined code, an
// invalid-params JSON-RPC code on the wire, sanitized names, no server
// text.
func isQuarantined(t *testing.T, what string, err error) {
	t.Helper()
	var je *jsonrpc.Error
	if !errors.Is(err, toolset.ErrQuarantined) || !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams ||
		!strings.Contains(err.Error(), "gatehouse trust docs") || strings.Contains(err.Error(), "POISON") {
		t.Fatalf("%s: %v, want a quarantined refusal", what, err)
	}
}

// TestPromptDriftWithheldUntilRetrust: prompts are pinned on first sight; a
// prompt whose description changes after trust is not listed and its get
// and completion are refused as quarantined, while the other prompts, the
// templates and the tools are served; a new prompt is withheld (unknown);
// a removed one disappears; each drift is a tool-drift diagnostic; Retrust
// serves the current prompts with their new text, and the sessions of the
// relay's go-sdk server are told that prompts and resources changed.
func TestPromptDriftWithheldUntilRetrust(t *testing.T) {
	d := newDocsServer(t)
	st := sqliteAt(t, filepath.Join(t.TempDir(), "g.db"))
	r := openRelay(t, []toolset.Server{d.server()}, &toolset.Options{Store: st}, nil)
	ts := r.Toolset()
	ctx := ctxT(t)
	if got := promptNames(t, r); !slices.Equal(got, []string{"docs__greet", "docs__summarize"}) {
		t.Fatalf("prompts at first sight = %v", got)
	}
	if got, err := getPrompt(r, ctx, "docs__greet"); err != nil || got != "Says hello." {
		t.Fatalf("get greet = %q, %v", got, err)
	}
	base, err := st.GetBaseline(ctx, "config:docs")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []store.BaselineKey{{Kind: store.KindPrompt, Name: "greet"}, {Kind: store.KindPrompt, Name: "summarize"},
		{Kind: store.KindTemplate, Name: "docs://page/{id}"}, {Kind: store.KindTemplate, Name: "docs://user/{id}"}, {Kind: store.KindTool, Name: "search"}} {
		if _, err := pin.ParsePin(base[k].Value); err != nil {
			t.Errorf("baseline[%v] = %q: %v", k, base[k].Value, err)
		}
	}
	if base[promptsMarker].Value != store.PinnedMarker || base[templatesMarker].Value != store.PinnedMarker || len(base) != 8 {
		t.Fatalf("baseline %v", base)
	}

	// The rug pull: greet's description changes.
	d.setPrompt("greet", "Says hello. "+poison)
	waitFor(t, "the prompt drift diagnostic", func() bool {
		return ruleCount(ts.Diagnostics(), diag.ToolDrift, "the prompt greet on server docs changed after it was trusted; it is quarantined") == 1
	})
	// The route listed before the change is not used: the get is refused
	// before anything lists again.
	_, err = getPrompt(r, ctx, "docs__greet")
	isQuarantined(t, "get greet", err)
	ps, err := r.listPrompts(ctx, nil)
	if err != nil || !slices.Equal(names(ps), []string{"docs__summarize"}) {
		t.Fatalf("prompts after the change = %v, %v", names(ps), err)
	}
	if b, _ := json.Marshal(ps); strings.Contains(string(b), "POISON") {
		t.Fatalf("drifted text listed: %s", b)
	}
	_, err = r.complete(ctx, nil, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "docs__greet"},
		Argument: mcp.CompleteParamsArgument{Name: "topic", Value: "a"}}, nil, asker{})
	isQuarantined(t, "complete greet", err)
	// A caller that may not see the server gets the unknown-prompt answer.
	hidden := allowFunc(func(string) bool { return false })
	if _, err := r.getPrompt(ctx, nil, &mcp.GetPromptParams{Name: "docs__greet"}, hidden, asker{}); err == nil || errors.Is(err, toolset.ErrQuarantined) {
		t.Fatalf("hidden server's quarantined prompt: %v", err)
	}
	if got, err := getPrompt(r, ctx, "docs__summarize"); err != nil || got != "Summarizes a text." {
		t.Fatalf("get summarize = %q, %v", got, err)
	}
	cr, err := r.complete(ctx, nil, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "docs__summarize"},
		Argument: mcp.CompleteParamsArgument{Name: "topic", Value: "a"}}, nil, asker{})
	if err != nil || len(cr.Completion.Values) != 1 || cr.Completion.Values[0] != "summarize" {
		t.Fatalf("complete summarize = %+v, %v", cr, err)
	}
	if got := templateNames(t, r); len(got) != 2 {
		t.Fatalf("templates after a prompt change = %v", got)
	}
	if s := toolState(t, r, "docs__search"); s != toolset.Active {
		t.Fatalf("a prompt change touched the tool: %s", s)
	}

	// A new prompt after trust is withheld (unknown); a removed one is gone.
	d.setPrompt("added", "New. "+poison)
	d.srv.RemovePrompts("summarize")
	waitFor(t, "new and removed prompt diagnostics", func() bool {
		ds := ts.Diagnostics()
		return ruleCount(ds, diag.ToolDrift, "server docs published a new prompt added after it was trusted; it is withheld") == 1 &&
			ruleCount(ds, diag.ToolDrift, "server docs no longer publishes its trusted prompt summarize; it is dropped") == 1
	})
	if got := promptNames(t, r); len(got) != 0 {
		t.Fatalf("prompts = %v, want none", got)
	}
	if _, err := getPrompt(r, ctx, "docs__added"); err == nil || errors.Is(err, toolset.ErrQuarantined) || !strings.Contains(err.Error(), "unknown prompt") {
		t.Fatalf("get a new prompt: %v, want unknown prompt", err)
	}
	for _, d := range ts.Diagnostics() {
		if strings.Contains(d.Message, "POISON") {
			t.Fatalf("drifted text in a diagnostic: %s", d.Message)
		}
	}

	// Re-trust: the current prompts are served, with their current text,
	// and the relay's sessions are told. The listening session connects
	// now, after the announcements of the changes above.
	var mu sync.Mutex
	var announced []toolset.ListChange
	note := func(w toolset.ListChange) {
		mu.Lock()
		announced = append(announced, w)
		mu.Unlock()
	}
	_, url := front(t, r, false)
	dial(t, url, "2025-11-25", &mcp.ClientOptions{
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { note(toolset.PromptsChanged) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { note(toolset.ResourcesChanged) },
	})
	rec, err := ts.Retrust(ctx, "docs")
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Prompts) != 2 || rec.Prompts[0].Name != "added" || rec.Prompts[1].Name != "greet" || len(rec.ResourceTemplates) != 2 {
		t.Fatalf("trust record %+v", rec)
	}
	if got := promptNames(t, r); !slices.Equal(got, []string{"docs__added", "docs__greet"}) {
		t.Fatalf("prompts after re-trust = %v", got)
	}
	if got, err := getPrompt(r, ctx, "docs__greet"); err != nil || got != "Says hello. "+poison {
		t.Fatalf("get greet after re-trust = %q, %v", got, err)
	}
	if n := ruleCount(ts.Diagnostics(), diag.ToolDrift, ""); n != 0 {
		t.Fatalf("drift after re-trust: %v", ts.Diagnostics())
	}
	waitFor(t, "a re-trust to announce prompts and resources", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(announced, toolset.PromptsChanged) && slices.Contains(announced, toolset.ResourcesChanged)
	})
}

// TestTemplateDriftIsolatedFromTools: a changed resource template is not
// listed and reads of URIs it matches (and its completion) are refused as
// quarantined, while the other template, the prompts and the tool are
// served; a changed tool is quarantined without touching prompts or
// templates; Retrust restores both.
func TestTemplateDriftIsolatedFromTools(t *testing.T) {
	d := newDocsServer(t)
	r := openRelay(t, []toolset.Server{d.server()}, &toolset.Options{Store: sqliteAt(t, filepath.Join(t.TempDir(), "g.db"))}, nil)
	ts := r.Toolset()
	ctx := ctxT(t)
	if got := templateNames(t, r); !slices.Equal(got, []string{"docs://page/{id}", "docs://user/{id}"}) {
		t.Fatalf("templates = %v", got)
	}
	if got, err := readText(t, r, "docs://page/7", nil); err != nil || got != "A page.:docs://page/7" {
		t.Fatalf("read page = %q, %v", got, err)
	}

	d.setTemplate("docs://page/{id}", "A page. "+poison)
	waitFor(t, "the template drift diagnostic", func() bool {
		return ruleCount(ts.Diagnostics(), diag.ToolDrift, "the resource template docs___page__id_ on server docs changed after it was trusted; it is quarantined") == 1
	})
	// The route listed before the change is not used.
	_, err := readText(t, r, "docs://page/7", nil)
	isQuarantined(t, "read a URI of the changed template", err)
	if got := templateNames(t, r); !slices.Equal(got, []string{"docs://user/{id}"}) {
		t.Fatalf("templates after the change = %v", got)
	}
	_, err = r.complete(ctx, nil, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "docs://page/{id}"},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: "1"}}, nil, asker{})
	isQuarantined(t, "complete the changed template", err)
	cr, err := r.complete(ctx, nil, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "docs://user/{id}"},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: "1"}}, nil, asker{})
	if err != nil || len(cr.Completion.Values) != 1 || cr.Completion.Values[0] != "docs://user/{id}" {
		t.Fatalf("complete the trusted template = %+v, %v", cr, err)
	}
	if got, err := readText(t, r, "docs://user/3", nil); err != nil || got != "A user.:docs://user/3" {
		t.Fatalf("read user = %q, %v", got, err)
	}
	if got := promptNames(t, r); len(got) != 2 {
		t.Fatalf("prompts after a template change = %v", got)
	}
	if s := toolState(t, r, "docs__search"); s != toolset.Active {
		t.Fatalf("a template change touched the tool: %s", s)
	}
	if got := call(t, r, "docs__search", ""); got != "found" {
		t.Fatalf("call = %q", got)
	}

	// And the other way round: a tool change quarantines the tool only.
	d.setTool("Searches. " + poison)
	waitFor(t, "the tool quarantined", func() bool { return toolState(t, r, "docs__search") == toolset.Quarantined })
	if got := promptNames(t, r); len(got) != 2 {
		t.Fatalf("prompts after a tool change = %v", got)
	}
	if got := templateNames(t, r); !slices.Equal(got, []string{"docs://user/{id}"}) {
		t.Fatalf("templates after a tool change = %v", got)
	}
	if n := ruleCount(ts.Diagnostics(), diag.ToolDrift, "it is quarantined"); n != 2 {
		t.Fatalf("quarantine diagnostics: %v", ts.Diagnostics())
	}

	if _, err := ts.Retrust(ctx, "docs"); err != nil {
		t.Fatal(err)
	}
	if got := templateNames(t, r); len(got) != 2 {
		t.Fatalf("templates after re-trust = %v", got)
	}
	if got, err := readText(t, r, "docs://page/7", nil); err != nil || got != "A page. "+poison+":docs://page/7" {
		t.Fatalf("read page after re-trust = %q, %v", got, err)
	}
	if s := toolState(t, r, "docs__search"); s != toolset.Active {
		t.Fatalf("tool after re-trust: %s", s)
	}
}

// TestForwardedPinsSurviveWake: pins recorded by one relay's toolset are
// enforced by another woken from the same store file before it reconciles
// anything (DeferReconcile), and the re-listing its listing starts reports
// the drift.
func TestForwardedPinsSurviveWake(t *testing.T) {
	d := newDocsServer(t)
	dbPath := filepath.Join(t.TempDir(), "g.db")
	st := sqliteAt(t, dbPath)
	r := openRelay(t, []toolset.Server{d.server()}, &toolset.Options{Store: st}, nil)
	if got := promptNames(t, r); len(got) != 2 {
		t.Fatalf("prompts = %v", got)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	d.setPrompt("greet", "Says hello. "+poison)
	d.setTemplate("docs://page/{id}", "A page. "+poison)
	woken := openRelay(t, []toolset.Server{d.server()}, &toolset.Options{Store: sqliteAt(t, dbPath), Wake: true, DeferReconcile: true}, nil)
	ctx := ctxT(t)
	if got := promptNames(t, woken); !slices.Equal(got, []string{"docs__summarize"}) {
		t.Fatalf("woken prompts = %v", got)
	}
	_, err := getPrompt(woken, ctx, "docs__greet")
	isQuarantined(t, "woken get greet", err)
	if got := templateNames(t, woken); !slices.Equal(got, []string{"docs://user/{id}"}) {
		t.Fatalf("woken templates = %v", got)
	}
	_, err = readText(t, woken, "docs://page/1", nil)
	isQuarantined(t, "woken read page", err)
	waitFor(t, "drift reported after the wake", func() bool {
		ds := woken.Toolset().Diagnostics()
		return ruleCount(ds, diag.ToolDrift, "the prompt greet on server docs changed") == 1 &&
			ruleCount(ds, diag.ToolDrift, "the resource template docs___page__id_ on server docs changed") == 1
	})
}

// TestForwardedPinsFirstSightOnOldBaseline: a baseline recorded before
// prompts and templates were pinned (tools and instructions only, as an
// older build wrote it) gets them pinned on the next listing, with no
// migration; afterwards they are enforced. A woken relay serves none of
// them until a listing has pinned them.
func TestForwardedPinsFirstSightOnOldBaseline(t *testing.T) {
	d := newDocsServer(t)
	st := sqliteAt(t, filepath.Join(t.TempDir(), "g.db"))
	ctx := ctxT(t)
	r := openRelay(t, []toolset.Server{d.server()}, &toolset.Options{Store: st}, nil)
	if err := r.Toolset().Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	base, _ := st.GetBaseline(ctx, "config:docs")
	search := store.BaselineKey{Kind: store.KindTool, Name: "search"}
	old := store.Baseline{search: base[search], store.BaselineKey{Kind: store.KindInstructions}: base[store.BaselineKey{Kind: store.KindInstructions}]}
	if _, err := st.ClearBaseline(ctx, "config:docs"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SaveBaseline(ctx, "config:docs", old); err != nil {
		t.Fatal(err)
	}

	d.setPrompt("greet", "Changed while unpinned.")
	r = openRelay(t, []toolset.Server{d.server()}, &toolset.Options{Store: st}, nil)
	if got := promptNames(t, r); len(got) != 2 {
		t.Fatalf("prompts on first sight = %v", got)
	}
	if ds := r.Toolset().Diagnostics(); len(ds) != 0 {
		t.Fatalf("diagnostics on first sight: %v", ds)
	}
	base, _ = st.GetBaseline(ctx, "config:docs")
	if len(base) != 8 || base[promptsMarker].Value == "" || base[store.BaselineKey{Kind: store.KindPrompt, Name: "greet"}].Value == "" {
		t.Fatalf("baseline after first sight %v", base)
	}
	d.setPrompt("greet", "Changed after pinning.")
	waitFor(t, "greet withheld", func() bool { return slices.Equal(promptNames(t, r), []string{"docs__summarize"}) })
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	// Woken on an old baseline, with nothing reconciled: nothing unpinned is
	// served; the listing asks for a re-listing, which pins them.
	if _, err := st.ClearBaseline(ctx, "config:docs"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SaveBaseline(ctx, "config:docs", old); err != nil {
		t.Fatal(err)
	}
	woken := openRelay(t, []toolset.Server{d.server()}, &toolset.Options{Store: st, Wake: true, DeferReconcile: true}, nil)
	if got := promptNames(t, woken); len(got) != 0 {
		t.Fatalf("unpinned prompts served after a wake: %v", got)
	}
	waitFor(t, "prompts pinned after the wake", func() bool { return len(promptNames(t, woken)) == 2 })
	if base, _ = st.GetBaseline(ctx, "config:docs"); base[promptsMarker].Value == "" || base[templatesMarker].Value == "" {
		t.Fatalf("baseline after the wake's re-listing %v", base)
	}
}

// TestHostileToolNameCannotTakeAPromptKey (the relay's half; the pins'
// half is toolset's test of the same name): a server that names a tool
// like a prompt's old baseline key ("prompt greet") has a tool like any
// other, and its prompt is listed and served.
func TestHostileToolNameCannotTakeAPromptKey(t *testing.T) {
	d := newDocsServer(t)
	d.srv.AddTool(&mcp.Tool{Name: "prompt greet", Description: "Squats on a key.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	r := openRelay(t, []toolset.Server{d.server()}, &toolset.Options{Store: sqliteAt(t, filepath.Join(t.TempDir(), "g.db"))}, nil)
	if got := promptNames(t, r); !slices.Equal(got, []string{"docs__greet", "docs__summarize"}) {
		t.Fatalf("prompts = %v", got)
	}
	if ruleCount(r.Toolset().Diagnostics(), diag.ToolDrift, "") != 0 {
		t.Fatalf("diagnostics %v", r.Toolset().Diagnostics())
	}
	if got, err := getPrompt(r, ctxT(t), "docs__greet"); err != nil || got != "Says hello." {
		t.Fatalf("get greet = %q, %v", got, err)
	}
}

// The markers of pinned prompts and resource templates.
var (
	promptsMarker   = store.BaselineKey{Kind: store.KindMarker, Name: store.MarkerPrompts}
	templatesMarker = store.BaselineKey{Kind: store.KindMarker, Name: store.MarkerTemplates}
)
