package toolsearch_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/toolsearch"
)

func Example() {
	params, err := toolsearch.ParamsFromSchema(json.RawMessage(`{"type": "object", "properties": {
		"base": {"type": "string", "description": "Branch to merge into"},
		"head": {"type": "string", "description": "Branch containing changes"}}}`))
	if err != nil {
		panic(err)
	}
	ix := toolsearch.New(nil)
	ix.Replace("github", []toolsearch.Doc{
		{Name: "github__create_pull_request", Title: "Open new pull request", Params: params},
		{Name: "github__list_issues", Title: "List issues"},
		{Name: "github__delete_file", Title: "Delete file"},
	})
	ix.Replace("slack", []toolsearch.Doc{
		{Name: "slack__slack_post_message", Description: "Post a new message to a Slack channel"},
	})
	// The caller may not see slack's tools.
	allow := func(name string) bool { return !strings.HasPrefix(name, "slack__") }
	for _, h := range ix.Search("make a PR from my branch", 3, allow) {
		fmt.Println(h.Name)
	}
	fmt.Println(len(ix.Search("send a message", 3, allow)))
	// Output:
	// github__create_pull_request
	// 0
}
