package toolset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// ExampleToolset_Search finds the tools that fit a request among a
// server's, and hands a model the search tool: mcp__search_tools answers
// the same hits, with their full input schemas, to a model that calls it.
func ExampleToolset_Search() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "tracker", Version: "1.0.0"}, nil)
	for name, desc := range map[string]string{
		"create_issue": "Open a new issue in a project.",
		"close_issue":  "Close an issue that is done.",
		"list_members": "List the members of a project.",
	} {
		srv.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	httpSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer httpSrv.Close()

	ctx := context.Background()
	ts, err := toolset.Open(ctx, []toolset.Server{{Config: plugin.ServerConfig{
		Name: "tracker", Type: plugin.TransportStreamableHTTP, URL: httpSrv.URL,
	}}}, &toolset.Options{AllowedHosts: []string{"127.0.0.1"}, SearchTool: true})
	if err != nil {
		log.Fatal(err)
	}
	defer ts.Close()

	hits, err := ts.Search(ctx, "file a new ticket", 2)
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range hits {
		fmt.Printf("%s: %s\n", h.Name, h.Description)
	}

	// What a model gets when it calls the search tool: the same answer
	// as structured content (and as text).
	res, err := ts.Call(ctx, toolset.SearchToolName, map[string]any{"query": "who is on the project", "limit": 1}, toolset.CallInfo{})
	if err != nil {
		log.Fatal(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var answer struct {
		Tools []struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(b, &answer); err != nil {
		log.Fatal(err)
	}
	fmt.Println(answer.Tools[0].Name, answer.Tools[0].InputSchema)
	// Output:
	// tracker__create_issue: Open a new issue in a project.
	// tracker__close_issue: Close an issue that is done.
	// tracker__list_members map[type:object]
}
