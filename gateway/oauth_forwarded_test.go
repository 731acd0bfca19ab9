package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
)

// forwardingUpstream is a real go-sdk server over streamable HTTP on
// 127.0.0.1 with one tool, one prompt, one resource and one resource
// template, all named after it.
func forwardingUpstream(t *testing.T, name string) string {
	t.Helper()
	up := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	mcp.AddTool(up, &mcp.Tool{Name: "t", Description: "The tool of " + name + "."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
	})
	up.AddPrompt(&mcp.Prompt{Name: name + "-prompt", Description: "The prompt of " + name + "."}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "prompt of " + name}}}}, nil
	})
	uri := name + "://doc"
	up.AddResource(&mcp.Resource{URI: uri, Name: name + "-doc"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "doc of " + name}}}, nil
	})
	up.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: name + "://page/{id}", Name: name + "-page"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "page of " + name}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// seen is what one caller's session shows of the forwarded features.
type seen struct {
	tools, prompts, resources, templates []string
	gets, reads                          []string // servers whose prompt / resource the caller could fetch
}

func seenBy(t *testing.T, url, token string) seen {
	t.Helper()
	cs, err := connectAs(url, token)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var s seen
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range lt.Tools {
		s.tools = append(s.tools, x.Name)
	}
	lp, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range lp.Prompts {
		s.prompts = append(s.prompts, x.Name)
	}
	lr, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range lr.Resources {
		s.resources = append(s.resources, x.URI)
	}
	lrt, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range lrt.ResourceTemplates {
		s.templates = append(s.templates, x.URITemplate)
	}
	// Fetch each server's prompt, document and page by name and URI,
	// whether listed or not: what is hidden must not answer.
	for _, srv := range []string{"a", "b"} {
		if r, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: srv + "__" + srv + "-prompt"}); err == nil && len(r.Messages) > 0 {
			s.gets = append(s.gets, srv)
		}
		doc, derr := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: srv + "://doc"})
		page, perr := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: srv + "://page/7"})
		if (derr == nil) != (perr == nil) {
			t.Errorf("server %s: the document read %v but the page %v", srv, derr, perr)
		}
		if derr == nil && perr == nil && len(doc.Contents) == 1 && len(page.Contents) == 1 {
			s.reads = append(s.reads, srv)
		}
	}
	for _, l := range [][]string{s.tools, s.prompts, s.resources, s.templates} {
		slices.Sort(l)
	}
	return s
}

// TestOAuthScopesGovernForwardedFeatures: the prompts, resources and
// resource templates of a server are visible to a caller exactly when one
// of that server's tools is — with the tool scopes of an OAuth access token
// from a real authorization server as with those of a static token. A
// caller whose scopes reach only server a sees, gets and reads nothing of
// b's, even by name; a token with no tool scope sees both.
func TestOAuthScopesGovernForwardedFeatures(t *testing.T) {
	aURL, bURL := forwardingUpstream(t, "a"), forwardingUpstream(t, "b")
	as := authserver.Start(t, authserver.Options{Clients: []authserver.Client{{ID: "agent", Secret: "s3cret", Subject: "agent-7"}}})
	gs := httptest.NewUnstartedServer(nil)
	resource := "http://" + gs.Listener.Addr().String() + "/mcp"
	dir := t.TempDir()
	sum := sha256.Sum256([]byte("static-b-token"))
	serveAt(t, gs, dir, fmt.Sprintf(`listen: 127.0.0.1:0
store: sqlite:%s
drift: {recheck: 0}
auth:
  resource: %s
  oauth: {issuer: %q, requiredScopes: [mcp]}
  tokens:
    - {sha256: %s, subject: static-b, scopes: ["tool:b__t"]}
servers:
  a: {type: streamable-http, url: %q}
  b: {type: streamable-http, url: %q}
`, filepath.Join(dir, "g.db"), resource, as.Issuer(), hex.EncodeToString(sum[:]), aURL+"/mcp", bURL+"/mcp"), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	onlyA, err := as.Token(ctx, "agent", "s3cret", resource, "mcp", "tool:a__t")
	if err != nil {
		t.Fatal(err)
	}
	every, err := as.Token(ctx, "agent", "s3cret", resource, "mcp")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		who, token string
		servers    []string
	}{
		{"an OAuth token scoped to a", onlyA, []string{"a"}},
		{"an OAuth token with no tool scope", every, []string{"a", "b"}},
		{"a static token scoped to b", "static-b-token", []string{"b"}},
	} {
		got := seenBy(t, resource, c.token)
		var want seen
		for _, srv := range c.servers {
			want.tools = append(want.tools, srv+"__t")
			want.prompts = append(want.prompts, srv+"__"+srv+"-prompt") // prefixed like tools
			want.resources = append(want.resources, srv+"://doc")
			want.templates = append(want.templates, srv+"://page/{id}")
			want.gets = append(want.gets, srv)
			want.reads = append(want.reads, srv)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.who, got, want)
		}
	}
}
