package metatool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/gatehouse-dev/gatehouse/internal/toolsearch"
)

// SearchArgs are a search call's arguments, read by ParseSearchArgs.
type SearchArgs struct {
	// Query is the query as sent.
	Query string
	// Parsed is the query as the index reads it.
	Parsed *toolsearch.Query
	// Limit is the number of hits asked for, from 1 to MaxLimit.
	Limit int
}

// ArgsError is why a meta-tool call's arguments were refused. Its message is the
// tool error the caller gets; Err is toolsearch's error for a query with
// nothing to search (ErrEmptyQuery, ErrNoWords), if that is why.
type ArgsError struct {
	// Field is the argument at fault ("query", "limit"), or "" for the
	// arguments as a whole.
	Field string
	// Msg says what is wrong and what to send.
	Msg string
	// Err is the underlying error, if any.
	Err error
}

// Error returns the message a caller reads.
func (e *ArgsError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// Unwrap returns Err.
func (e *ArgsError) Unwrap() error { return e.Err }

// ParseSearchArgs reads a search call's arguments: a JSON object with a string "query"
// and an optional whole-number "limit" from 1 to MaxLimit (absent or null:
// defaultLimit). Other fields are ignored. Every mistake is an *ArgsError.
func ParseSearchArgs(raw json.RawMessage, defaultLimit int) (SearchArgs, error) {
	var in map[string]json.RawMessage
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &in) != nil {
		return SearchArgs{}, &ArgsError{Msg: `the arguments must be a JSON object such as {"query": "open a pull request"}`}
	}
	q, ok := in["query"]
	if !ok || string(bytes.TrimSpace(q)) == "null" {
		return SearchArgs{}, &ArgsError{Field: "query", Msg: `is required: say in a few words what the tool should do, e.g. {"query": "open a pull request"}`}
	}
	var a SearchArgs
	if json.Unmarshal(q, &a.Query) != nil {
		return SearchArgs{}, &ArgsError{Field: "query", Msg: "must be a string of words, such as \"open a pull request\""}
	}
	parsed, err := toolsearch.ParseQuery(a.Query)
	if err != nil {
		return SearchArgs{}, &ArgsError{Field: "query", Msg: queryMsg(err), Err: err}
	}
	a.Parsed, a.Limit = parsed, defaultLimit
	if l, ok := in["limit"]; ok && string(bytes.TrimSpace(l)) != "null" {
		var f float64
		if json.Unmarshal(l, &f) != nil || f != math.Trunc(f) || f < 1 || f > MaxLimit {
			return SearchArgs{}, &ArgsError{Field: "limit", Msg: fmt.Sprintf("must be a whole number from 1 to %d (or left out for %d)", MaxLimit, defaultLimit)}
		}
		a.Limit = int(f)
	}
	return a, nil
}

// queryMsg says what is wrong with a query toolsearch refused.
func queryMsg(err error) string {
	switch err {
	case toolsearch.ErrEmptyQuery:
		return "is empty: say in a few words what the tool should do"
	case toolsearch.ErrNoWords:
		return "has no words to search (only punctuation, symbols or common words): name the action or the thing, such as \"create issue\""
	}
	return err.Error()
}
