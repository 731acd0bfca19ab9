package toolsearch

import (
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
