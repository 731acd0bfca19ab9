package metatool

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/toolsearch"
)

// Each way a search call's arguments can be wrong is an *ArgsError that
// names the argument and says what to send; toolsearch's refusals are
// wrapped.
func TestParseSearchArgsErrors(t *testing.T) {
	cases := []struct {
		name, args, field, msg string
		wrapped                error
	}{
		{"no arguments", "", "", "must be a JSON object", nil},
		{"null", "null", "", "must be a JSON object", nil},
		{"a list", `["open a PR"]`, "", "must be a JSON object", nil},
		{"a string", `"open a PR"`, "", "must be a JSON object", nil},
		{"broken JSON", `{"query": "a"`, "", "must be a JSON object", nil},
		{"no query", `{}`, "query", "is required", nil},
		{"query null", `{"query": null}`, "query", "is required", nil},
		{"query a number", `{"query": 5}`, "query", "must be a string", nil},
		{"query a list", `{"query": ["open", "PR"]}`, "query", "must be a string", nil},
		{"query an object", `{"query": {"text": "x"}}`, "query", "must be a string", nil},
		{"query empty", `{"query": ""}`, "query", "is empty", toolsearch.ErrEmptyQuery},
		{"query spaces", `{"query": " \t\n "}`, "query", "is empty", toolsearch.ErrEmptyQuery},
		{"query common words", `{"query": "what is the"}`, "query", "no words to search", toolsearch.ErrNoWords},
		{"query punctuation", `{"query": "?!-- ..."}`, "query", "no words to search", toolsearch.ErrNoWords},
		{"query control characters", `{"query": "\u0000\u0007"}`, "query", "no words to search", toolsearch.ErrNoWords},
		{"limit zero", `{"query": "send mail", "limit": 0}`, "limit", "from 1 to 50", nil},
		{"limit negative", `{"query": "send mail", "limit": -2}`, "limit", "from 1 to 50", nil},
		{"limit too large", `{"query": "send mail", "limit": 51}`, "limit", "from 1 to 50", nil},
		{"limit a fraction", `{"query": "send mail", "limit": 2.5}`, "limit", "whole number", nil},
		{"limit a string", `{"query": "send mail", "limit": "5"}`, "limit", "whole number", nil},
		{"limit a boolean", `{"query": "send mail", "limit": true}`, "limit", "whole number", nil},
		{"limit out of float range", `{"query": "send mail", "limit": 1e400}`, "limit", "whole number", nil},
		{"limit a list", `{"query": "send mail", "limit": [5]}`, "limit", "whole number", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSearchArgs(json.RawMessage(tc.args), 8)
			var ae *ArgsError
			if !errors.As(err, &ae) {
				t.Fatalf("%s: %v, want an *ArgsError", tc.args, err)
			}
			if ae.Field != tc.field || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("%s: field %q, %q; want field %q and %q", tc.args, ae.Field, err, tc.field, tc.msg)
			}
			if tc.field != "" && !strings.HasPrefix(err.Error(), tc.field+": ") {
				t.Errorf("%q does not name the argument", err)
			}
			if tc.wrapped != nil && !errors.Is(err, tc.wrapped) {
				t.Errorf("%v does not wrap %v", err, tc.wrapped)
			}
		})
	}
}

func TestParseSearchArgs(t *testing.T) {
	cases := []struct {
		args  string
		query string
		limit int
	}{
		{`{"query": "open a pull request"}`, "open a pull request", 8},
		{`{"query": "open a pull request", "limit": null}`, "open a pull request", 8},
		{`{"query": "x y", "limit": 1}`, "x y", 1},
		{`{"query": "x y", "limit": 50}`, "x y", 50},
		{`{"query": "x y", "limit": 3.0}`, "x y", 3},
		{`{"query": "x y", "limit": 2e1}`, "x y", 20},
		{` {"limit": 4, "query": "ünïcode wörds", "reason": "the model added this"} `, "ünïcode wörds", 4},
	}
	for _, tc := range cases {
		a, err := ParseSearchArgs(json.RawMessage(tc.args), 8)
		if err != nil {
			t.Errorf("%s: %v", tc.args, err)
			continue
		}
		if a.Query != tc.query || a.Limit != tc.limit || a.Parsed == nil {
			t.Errorf("%s: %+v, want query %q limit %d", tc.args, a, tc.query, tc.limit)
		}
	}
}

func tool(server, name, desc string, params ...string) Tool {
	props := map[string]any{}
	for _, p := range params {
		props[p] = map[string]any{"type": "string"}
	}
	return Tool{Name: server + "__" + name, Server: server, Description: desc,
		InputSchema: map[string]any{"type": "object", "properties": props}}
}

func names(hits []Hit) []string {
	out := []string{}
	for _, h := range hits {
		out = append(out, h.Name)
	}
	return out
}

func find(t *testing.T, f *Finder, gen uint64, tools []Tool, query string, limit int, allow func(string) bool) []string {
	t.Helper()
	hits, err := f.Find(gen, func() []Tool { return tools }, query, limit, allow)
	if err != nil {
		t.Fatal(err)
	}
	return names(hits)
}

// A Finder follows its map: a server whose text changed is re-indexed, so
// the old text finds nothing and the answer is the new text; a removed
// server or tool is gone; a generation already synced is not read again.
func TestFinderFollowsTheMap(t *testing.T) {
	var f Finder
	v1 := []Tool{
		tool("mail", "send_email", "Send an email message to a recipient.", "to", "subject"),
		tool("mail", "list_inbox", "List the messages in the inbox."),
		tool("tracker", "create_issue", "Open a new issue in a project.", "title"),
	}
	const gen1, gen2, gen3 = 1, 2, 3
	if got := find(t, &f, gen1, v1, "email a recipient", 5, nil); len(got) == 0 || got[0] != "mail__send_email" {
		t.Fatalf("v1: %v", got)
	}
	// The same generation is not read again (its tools func is not
	// called), nor an older one.
	if _, err := f.Find(gen1, func() []Tool { panic("read again") }, "email", 5, nil); err != nil {
		t.Fatal(err)
	}

	// send_email drifts: the map now shows the quarantine text.
	v2 := []Tool{
		{Name: "mail__send_email", Server: "mail", Description: "Quarantined: calls are refused.", InputSchema: map[string]any{"type": "object"}, Contract: "q"},
		v1[1], v1[2],
	}
	if got := find(t, &f, gen2, v2, "email a recipient", 5, nil); len(got) == 0 || got[0] != "mail__send_email" {
		// found by its name words only (list_inbox may follow: "email"
		// and "message" are synonyms), never by the drifted text, below
		t.Fatalf("v2 by name: %v", got)
	}
	if got := find(t, &f, gen2, v2, "recipient subject", 5, nil); len(got) != 0 {
		t.Errorf("v2: the old text still finds %v", got)
	}
	hits, _ := f.Find(gen2, nil, "send email", 5, nil)
	if len(hits) == 0 || hits[0].Description != "Quarantined: calls are refused." {
		t.Errorf("v2 answer: %+v", hits)
	}

	// A search that read the map before the drift does not take the index
	// back.
	if got := find(t, &f, gen1, v1, "recipient subject", 5, nil); len(got) != 0 {
		t.Errorf("an older generation took the index back: %v", got)
	}

	// The tracker server is gone.
	v3 := v2[:2]
	if got := find(t, &f, gen3, v3, "open issue project", 5, nil); len(got) != 0 {
		t.Errorf("v3: a removed server's tool is found: %v", got)
	}
}

// allow is asked before the cut: a caller who may see one tool gets it
// even when tools it may not see rank above it, and never gets those.
func TestFinderAllowBeforeCut(t *testing.T) {
	var f Finder
	tools := []Tool{tool("b", "mailer", "Does many things for many people; among them it can send an email.")}
	for i := range 20 {
		tools = append(tools, tool(fmt.Sprintf("c%d", i), "send_email", "Send email."))
	}
	const gen = 0
	all := find(t, &f, gen, tools, "send email", 1, nil)
	only := func(name string) bool { return name == "b__mailer" }
	got := find(t, &f, gen, tools, "send email", 1, only)
	if len(all) != 1 || all[0] == "b__mailer" || !reflect.DeepEqual(got, []string{"b__mailer"}) {
		t.Errorf("all %v, allowed %v", all, got)
	}
}

// The answer: structuredContent {"tools": [{"name", "description",
// "inputSchema", "score"}]} best first with scores to two decimals, and the
// same tools as text.
func TestSearchResult(t *testing.T) {
	a, err := ParseSearchArgs(json.RawMessage(`{"query": "send email"}`), 8)
	if err != nil {
		t.Fatal(err)
	}
	res := SearchResult(a, []Hit{
		{Name: "mail__send", Description: "Sends.\nTwo lines.", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"to": map[string]any{"type": "string"}}}, Score: 3.14159, Server: "mail"},
		{Name: "mail__quarantined", Title: "Q", Description: "Quarantined.", Score: 0.005},
		{Name: "mail__faint", Description: "Barely.", Score: 0.0004}, // found: never shown as 0
	})
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Tools []map[string]any `json:"tools"`
		} `json:"structuredContent"`
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	tools := got.StructuredContent.Tools
	if got.IsError || len(tools) != 3 {
		t.Fatalf("%s", b)
	}
	if tools[2]["score"] != 0.01 {
		t.Errorf("a faint hit scores %v, want 0.01", tools[2]["score"])
	}
	want0 := map[string]any{"name": "mail__send", "description": "Sends.\nTwo lines.", "score": 3.14,
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"to": map[string]any{"type": "string"}}}}
	if !reflect.DeepEqual(tools[0], want0) {
		t.Errorf("first hit %v, want %v", tools[0], want0)
	}
	want1 := map[string]any{"name": "mail__quarantined", "title": "Q", "description": "Quarantined.", "score": 0.01,
		"inputSchema": map[string]any{"type": "object"}}
	if !reflect.DeepEqual(tools[1], want1) {
		t.Errorf("second hit %v, want %v", tools[1], want1)
	}
	text := got.Content[0].Text
	if !strings.Contains(text, `3 tools match "send email"`) || strings.Index(text, "mail__send (score 3.14)") > strings.Index(text, "mail__quarantined (score 0.01)") ||
		!strings.Contains(text, `input schema: {"properties":{"to":{"type":"string"}},"type":"object"}`) || !strings.Contains(text, "   Two lines.") {
		t.Errorf("text:\n%s", text)
	}
	if none := SearchResult(a, nil); none.IsError || !strings.Contains(none.Content[0].(*mcp.TextContent).Text, `No tool matches "send email"`) {
		t.Errorf("no hits: %+v", none)
	}
}

// Searches racing with changes of the map (each with the generation it
// read) never take the index back: whatever order they sync in, the index
// ends at the newest generation, and under -race nothing is shared unsafely.
func TestFinderConcurrentSync(t *testing.T) {
	var f Finder
	// word is a word of its own for each generation (digits would be
	// split off).
	word := func(g uint64) string {
		return "zq" + strings.Map(func(r rune) rune { return rune("bcdfghjklm"[r-'0']) }, fmt.Sprint(g))
	}
	version := func(g uint64) []Tool {
		return []Tool{tool("s", "t", word(g)+" only."), tool("u", "fixed", "Always here.")}
	}
	var wg sync.WaitGroup
	for g := uint64(1); g <= 40; g++ {
		wg.Go(func() {
			if _, err := f.Find(g, func() []Tool { return version(g) }, "always here", 3, nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := find(t, &f, 0, nil, word(40), 3, nil); !reflect.DeepEqual(got, []string{"s__t"}) {
		t.Errorf("the newest generation's text: %v", got)
	}
	for _, old := range []string{word(1), word(39)} {
		if got := find(t, &f, 0, nil, old, 3, nil); len(got) != 0 {
			t.Errorf("%s found: %v", old, got)
		}
	}
}

// TestSearchArgNamesAreExact: argument names match as JSON Schema reads
// them, exactly: "LIMIT" is not "limit" (encoding/json's struct decoding
// would take it), so it is ignored like any unknown argument.
func TestSearchArgNamesAreExact(t *testing.T) {
	a, err := ParseSearchArgs([]byte(`{"query":"send mail","LIMIT":3,"lImit":0}`), DefaultLimit)
	if err != nil || a.Limit != DefaultLimit || a.Query != "send mail" {
		t.Fatalf("%+v, %v; want the default limit", a, err)
	}
	if _, err := ParseSearchArgs([]byte(`{"Query":"send mail"}`), DefaultLimit); err == nil {
		t.Fatal(`"Query" was taken for "query"`)
	}
}
