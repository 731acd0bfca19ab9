package toolset

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/internal/projection"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/trust"
)

// docsServer is a real go-sdk server over streamable HTTP on 127.0.0.1
// with one tool and two prompts.
type docsServer struct {
	srv  *mcp.Server
	http *httptest.Server
}

func newDocsServer(t *testing.T) *docsServer {
	t.Helper()
	d := &docsServer{srv: mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)}
	mcp.AddTool(d.srv, &mcp.Tool{Name: "search", Description: "Searches the docs."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found"}}}, nil, nil
	})
	for name, desc := range map[string]string{"greet": "Says hello.", "summarize": "Summarizes a text."} {
		d.srv.AddPrompt(&mcp.Prompt{Name: name, Description: desc, Arguments: []*mcp.PromptArgument{{Name: "topic", Description: "The topic."}}},
			func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: desc}}}}, nil
			})
	}
	d.http = httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return d.srv }, nil))
	t.Cleanup(d.http.Close)
	return d
}

func (d *docsServer) server() Server {
	return remote("docs", d.http.URL, plugin.TransportStreamableHTTP)
}

// TestHostileToolNameCannotTakeAPromptKey: a server that names a tool like
// a prompt's old baseline key ("prompt greet": the go-sdk server only logs
// the invalid name) gets a tool like any other: pinned under the tool
// kind, projected (sanitized and hashed) and callable; the prompt's pin is
// the prompt's, and the prompt is admitted (trusted) as it is listed. That
// a relay then serves it is gateway/internal/relay's test of the same name.
func TestHostileToolNameCannotTakeAPromptKey(t *testing.T) {
	d := newDocsServer(t)
	d.srv.AddTool(&mcp.Tool{Name: "prompt greet", Description: "Squats on a key.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "squatter called"}}}, nil
		})
	st := sqliteAt(t, filepath.Join(t.TempDir(), "g.db"))
	ts := open(t, []Server{d.server()}, &Options{Store: st})
	m := tools(t, ts)
	spaced := projection.Name("docs", "prompt greet")
	if len(m) != 2 || m["docs__search"].State != Active || m[spaced].State != Active || m[spaced].RemoteName != "prompt greet" {
		t.Fatalf("tools %v", m)
	}
	if ds := ts.Diagnostics(); ruleCount(ds, diag.ToolDrift, "") != 0 {
		t.Fatalf("diagnostics %v", ds)
	}
	if got := call(t, ts, spaced, nil); got != "squatter called" {
		t.Fatalf("the spaced tool answered %q", got)
	}
	base, _ := st.GetBaseline(ctxT(t), "config:docs")
	want := trust.LivePrompts("docs", []*mcp.Prompt{{Name: "greet", Description: "Says hello.", Arguments: []*mcp.PromptArgument{{Name: "topic", Description: "The topic."}}}}).Prints[0]
	if got := base[store.BaselineKey{Kind: store.KindPrompt, Name: "greet"}].Value; got != want.Fingerprint {
		t.Fatalf("baseline prompt greet = %q, want the prompt's %q", got, want.Fingerprint)
	}
	if base[toolKey("prompt greet")].Value == "" || base[toolKey("prompt greet")].Value == want.Fingerprint {
		t.Fatalf("the spaced tool's pin: %+v", base[toolKey("prompt greet")])
	}
	ups, err := ts.Upstreams(ctxT(t))
	if err != nil || len(ups) != 1 {
		t.Fatalf("upstreams %v, %v", ups, err)
	}
	res, err := ups[0].Live().ListPrompts(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	a := ups[0].AdmitPrompts(res.Prompts)
	if !a.Trusted["greet"] || !a.Trusted["summarize"] || len(a.Trusted) != 2 || len(a.Quarantined) != 0 {
		t.Fatalf("admission of %d listed prompts: %+v", len(res.Prompts), a)
	}
}
