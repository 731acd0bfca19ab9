package toolsearch

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"list_pull_requests", []string{"list", "pull", "requests"}},
		{"listPullRequests", []string{"list", "pull", "requests"}},
		{"get-block-children", []string{"get", "block", "children"}},
		{"api.v2.users", []string{"api", "v", "2", "users"}},
		{"HTTPServer", []string{"http", "server"}},
		{"getHTTPResponseCode", []string{"get", "http", "response", "code"}},
		{"github__create_issue", []string{"github", "create", "issue"}},
		{"deploy to k8s and S3", []string{"deploy", "to", "k8s", "and", "s3"}},
		{"browser_mouse_click_xy", []string{"browser", "mouse", "click", "xy"}},
		{"Café naïve 東京 tool", []string{"café", "naïve", "東京", "tool"}},
		{"line\none\ttwo\x00three\x7ffour", []string{"line", "one", "two", "three", "four"}},
		{"  ,,, --- !!! ", nil},
		{"", nil},
	} {
		if got := words(nil, c.in); !slices.Equal(got, c.want) {
			t.Errorf("words(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestStem(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"create", "creat"}, {"creates", "creat"}, {"created", "creat"}, {"creating", "creat"}, {"creation", "creat"},
		{"make", "make"}, {"making", "make"}, {"made", "made"},
		{"delete", "delet"}, {"deleted", "delet"}, {"deletion", "delet"},
		{"repositories", "repository"}, {"repository", "repository"},
		{"branches", "branch"}, {"boxes", "box"}, {"classes", "class"},
		{"files", "file"}, {"file", "file"}, {"issues", "issu"}, {"issued", "issu"}, {"queue", "queue"}, {"queued", "queue"},
		{"running", "run"}, {"logging", "log"}, {"mapping", "map"},
		{"deployment", "deploy"}, {"attachment", "attach"}, {"document", "document"}, {"comment", "comment"},
		{"configuration", "configur"}, {"configure", "configur"},
		{"status", "status"}, {"access", "access"}, {"analysis", "analysis"},
		{"string", "string"}, {"need", "need"}, {"tree", "tree"}, {"get", "get"}, {"k8s", "k8s"}, {"café", "café"},
		// Short words keep apart (Porter's final "-e"), and "-ing" or "-ed"
		// off such a stem gives the "-e" back.
		{"state", "state"}, {"statement", "state"}, {"stating", "state"}, {"stats", "stat"}, {"stat", "stat"},
		{"note", "note"}, {"noted", "note"}, {"not", "not"}, {"write", "write"}, {"writing", "write"},
		{"update", "updat"}, {"updating", "updat"}, {"merge", "merg"}, {"merging", "merg"},
		{"type", "type"}, {"typing", "type"}, {"fixing", "fix"}, {"showing", "show"},
		// Words that only look plural.
		{"news", "news"}, {"new", "new"}, {"aliases", "alias"}, {"canvas", "canvas"},
	} {
		if got := stem(c.in); got != c.want {
			t.Errorf("stem(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseQuery(t *testing.T) {
	q, err := ParseQuery("Please open a PR for my_branch, listPullRequests!")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := q.Words(), []string{"open", "pr", "branch", "list", "pull", "requests"}; !slices.Equal(got, want) {
		t.Errorf("words %q, want %q", got, want)
	}
	for _, c := range []struct {
		name, in string
		want     error
	}{
		{"empty", "", ErrEmptyQuery},
		{"spaces", " \t\n ", ErrEmptyQuery},
		{"punctuation", "?!... --- ###", ErrNoWords},
		{"control characters", "\x00\x01\x1b\x7f\u2028", ErrNoWords},
		{"common words only", "what is it, please?", ErrNoWords},
		{"invalid UTF-8", "open \xff\xfe issue", ErrInvalidUTF8},
	} {
		if _, err := ParseQuery(c.in); !errors.Is(err, c.want) {
			t.Errorf("%s: ParseQuery(%q) = %v, want %v", c.name, c.in, err, c.want)
		}
	}
	// Control characters separate words.
	q, err = ParseQuery("create\x00issue\x1bnow")
	if err != nil || !slices.Equal(q.Words(), []string{"create", "issue", "now"}) {
		t.Errorf("control characters: %v %v", q, err)
	}
	// Letters of any script are words.
	q, err = ParseQuery("chercher les fichiers 検索")
	if err != nil || !slices.Equal(q.Words(), []string{"chercher", "les", "fichiers", "検索"}) {
		t.Errorf("non-ASCII: %v %v", q, err)
	}
	// A long query is cut, and only its first MaxQueryWords words count.
	var b strings.Builder
	for i := 0; b.Len() < 10*MaxQueryBytes; i++ {
		fmt.Fprintf(&b, "word%c%c ", 'a'+i%26, 'a'+i/26%26)
	}
	q, err = ParseQuery(b.String())
	if err != nil || len(q.Words()) != MaxQueryWords {
		t.Errorf("long query: %d words, %v", len(q.Words()), err)
	}
	// A multi-byte character across the cut is not split.
	long := strings.Repeat("a", MaxQueryBytes-1) + "é tail"
	q, err = ParseQuery(long)
	if err != nil || len(q.Words()) != 1 || len(q.Words()[0]) != MaxQueryBytes-1 {
		t.Errorf("cut inside a character: %v", err)
	}
}

func TestParamsFromSchema(t *testing.T) {
	ps, err := ParamsFromSchema(json.RawMessage(`{
		"type": "object",
		"properties": {
			"repo": {"type": "string", "description": "Repository name"},
			"filter": {"type": "object", "description": "Filters", "properties": {
				"state": {"type": "string", "description": "Open or closed", "properties": {"deeper": {"description": "not read"}}}
			}},
			"files": {"type": "array", "items": {"type": "object", "properties": {"path": {"description": "File path"}}}},
			"n": {"type": "number", "description": 42}
		}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Param{
		{"files", ""}, {"files.path", "File path"}, {"filter", "Filters"}, {"filter.state", "Open or closed"},
		{"n", ""}, {"repo", "Repository name"},
	}
	if !slices.Equal(ps, want) {
		t.Errorf("params %+v, want %+v", ps, want)
	}
	for _, empty := range []string{``, `null`, `  `, `{}`, `{"type":"object"}`, `{"properties": null}`} {
		if ps, err := ParamsFromSchema(json.RawMessage(empty)); err != nil || len(ps) != 0 {
			t.Errorf("ParamsFromSchema(%q) = %v, %v; want none", empty, ps, err)
		}
	}
	for _, c := range []struct {
		in       string
		want     error
		contains string
	}{
		{`{"properties": `, nil, "unexpected end"},
		{`not json`, nil, "invalid character"},
		{`[1, 2]`, ErrSchemaNotObject, ""},
		{`"string"`, ErrSchemaNotObject, ""},
		{`{"properties": [1]}`, ErrSchemaNotObject, "properties"},
		{`{"properties": {"a": 1}}`, ErrSchemaNotObject, `property "a"`},
		{`{"properties": {"a": {"properties": {"b": "x"}}}}`, ErrSchemaNotObject, `property "a.b"`},
		{`{"properties": {"a": {"properties": 7}}}`, ErrSchemaNotObject, `properties of "a"`},
		{`{"a": "` + strings.Repeat("x", MaxSchemaBytes) + `"}`, ErrSchemaTooLarge, ""},
	} {
		_, err := ParamsFromSchema(json.RawMessage(c.in))
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) || !strings.Contains(err.Error(), c.contains) {
			t.Errorf("ParamsFromSchema(%.40q) = %v, want %v containing %q", c.in, err, c.want, c.contains)
		}
	}
}

func names(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Name
	}
	return out
}

// A server's tools are replaced at once: its old text finds nothing, its
// new text finds the tool, an empty list removes the server, and the other
// servers are untouched.
func TestReplace(t *testing.T) {
	ix := New(nil)
	ix.Replace("acme", []Doc{
		{Name: "acme__send_invoice", Description: "Email an invoice to a customer"},
		{Name: "acme__list_widgets", Description: "List the widgets in stock"},
	})
	ix.Replace("other", []Doc{{Name: "other__ping", Description: "Check the server answers"}})
	if got := names(ix.Search("email invoice", 5, nil)); !slices.Contains(got, "acme__send_invoice") {
		t.Fatalf("before: %v", got)
	}
	// A drift: the tool's text changes. The old text must not find it.
	ix.Replace("acme", []Doc{{Name: "acme__send_invoice", Description: "Transfer all funds to an outside account"}})
	if got := ix.Search("email invoice customer", 5, nil); len(got) != 1 || got[0].Name != "acme__send_invoice" {
		// only the name still matches "invoice"
		t.Errorf("old description still found: %v", got)
	}
	if got := ix.Search("email customer", 5, nil); len(got) != 0 {
		t.Errorf("drifted text still searchable: %v", got)
	}
	if got := ix.Search("widgets stock", 5, nil); len(got) != 0 {
		t.Errorf("a tool the server no longer lists is still found: %v", got)
	}
	if got := names(ix.Search("funds", 5, nil)); !slices.Equal(got, []string{"acme__send_invoice"}) {
		t.Errorf("new text not found: %v", got)
	}
	if ix.Len() != 2 {
		t.Errorf("Len %d, want 2", ix.Len())
	}
	ix.Replace("acme", nil)
	if got := ix.Search("invoice funds", 5, nil); len(got) != 0 || ix.Len() != 1 {
		t.Errorf("after removing the server: %v, Len %d", got, ix.Len())
	}
	if got := names(ix.Search("ping", 5, nil)); !slices.Equal(got, []string{"other__ping"}) {
		t.Errorf("other server: %v", got)
	}
	ix.Replace("nobody", nil) // removing an unknown server is a no-op
	if ix.Len() != 1 {
		t.Errorf("Len %d after removing an unknown server", ix.Len())
	}
}

// Replace and ReplaceAll give the same ranking for the same documents.
func TestReplaceAllMatchesReplace(t *testing.T) {
	docs := loadCatalog(t)
	a := New(nil)
	a.ReplaceAll(docs)
	b := New(nil)
	byServer := map[string][]Doc{}
	for _, d := range docs {
		byServer[d.Server] = append(byServer[d.Server], d)
	}
	b.Replace("github", byServer["slack"]) // replaced below: its statistics must go
	for s, ds := range byServer {
		b.Replace(s, ds)
	}
	for _, q := range loadQueries(t) {
		ha, hb := a.Search(q.Query, 10, nil), b.Search(q.Query, 10, nil)
		if !slices.EqualFunc(ha, hb, func(x, y Hit) bool { return x.Name == y.Name && x.Score-y.Score < 1e-4 && y.Score-x.Score < 1e-4 }) {
			t.Fatalf("%q: ReplaceAll %v, Replace %v", q.Query, ha, hb)
		}
	}
}

// allow is applied before the cut: a caller that may see only some of the
// matching tools still gets limit hits, all of them tools it may see.
func TestAllowBeforeCut(t *testing.T) {
	ix := New(nil)
	var docs []Doc
	for i := range 40 {
		docs = append(docs, Doc{Name: fmt.Sprintf("s__report_%02d", i), Server: "s", Description: "Create a report"})
	}
	// The best matches are hidden from the caller.
	for i := range 10 {
		docs = append(docs, Doc{Name: fmt.Sprintf("s__create_report_hidden_%d", i), Server: "s", Description: "Create a report, create a report"})
	}
	ix.ReplaceAll(docs)
	visible := func(name string) bool { return !strings.Contains(name, "hidden") && strings.HasSuffix(name, "1") }
	hits := ix.Search("create report", 3, visible)
	if len(hits) != 3 {
		t.Fatalf("%d hits, want 3: %v", len(hits), hits)
	}
	for _, h := range hits {
		if !visible(h.Name) {
			t.Errorf("hit %s is not visible to the caller", h.Name)
		}
	}
	if all := ix.Search("create report", 3, nil); !strings.Contains(all[0].Name, "hidden") {
		t.Errorf("without allow, the best match is %v", all[0])
	}
	if got := ix.Search("create report", 5, func(string) bool { return false }); len(got) != 0 {
		t.Errorf("nothing visible, got %v", got)
	}
}

// Synonyms add weight but do not outrank the word itself; abbreviations
// are expanded both ways.
func TestExpansions(t *testing.T) {
	ix := New(nil)
	ix.ReplaceAll([]Doc{
		{Name: "fs__delete_file", Server: "fs", Description: "Delete a file"},
		{Name: "fs__remove_file", Server: "fs", Description: "Remove a file"},
		{Name: "gh__create_pull_request", Server: "gh", Description: "Open new pull request"},
		{Name: "gh__get_repo", Server: "gh", Description: "Get a repo"},
		{Name: "k__scale", Server: "k", Description: "Scale a deployment on k8s"},
		{Name: "db__query", Server: "db", Description: "Run a read-only SQL query"},
	})
	if got := names(ix.Search("delete the file", 2, nil)); !slices.Equal(got, []string{"fs__delete_file", "fs__remove_file"}) {
		t.Errorf("delete file: %v", got)
	}
	if got := names(ix.Search("remove the file", 2, nil)); !slices.Equal(got, []string{"fs__remove_file", "fs__delete_file"}) {
		t.Errorf("remove file: %v", got)
	}
	if got := names(ix.Search("make a PR", 1, nil)); !slices.Equal(got, []string{"gh__create_pull_request"}) {
		t.Errorf("PR: %v", got)
	}
	if got := names(ix.Search("fetch repository", 1, nil)); !slices.Equal(got, []string{"gh__get_repo"}) {
		t.Errorf("repository: %v", got)
	}
	if got := names(ix.Search("kubernetes deployments", 1, nil)); !slices.Equal(got, []string{"k__scale"}) {
		t.Errorf("kubernetes: %v", got)
	}
	// The plain index has none of it.
	plain := New(&Options{Plain: true})
	plain.ReplaceAll([]Doc{{Name: "gh__create_pull_request", Server: "gh", Description: "Open new pull request"}})
	if got := plain.Search("make a PR", 1, nil); len(got) != 0 {
		t.Errorf("plain index expanded PR: %v", got)
	}
}

func TestSearchEdges(t *testing.T) {
	ix := New(nil)
	if got := ix.Search("anything", 5, nil); got != nil {
		t.Errorf("empty index: %v", got)
	}
	ix.ReplaceAll(loadCatalog(t))
	for _, q := range []string{"", "   ", "?!", "the of and", "\xff"} {
		if got := ix.Search(q, 5, nil); got != nil {
			t.Errorf("Search(%q) = %v, want nothing", q, got)
		}
	}
	if got := ix.Search("list", 0, nil); len(got) != DefaultLimit {
		t.Errorf("limit 0 gave %d hits, want %d", len(got), DefaultLimit)
	}
	if got := ix.Search("list", 1000, nil); len(got) == 0 || len(got) > ix.Len() {
		t.Errorf("limit 1000 gave %d hits", len(got))
	}
	hits := ix.Search("list", 50, nil)
	for i := 1; i < len(hits); i++ {
		if better(float32(hits[i].Score), hits[i].Name, float32(hits[i-1].Score), hits[i-1].Name) {
			t.Fatalf("hits out of order at %d: %v then %v", i, hits[i-1], hits[i])
		}
	}
}

// Searches run during Replace see the index before or after it, never a
// mix: each of two versions of a server's tools has a word of its own, and
// a search for both words finds the tools of one version only.
func TestConcurrentSearchReplace(t *testing.T) {
	ix := New(nil)
	ix.ReplaceAll(loadCatalog(t))
	version := func(v string) []Doc {
		var ds []Doc
		for i := range 50 {
			ds = append(ds, Doc{Name: fmt.Sprintf("moving__tool_%02d", i), Description: "Alpha beta " + v})
		}
		return ds
	}
	ix.Replace("moving", version("oldword"))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				hits := ix.Search("oldword newword", 100, nil)
				if len(hits) != 0 && len(hits) != 50 {
					errs <- fmt.Errorf("a search saw %d tools of the server, want 0 or 50", len(hits))
					return
				}
			}
		})
	}
	for i := range 200 {
		if i%2 == 0 {
			ix.Replace("moving", version("newword"))
		} else {
			ix.Replace("moving", version("oldword"))
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func FuzzSearch(f *testing.F) {
	for _, s := range []string{
		"open a ticket for the login bug", "", " ", "PR", "k8s pods", "listPullRequests", "東京 検索",
		"\x00\x01", "\xff\xfe", strings.Repeat("a ", 600), "what is it", "a-b_c.d/e", "ÉCOLE Ǆ",
		`scrape "https://example.com/a b" 'x'`, "email bob@example.com PROJ-12 3f9a1c7", "who is on call. Then 'unclosed",
		"how many rows are in orders", "how do I delete a branch", "get rid of the 'call Bob' todo", "how", "set up mongo",
	} {
		f.Add(s, 5)
	}
	ix := New(nil)
	ix.ReplaceAll(loadCatalog(f))
	known := map[string]bool{}
	for _, d := range loadCatalog(f) {
		known[d.Name] = true
	}
	f.Fuzz(func(t *testing.T, query string, limit int) {
		q, err := ParseQuery(query)
		hits := ix.Search(query, limit, func(n string) bool { return len(n)%2 == 0 })
		if err != nil {
			if hits != nil {
				t.Fatalf("a query that does not parse (%v) found %v", err, hits)
			}
			return
		}
		if !utf8.ValidString(query) {
			t.Fatal("invalid UTF-8 parsed")
		}
		ws := q.Words()
		if len(ws) == 0 || len(ws) > MaxQueryWords {
			t.Fatalf("%d words", len(ws))
		}
		for _, w := range ws {
			if w == "" || w != strings.ToLower(w) {
				t.Fatalf("word %q", w)
			}
		}
		// A value is one of the words; a pair joins two words of the request.
		for _, v := range q.Values() {
			if !slices.Contains(ws, v) {
				t.Fatalf("value %q is not a word of %q", v, ws)
			}
		}
		for _, p := range q.pairs {
			if p.a >= len(ws) || p.b >= len(ws) || p.a < -1 || p.b < -1 || p.a < 0 && p.b < 0 {
				t.Fatalf("pair %+v of %d words", p, len(ws))
			}
		}
		// The action is one of the four or none; a hint is a word.
		if q.action > actDelete {
			t.Fatalf("action %d", q.action)
		}
		for _, h := range q.hints {
			if h == "" || h != strings.ToLower(h) {
				t.Fatalf("hint %q", h)
			}
		}
		want := limit
		if want <= 0 {
			want = DefaultLimit
		}
		if len(hits) > want {
			t.Fatalf("%d hits, limit %d", len(hits), limit)
		}
		for i, h := range hits {
			if !known[h.Name] || len(h.Name)%2 != 0 || !(h.Score > 0) {
				t.Fatalf("hit %v", h)
			}
			if i > 0 && better(float32(h.Score), h.Name, float32(hits[i-1].Score), hits[i-1].Name) {
				t.Fatalf("out of order: %v", hits)
			}
		}
	})
}

func FuzzParamsFromSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"description":"x"},"b":{"properties":{"c":{}}}}}`,
		`{"properties":{"l":{"items":{"properties":{"m":{"description":"y"}}}}}}`,
		``, `null`, `[]`, `{"properties":[]}`, `{"properties":{"a":1}}`, `{"properties":{"a":{"description":7}}}`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ps, err := ParamsFromSchema(raw)
		if err != nil {
			if ps != nil {
				t.Fatalf("params %v with error %v", ps, err)
			}
			return
		}
		if len(ps) > 0 && !json.Valid(raw) {
			t.Fatalf("params from invalid JSON %q", raw)
		}
		for i, p := range ps {
			if i > 0 && ps[i-1].Name > p.Name {
				t.Fatalf("not sorted: %v", ps)
			}
		}
	})
}

// TestDomainSynonyms: a request in one API's words finds the tool
// described in another's, through the domain table alone (no word of the
// request is in the tool's text), and above a tool it does not describe.
func TestDomainSynonyms(t *testing.T) {
	ix := New(nil)
	ix.Replace("hub", []Doc{
		{Name: "hub__star_repository", Description: "Star a repository."},
		{Name: "hub__watch_repository", Description: "Watch a repository."},
		{Name: "hub__list_commits", Description: "List the commits of a branch."},
	})
	ix.Replace("pay", []Doc{
		{Name: "pay__create_refund", Description: "Refund a charge."},
		{Name: "pay__list_invoices", Description: "List invoices."},
		{Name: "pay__list_customers", Description: "List customers."},
	})
	ix.Replace("chat", []Doc{
		{Name: "chat__list_channels", Description: "List the channels of the workspace."},
		{Name: "chat__add_reaction", Description: "Add a reaction to a message."},
	})
	for query, want := range map[string]string{
		"favorite a codebase":         "hub__star_repository",
		"subscribe to that codebase":  "hub__watch_repository",
		"reimburse that transaction":  "pay__create_refund",
		"show bills":                  "pay__list_invoices",
		"which clients do we have":    "pay__list_customers",
		"what rooms exist":            "chat__list_channels",
		"put an emoji on the chat":    "chat__add_reaction",
		"show the revisions of a ref": "hub__list_commits",
	} {
		hits := ix.Search(query, 1, nil)
		if len(hits) == 0 || hits[0].Name != want {
			t.Errorf("%q: got %v, want %s first", query, hits, want)
		}
	}
}
