package toolsearch

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"testing"
)

// TestRequestAction checks the action a request asks for: a verb in any
// form, a two-word verb, a question, a question asking how to do
// something, and the words of values, which say none.
func TestRequestAction(t *testing.T) {
	for _, c := range []struct {
		query string
		want  action
	}{
		{"remove the old cronjob", actDelete},
		{"deleted branches", actDelete},
		{"please list the open issues", actRead},
		{"creating a ticket", actCreate},
		{"rename the channel", actUpdate},
		{"which labels do I have in my mailbox", actRead},
		{"what columns does the invoices table have", actRead},
		{"how many rows are in orders", actRead},
		{"which notes did I edit yesterday", actRead}, // a question, whatever its verb
		{"how do I delete a branch", actDelete},       // asks how to: its verb says
		{"how to add a webhook", actCreate},
		{"get rid of the 'call Bob' todo", actDelete}, // "get rid of" is no read
		{"set up a discount code", actCreate},         // "set up" is no update
		{"set the due date", actUpdate},
		{"look up the weather", actRead},
		{"open a ticket", noAction}, // "open" creates a ticket and reads a file
		{"start the container", noAction},
		{"navigate to the docs", noAction},
		{"push 'delete me' to the queue", noAction}, // a quoted value's verb is not the request's
		{"translate https://example.com/delete", noAction},
	} {
		q, err := ParseQuery(c.query)
		if err != nil {
			t.Fatalf("%q: %v", c.query, err)
		}
		if q.action != c.want {
			t.Errorf("%q: action %d, want %d", c.query, q.action, c.want)
		}
	}
}

// TestNameAction checks the action of a tool's name: its first word that
// has one, after splitting as the index does.
func TestNameAction(t *testing.T) {
	for _, c := range []struct {
		name string
		want action
	}{
		{"jira_create_issue", actCreate},
		{"listPullRequests", actRead},
		{"obsidian_get_file_contents", actRead},
		{"delete-entities", actDelete},
		{"kubectl_scale", noAction},
		{"browser_navigate", noAction},
		{"update_many", actUpdate},
		{"add_observations", actCreate},
		{"describe_table", actRead},
		{"", noAction},
	} {
		if got := nameAction(words(nil, c.name)); got != c.want {
			t.Errorf("%s: action %d, want %d", c.name, got, c.want)
		}
	}
}

// TestActionConflict: a request that asks to read ranks a tool that reads
// above tools that create or delete, though their text has more of the
// request's words; a request that asks to delete ranks the deleting tool
// first; a request without a known action ranks as before.
func TestActionConflict(t *testing.T) {
	docs := []Doc{
		{Name: "db__create_table", Server: "db", Description: "Create a table with the given columns. Each column has a name and a type; columns may be nullable."},
		{Name: "db__delete_table", Server: "db", Description: "Delete a table and its columns."},
		{Name: "db__describe_table", Server: "db", Description: "Describe a table's columns."},
		{Name: "db__add_column", Server: "db", Description: "Add a column to a table."},
	}
	ix := New(nil)
	ix.ReplaceAll(docs)
	flat := defaultTuning
	flat.conflict = 1
	off := newIndex(nil, flat)
	off.ReplaceAll(docs)
	top := func(ix *Index, q string) string {
		hits := ix.Search(q, 4, nil)
		if len(hits) == 0 {
			t.Fatalf("%q: no hits", q)
		}
		return hits[0].Name
	}
	if got := top(off, "what columns does the invoices table have"); got == "db__describe_table" {
		t.Fatalf("without the action, describe_table already wins: the test shows nothing")
	}
	for q, want := range map[string]string{
		"what columns does the invoices table have": "db__describe_table",
		"remove the columns table":                  "db__delete_table",
		"how do I add a column":                     "db__add_column",
	} {
		if got := top(ix, q); got != want {
			t.Errorf("%q: first %s, want %s (%v)", q, got, want, ix.Search(q, 4, nil))
		}
	}
	// No action: the factor applies to nothing.
	q := "columns of the invoices table"
	a, b := ix.Search(q, 4, nil), off.Search(q, 4, nil)
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("%q: %v with the action factor, %v without", q, a, b)
			break
		}
	}
}

// TestQuestionHints checks the words a question asks for without saying
// them, and that they rank a tool that says them first.
func TestQuestionHints(t *testing.T) {
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"how many rows are in orders", []string{"count", "number"}},
		{"how big is the dump and when was it modified", []string{"size", "date", "time"}},
		{"who opened this issue", []string{"user", "owner", "author"}},
		{"list the rows", nil},
		{"how 'many' rows", nil}, // a quoted value asks nothing
	} {
		q, err := ParseQuery(c.query)
		if err != nil {
			t.Fatalf("%q: %v", c.query, err)
		}
		if !slices.Equal(q.hints, c.want) {
			t.Errorf("%q: hints %q, want %q", c.query, q.hints, c.want)
		}
	}
	ix := New(nil)
	ix.ReplaceAll([]Doc{
		{Name: "db__find", Server: "db", Description: "Find documents in a collection."},
		{Name: "db__count", Server: "db", Description: "Count the documents of a collection matching a filter."},
		{Name: "db__insert_many", Server: "db", Description: "Insert documents into a collection. Documents are JSON objects; many documents at once."},
	})
	if hits := ix.Search("how many documents are in the users collection", 3, nil); len(hits) == 0 || hits[0].Name != "db__count" {
		t.Errorf("how many documents: %v, want db__count first", hits)
	}
}

// TestServerShortName: a word of a request that starts a server's name
// ("mongo") finds that server's tools as its full name would; a shorter
// word does not (three letters start too many names), nor one that is
// half of the name or less ("post" for postgres).
func TestServerShortName(t *testing.T) {
	ix := New(nil)
	ix.ReplaceAll([]Doc{
		{Name: "mongodb__update-many", Server: "mongodb", Description: "Update many documents."},
		{Name: "airtable__update_records", Server: "airtable", Description: "Update records."},
		{Name: "linear__update_issue", Server: "linear", Description: "Update an issue."},
	})
	hits := ix.Search("update every inactive account in mongo", 3, nil)
	if len(hits) == 0 || hits[0].Name != "mongodb__update-many" {
		t.Errorf("in mongo: %v, want mongodb__update-many first", hits)
	}
	ix.Replace("postgres", []Doc{{Name: "postgres__query", Description: "Run a read-only SQL query."}})
	for _, h := range ix.Search("post a message", 4, nil) {
		if h.Name == "postgres__query" {
			t.Errorf("post a message: %v: four letters of eight stood for postgres", h)
		}
	}
	hits = ix.Search("update every inactive account in air", 3, nil)
	if len(hits) == 3 && hits[0].Score != hits[1].Score && hits[0].Name == "airtable__update_records" {
		t.Errorf("in air: %v: a three-letter word stood for airtable", hits)
	}
}

// TestServerVocabulary: a request's words that a server's tools say
// together ("pods", "namespace") rank that server's tools above another
// server's tool that says one of them in its name; with the server's match
// not counted, the other server's tool is first.
func TestServerVocabulary(t *testing.T) {
	docs := []Doc{
		{Name: "k8s__get", Server: "k8s", Description: "Get or list resources by type and name."},
		{Name: "k8s__exec_in_pod", Server: "k8s", Description: "Run a command in a pod's container, in a namespace."},
		{Name: "k8s__pod_logs", Server: "k8s", Description: "Read the logs of a pod in a namespace."},
		{Name: "k8s__port_forward", Server: "k8s", Description: "Forward a local port to a pod."},
		{Name: "kv__namespaces_list", Server: "kv", Description: "List the key-value namespaces of an account."},
		{Name: "kv__put", Server: "kv", Description: "Put a value under a key."},
	}
	q := "list the pods in the staging namespace"
	off := defaultTuning
	off.server = 0
	plain := newIndex(nil, off)
	plain.ReplaceAll(docs)
	if hits := plain.Search(q, 2, nil); len(hits) == 0 || hits[0].Name != "kv__namespaces_list" {
		t.Fatalf("without the server's match: %v, want kv__namespaces_list first (else the test shows nothing)", hits)
	}
	ix := New(nil)
	ix.ReplaceAll(docs)
	if hits := ix.Search(q, 6, nil); len(hits) == 0 || serverOf(hits[0].Name) != "k8s" {
		t.Errorf("%q: %v, want a k8s tool first", q, hits)
	}
}

// TestWritesConflictHalf checks that a tool that updates, for a request
// that creates (or the other way), keeps the square root of the conflict
// factor (half its score at the default quarter), and a tool of another
// action the factor itself: the two tools say the same words.
func TestWritesConflictHalf(t *testing.T) {
	if !bothWrite(actCreate, actUpdate) || !bothWrite(actUpdate, actCreate) || bothWrite(actCreate, actDelete) || bothWrite(actRead, actUpdate) || bothWrite(actCreate, actCreate) {
		t.Fatal("bothWrite: want true for a create and an update only")
	}
	ix := New(nil)
	ix.ReplaceAll([]Doc{
		{Name: "notes__update_note", Server: "notes", Description: "Note text."},
		{Name: "notes__delete_note", Server: "notes", Description: "Note text."},
	})
	hits := ix.Search("add a line to the note", 2, nil)
	if len(hits) != 2 || hits[0].Name != "notes__update_note" {
		t.Fatalf("hits %v: want update_note first", hits)
	}
	if r := hits[0].Score / hits[1].Score; math.Abs(r-2) > 1e-4 {
		t.Errorf("update_note / delete_note = %.4f, want 2 (0.5 against 0.25)", r)
	}
}

// TestCoordinationByIDF checks that coordination counts each word of the
// request by its IDF: a tool that says the request's one rare word ranks
// above tools that say its two common ones, which a count of words would
// rank first.
func TestCoordinationByIDF(t *testing.T) {
	docs := []Doc{{Name: "ops__list_incidents", Server: "ops", Description: "List incidents."}}
	for i := range 6 {
		docs = append(docs, Doc{Name: fmt.Sprintf("ops__open_now_%c", 'a'+i), Server: "ops", Description: "Open it now."})
	}
	for i := range 13 {
		docs = append(docs, Doc{Name: fmt.Sprintf("ops__other_%c", 'a'+i), Server: "ops", Description: "Something else."})
	}
	ix := New(nil)
	ix.ReplaceAll(docs)
	q := "any open incidents now"
	hits := ix.Search(q, 3, nil)
	if len(hits) == 0 || hits[0].Name != "ops__list_incidents" {
		t.Errorf("%q: %v, want list_incidents first", q, hits)
	}
	// By a count of words (the share of words matched), the two common
	// words would win: the test shows what the IDF does.
	s := ix.cur.Load()
	pq, _ := ParseQuery(q)
	_, counted := ix.queryTerms(s, pq)
	if bits.OnesCount32(counted) != 3 {
		t.Fatalf("%q: %d words counted, want 3", q, bits.OnesCount32(counted))
	}
}
