package toolsearch

import "slices"

// action is the kind of thing a request asks for or a tool does, as far
// as its verb says: to read, to create, to change or to delete. Most tool
// names start with one of these verbs (list_, get_, create_, update_,
// delete_); a request says one ("remove the old cronjob") or asks a
// question ("which labels do I have"), which is a read. A tool whose
// action is known and differs from the request's ranks lower: a request
// for the columns of a table does not want create_table, however many of
// its words create_table's text has.
type action uint8

const (
	noAction action = iota // no verb the table knows, or one of two kinds ("open", "start")
	actRead
	actCreate
	actUpdate
	actDelete
)

// actionVerbs are the verbs of each action. A verb of two kinds ("open"
// creates a ticket and reads a file, "write" creates and updates, "start"
// creates and runs) is in none.
var actionVerbs = map[action][]string{
	actRead: {"get", "fetch", "read", "retrieve", "view", "show", "see", "list", "enumerate", "display", "browse",
		"describe", "inspect", "explain", "search", "find", "query", "lookup", "locate", "count", "check", "print"},
	actCreate: {"create", "add", "new", "make", "insert", "generate", "register"},
	actUpdate: {"update", "edit", "modify", "change", "set", "patch", "alter", "adjust", "rename"},
	actDelete: {"delete", "remove", "destroy", "drop", "erase", "purge", "uninstall", "forget"},
}

// actionPhrases are two-word verbs whose first word alone says another
// action ("get rid of" is no read, "set up" no update), keyed by both
// words.
var actionPhrases = map[[2]string]action{
	{"get", "rid"}:    actDelete,
	{"throw", "away"}: actDelete,
	{"clean", "up"}:   actDelete,
	{"set", "up"}:     actCreate,
	{"look", "up"}:    actRead,
	{"find", "out"}:   actRead,
	{"look", "at"}:    actRead,
}

// interrogatives start a question, which asks to read ("which labels do
// I have", "how many rows are in orders"), unless it asks how to do
// something ("how do I delete a branch"): see questionAction.
var interrogatives = setOf("what", "whats", "which", "who", "whom", "whose", "where", "when", "why", "how")

// actionStems maps a verb's stem (and the verb itself) to its action.
var actionStems = func() map[string]action {
	m := map[string]action{}
	for a, vs := range actionVerbs {
		for _, v := range vs {
			m[v] = a
			m[stem(v)] = a
		}
	}
	return m
}()

// actionOf returns the action of a word (any form the stemmer folds:
// "deleted", "lists"), or noAction.
func actionOf(w string) action {
	if a, ok := actionStems[w]; ok {
		return a
	}
	return actionStems[stem(w)]
}

// nameAction returns the action of a tool's name: that of its first word
// that has one ("jira_create_issue": create; "browser_navigate": none).
func nameAction(words []string) action {
	for _, w := range words {
		if a := actionOf(w); a != noAction {
			return a
		}
	}
	return noAction
}

// requestAction returns the action of a request, from all its words in
// order (common words included): a question is a read, unless it asks
// how to do something ("how do I", "how can we"), whose verb says; else
// the first two-word verb or verb that has an action.
func requestAction(ws []string) action {
	if len(ws) > 0 {
		if _, ok := interrogatives[ws[0]]; ok && !howTo(ws[1:]) {
			return actRead
		}
	}
	for i, w := range ws {
		if i+1 < len(ws) {
			if a, ok := actionPhrases[[2]string{w, ws[i+1]}]; ok {
				return a
			}
		}
		if a := actionOf(w); a != noAction {
			return a
		}
	}
	return noAction
}

// howTo says whether a question's next words ask how to do something:
// "do I", "can we", "should you", ...
func howTo(ws []string) bool {
	if len(ws) < 2 {
		return false
	}
	switch ws[0] {
	case "do", "does", "can", "could", "should", "would", "to":
	default:
		return false
	}
	switch ws[1] {
	case "i", "we", "you", "one":
		return true
	}
	return ws[0] == "to"
}

// questionWords are the words a question asks for without saying them:
// "how many" asks for a count, "how big" a size, "when" a date. They are
// added to a request as hints (Query.hints), at a value's hint weight and
// outside coordination: they help a tool that says them, and cost nothing
// to one that does not.
var questionWords = map[[2]string][]string{
	{"how", "many"}:  {"count", "number"},
	{"how", "much"}:  {"amount", "total", "cost"},
	{"how", "long"}:  {"duration", "time"},
	{"how", "big"}:   {"size"},
	{"how", "large"}: {"size"},
	{"how", "far"}:   {"distance"},
	{"how", "old"}:   {"age", "created"},
	{"how", "high"}:  {"height"},
	{"how", "often"}: {"frequency", "interval"},
	{"when", ""}:     {"date", "time"},
	{"where", ""}:    {"location", "path"},
	{"who", ""}:      {"user", "owner", "author"},
}

// questionHints returns the words a request's questions ask for (see
// questionWords), from its words in order, common ones included.
func questionHints(ws []string) []string {
	var out []string
	for i, w := range ws {
		hs := questionWords[[2]string{w, ""}]
		if i+1 < len(ws) {
			if two, ok := questionWords[[2]string{w, ws[i+1]}]; ok {
				hs = two
			}
		}
		for _, h := range hs {
			if !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	return out
}
