package published

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
)

// server is an in-memory go-sdk server; refuse fails the methods it names,
// and seen records every method it was asked.
type server struct {
	srv    *mcp.Server
	mu     sync.Mutex
	seen   []string
	refuse map[string]bool
}

func newServer(opts *mcp.ServerOptions) *server {
	s := &server{srv: mcp.NewServer(&mcp.Implementation{Name: "fx", Version: "1"}, opts), refuse: map[string]bool{}}
	s.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			s.mu.Lock()
			s.seen = append(s.seen, method)
			refused := s.refuse[method]
			s.mu.Unlock()
			if refused {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "refused " + method}
			}
			return next(ctx, method, req)
		}
	})
	return s
}

func (s *server) setRefused(method string, refused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse[method] = refused
}

func (s *server) methods() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.seen, " ")
}

func (s *server) session(t *testing.T) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func addTool(s *mcp.Server, name string) {
	s.AddTool(&mcp.Tool{Name: name, Description: "Tool " + name + ".", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
}

func addItems(s *mcp.Server) {
	for _, name := range []string{"greet", "summarize"} {
		s.AddPrompt(&mcp.Prompt{Name: name, Description: "Prompt " + name + "."},
			func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{}, nil
			})
	}
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///{path}", Name: "files"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
}

// Every page of tools, the instructions' fingerprint, the prompts and the
// templates.
func TestList(t *testing.T) {
	s := newServer(&mcp.ServerOptions{PageSize: 2, Instructions: "Be helpful."})
	for i := range 5 {
		addTool(s.srv, fmt.Sprintf("t%d", i))
	}
	addItems(s.srv)
	l, err := List(context.Background(), s.session(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range l.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, " ") != "t0 t1 t2 t3 t4" || l.Tools[0].Description != "Tool t0." {
		t.Fatalf("tools %v", names)
	}
	if l.Instructions != pin.InstructionsFingerprint("Be helpful.") {
		t.Fatalf("instructions %q", l.Instructions)
	}
	if !l.PromptsListed || len(l.Prompts) != 2 || l.Prompts[0].Name != "greet" ||
		!l.TemplatesListed || len(l.Templates) != 1 || l.Templates[0].URITemplate != "file:///{path}" || l.Errs != nil {
		t.Fatalf("listing %+v", l)
	}
}

// A server without prompts or resources is not asked for them: both kinds
// are listed, and empty.
func TestListWithoutCapabilities(t *testing.T) {
	s := newServer(nil)
	addTool(s.srv, "echo")
	l, err := List(context.Background(), s.session(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Tools) != 1 || !l.PromptsListed || !l.TemplatesListed || l.Prompts != nil || l.Templates != nil || l.Errs != nil {
		t.Fatalf("listing %+v", l)
	}
	if l.Instructions != pin.InstructionsFingerprint("") {
		t.Fatalf("instructions %q", l.Instructions)
	}
	if m := s.methods(); strings.Contains(m, "prompts/list") || strings.Contains(m, "resources/templates/list") {
		t.Fatalf("asked %s", m)
	}
}

// A kind whose listing fails is unlisted (unknown, not empty) and its
// error returned; the other kind and the tools are listed. A failed tools
// listing fails the listing.
func TestListFailures(t *testing.T) {
	s := newServer(nil)
	addTool(s.srv, "echo")
	addItems(s.srv)
	s.setRefused("prompts/list", true)
	l, err := List(context.Background(), s.session(t))
	if err != nil {
		t.Fatal(err)
	}
	if l.PromptsListed || l.Prompts != nil || !l.TemplatesListed || len(l.Templates) != 1 || len(l.Tools) != 1 {
		t.Fatalf("listing %+v", l)
	}
	if len(l.Errs) != 1 || !strings.HasPrefix(l.Errs[0].Error(), "listing prompts: ") {
		t.Fatalf("errors %v", l.Errs)
	}

	s.setRefused("prompts/list", false)
	s.setRefused("resources/templates/list", true)
	l, err = List(context.Background(), s.session(t))
	if err != nil || !l.PromptsListed || len(l.Prompts) != 2 || l.TemplatesListed || l.Templates != nil ||
		len(l.Errs) != 1 || !strings.HasPrefix(l.Errs[0].Error(), "listing resource templates: ") {
		t.Fatalf("listing %+v, %v", l, err)
	}

	s.setRefused("tools/list", true)
	_, err = List(context.Background(), s.session(t))
	var je *jsonrpc.Error
	if err == nil || !strings.HasPrefix(err.Error(), "listing tools: ") || !errors.As(err, &je) {
		t.Fatalf("tools refused: %v", err)
	}
}
