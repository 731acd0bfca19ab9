package toolsearch

import (
	"slices"
	"testing"
)

// TestQueryValues checks which words of a request are argument values.
func TestQueryValues(t *testing.T) {
	for _, c := range []struct {
		query  string
		values []string
		hints  []string
	}{
		{"scrape https://example.com/pricing as markdown", []string{"https", "example", "com", "pricing"}, []string{"url"}},
		{"fetch www.example.org", []string{"www", "example", "org"}, []string{"url"}},
		{"email alice@example.com the notes", []string{"alice", "example", "com"}, []string{"email"}},
		{"open ~/notes/todo.md", []string{"notes", "todo", "md"}, []string{"path"}},
		{"read ./cmd/main.go", []string{"cmd", "main", "go"}, []string{"path"}},
		{"search my notes for 'quarterly goals'", []string{"quarterly", "goals"}, nil},
		{`find "Jane Doe" in contacts`, []string{"jane", "doe"}, nil},
		{"find \u201cred shoes\u201d", []string{"red", "shoes"}, nil},
		{"show the last 100 lines", []string{"100"}, nil},
		{"pull postgres:16 now", []string{"postgres", "16"}, nil},
		{"post in #general", []string{"general"}, nil},
		{"write an llms.txt for the site", []string{"llms", "txt"}, []string{"file"}},                     // a name with an extension: a file's
		{"show what's inside notes.txt.", []string{"notes", "txt"}, []string{"file"}},                     // at a sentence's end
		{"open my note Projects/Gatehouse.md", []string{"projects", "gatehouse", "md"}, []string{"file"}}, // relative: no path's start
		{"list every URL on acme.io", []string{"acme", "io"}, []string{"url"}},                            // a domain: a URL's
		{"go to github.com in the browser", []string{"github", "com"}, []string{"url"}},
		{"what does the spec.replicas field mean", []string{"spec", "replicas"}, nil}, // no extension: a field's path
		{"upgrade to 1.2.3", []string{"1", "2", "3"}, nil},                            // a version
		{"play song.mp3", []string{"song", "mp3"}, []string{"file"}},
		{"if it's 9am in Berlin", []string{"9", "berlin"}, []string{"time"}}, // a time of day
		{"wake me at 10:30", []string{"10", "30"}, []string{"time"}},
		{"meet at 7.45pm", []string{"7", "45", "pm"}, []string{"time"}},
		{"weather in Berlin tomorrow", []string{"berlin"}, nil},
		{"Berlin weather", nil, nil},                                                 // capitalized at the start: not known to be a name
		{"open a PR for the fix", nil, nil},                                          // PR is a table word
		{"today's issues", nil, nil},                                                 // an apostrophe quotes nothing
		{"list my open issues. Then close one", nil, nil},                            // a sentence's first word
		{"find 'unterminated quote", nil, nil},                                       // an unclosed quote is no span
		{"deploy 'api' and deploy api", nil, nil},                                    // said once as a value, once not
		{"budget Q3 spreadsheet", []string{"q", "3"}, nil},                           // digits make a code
		{"move PROJ-12 to done", []string{"proj", "12"}, nil},                        // a key
		{"revert commit 3f9a1c7e", []string{"3", "f", "9", "1", "c", "7", "e"}, nil}, // a hash
		{"run the e2e-tests", []string{"e", "2", "tests"}, nil},                      // a key, too: a value
		{"select rate(http_requests_total{code=~\"5..\"}[5m])", []string{"rate", "http", "requests", "total", "code", "5"}, nil},
	} {
		q, err := ParseQuery(c.query)
		if err != nil {
			t.Fatalf("%q: %v", c.query, err)
		}
		if got := q.Values(); !slices.Equal(got, c.values) {
			t.Errorf("%q: values %q, want %q", c.query, got, c.values)
		}
		if !slices.Equal(q.hints, c.hints) {
			t.Errorf("%q: hints %q, want %q", c.query, q.hints, c.hints)
		}
	}
}

// TestClockTime checks which tokens are times of day.
func TestClockTime(t *testing.T) {
	for _, tok := range []string{"9am", "9AM", "12pm", "10:30", "07:05", "7.45pm", "17h", "9am,", "(10:30)", "11pm."} {
		if !clockTime(tok) {
			t.Errorf("%q: not a time of day", tok)
		}
	}
	for _, tok := range []string{"", "am", "pm", "h", "9", "100am", "10:3", "10:300", "10:ab", ":30", "9xm", "a9am", "9amx", "1.5", "10.30", "12.50", "v2", "10:30:00", "9 am"} {
		if clockTime(tok) {
			t.Errorf("%q: a time of day", tok)
		}
	}
}

// TestValuesWeighDown: a request's values do not outrank what it asks to
// do; a capitalized word that names a server keeps its weight.
func TestValuesWeighDown(t *testing.T) {
	ix := New(nil)
	ix.ReplaceAll([]Doc{
		{Name: "web__scrape_page", Server: "web", Description: "Scrape one page's content as markdown."},
		{Name: "maps__geocode", Server: "maps", Description: "Geocode an address, e.g. 'Berlin' or 'https://example.com/pricing'. Pricing of places, example pricing."},
		{Name: "github__list_issues", Server: "github", Description: "List issues of a repository."},
		{Name: "tracker__list_issues", Server: "tracker", Description: "List issues of a project."},
	})
	top := func(q string) string {
		hs := ix.Search(q, 1, nil)
		if len(hs) == 0 {
			return ""
		}
		return hs[0].Name
	}
	if got := top("scrape https://example.com/pricing"); got != "web__scrape_page" {
		t.Errorf("URL request: top %s, want web__scrape_page", got)
	}
	if got := top("list open issues on GitHub"); got != "github__list_issues" {
		t.Errorf("a server's name: top %s, want github__list_issues", got)
	}
}

// TestNameOverRepetition: a tool whose name says the request's action and
// object ranks above one whose long description repeats one of its words.
func TestNameOverRepetition(t *testing.T) {
	ix := New(nil)
	long := "Query the database. " + "This database tool works with every database: database tables, database rows, database views, database users. "
	ix.ReplaceAll([]Doc{
		{Name: "db__create_database", Server: "db", Description: "Creates a new database."},
		{Name: "db__run_query", Server: "db", Description: long + long},
		{Name: "db__drop_table", Server: "db", Description: "Drops a table."},
	})
	hs := ix.Search("create a database", 2, nil)
	if len(hs) == 0 || hs[0].Name != "db__create_database" {
		t.Fatalf("got %v, want db__create_database first", hs)
	}
}

// TestSplitConsistently: names split into the same words in every field
// and in requests.
func TestSplitConsistently(t *testing.T) {
	for in, want := range map[string][]string{
		"listPRs":              {"list", "prs"},
		"userIDs":              {"user", "ids"},
		"getURLs":              {"get", "urls"},
		"atlas-create-db-user": {"atlas", "create", "db", "user"},
		"obsidian.get_file":    {"obsidian", "get", "file"},
		"HTTPServer2":          {"http", "server", "2"},
		"v2beta":               {"v", "2", "beta"},
		"k8s_pods":             {"k8s", "pods"},
	} {
		if got := words(nil, in); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
	ix := New(nil)
	ix.ReplaceAll([]Doc{
		{Name: "m__collection-storage-size", Server: "m", Description: "Gets the size."},
		{Name: "m__list", Server: "m", Description: "Lists collectionStorageSize values."},
		{Name: "g__get_current_oncall_users", Server: "g", Description: "Users on call."},
	})
	if hs := ix.Search("collection storage size", 1, nil); len(hs) == 0 || hs[0].Name != "m__collection-storage-size" {
		t.Errorf("hyphenated name: %v", hs)
	}
	if hs := ix.Search("who is on call", 1, nil); len(hs) == 0 || hs[0].Name != "g__get_current_oncall_users" {
		t.Errorf("a word written as two: %v", hs)
	}
	// "go to" is "goto", which the tables know as navigating: the request
	// takes goto's expansions at their weights, for the word "go".
	q, err := ParseQuery("go to the docs")
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := ix.queryTerms(ix.cur.Load(), q)
	i := slices.IndexFunc(ts, func(w wterm) bool { return w.term == stem("navigate") })
	if i < 0 || ts[i].w != defaultTuning.domain || ts[i].words != 1 {
		t.Errorf("two words the tables know as one: %+v", ts)
	}
}
