package relay

//lint:file-ignore SA1019 the callers here advertise sampling (deprecated by SEP-2577, still in 2025-11-25) to get upstream sessions of their own.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// starts counts the lines of a fixture's -starts file: the processes
// started.
func starts(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// TestUpstreamSessionsCapped: callers that each would get a stdio process
// of their own (a logging level, sampling) get at most UpstreamPerSubject
// per subject and UpstreamPerServer in all; the others share the server's
// process, their calls still answered and their logging/setLevel refused
// with CodeUpstreamCap; a caller's ending frees its slot, which the next
// caller takes.
func TestUpstreamSessionsCapped(t *testing.T) {
	file := filepath.Join(t.TempDir(), "starts")
	var mu sync.Mutex
	capped := map[Capped]int{}
	r := openRelay(t, []toolset.Server{stdio("s", "-tools", "echo", "-starts", file)}, nil, &Options{
		UpstreamPerServer: 3, UpstreamPerSubject: 2,
		// The subject is the client's name.
		Subject: func(_ context.Context, req mcp.Request, _ bool) (string, bool) {
			return req.GetSession().(*mcp.ServerSession).InitializeParams().ClientInfo.Name, true
		},
		Capped: func(server string, why Capped) {
			mu.Lock()
			capped[why]++
			mu.Unlock()
		},
	})
	ctx := ctxT(t)
	if _, err := r.Toolset().Tools(ctx); err != nil {
		t.Fatal(err)
	}
	_, url := front(t, r, false)
	if n := starts(t, file); n != 1 {
		t.Fatalf("%d processes before any caller, want 1 (the shared one)", n)
	}
	tg, err := r.Toolset().Target(ctx, "s__echo")
	if err != nil {
		t.Fatal(err)
	}
	// open connects a caller named subject (sampling-capable or not),
	// sets a level unless sampling, and calls echo as it.
	var all []*mcp.ClientSession
	open := func(subject string, sampling bool) (*mcp.ClientSession, error) {
		t.Helper()
		var o *mcp.ClientOptions
		if sampling {
			o = sampler()
		}
		c := mcp.NewClient(&mcp.Implementation{Name: subject, Version: "1"}, o)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		all = append(all, cs)
		var levelErr error
		if !sampling {
			levelErr = cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"})
		} else if _, err := cs.ListTools(ctx, nil); err != nil { // places the caller
			t.Fatal(err)
		}
		res, err := r.CallTool(ctx, tg, Call{Args: []byte(`{"text":"hi"}`), Caller: callerFor(t, r, cs)})
		if err != nil || res.IsError || resultText(t, res) != "hi" {
			t.Fatalf("%s's call: %v %+v", subject, err, res)
		}
		return cs, levelErr
	}
	wantCapped := func(err error) {
		t.Helper()
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != CodeUpstreamCap || !strings.Contains(je.Message, "s") {
			t.Fatalf("setLevel over the cap: %v, want code %d", err, CodeUpstreamCap)
		}
	}

	a1, err := open("alice", false)
	if err != nil {
		t.Fatalf("alice's first level: %v", err)
	}
	if _, err := open("alice", true); err != nil {
		t.Fatal(err)
	}
	for range 3 { // over alice's 2
		_, err := open("alice", false)
		wantCapped(err)
		open("alice", true)
	}
	if n := starts(t, file); n != 3 {
		t.Fatalf("%d processes after 8 of alice's callers, want 3 (shared + alice's 2)", n)
	}
	if _, err := open("bob", false); err != nil {
		t.Fatalf("bob's first level: %v", err)
	}
	b2, err := open("bob", false) // over the server's 3
	wantCapped(err)
	if n := starts(t, file); n != 4 {
		t.Fatalf("%d processes, want 4 (shared + alice's 2 + bob's 1)", n)
	}
	mu.Lock()
	if capped[CappedSubject] != 6 || capped[CappedServer] != 1 {
		t.Errorf("capped = %v, want 6 by subject, 1 by server", capped)
	}
	mu.Unlock()

	// alice's first caller ends: its slot frees; bob's capped caller takes
	// it on its next call.
	_ = a1.Close()
	waitFor(t, "alice's first caller's process to be released", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.slots[tg.Upstream].total == 2
	})
	if _, err := r.CallTool(ctx, tg, Call{Args: []byte(`{"text":"hi"}`), Caller: callerFor(t, r, b2)}); err != nil {
		t.Fatal(err)
	}
	if n := starts(t, file); n != 5 {
		t.Fatalf("%d processes, want 5 (bob's second caller got the freed slot)", n)
	}
	for _, cs := range all {
		_ = cs.Close()
	}
	waitFor(t, "every caller and slot to be released", func() bool {
		r.mu.Lock()
		slots := len(r.slots)
		r.mu.Unlock()
		return r.liveSessions() == 0 && r.leftovers() == 0 && slots == 0
	})
}

// TestCappedCallerSamplingRefused: a sampling request an upstream sends
// during the call of a caller a cap keeps on the shared session is
// refused (the tool sees the refusal), and reaches no other caller; the
// caller within the cap is asked on its own session.
func TestCappedCallerSamplingRefused(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(up, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 1, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "?"}}}})
		if err != nil {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refused"}}}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answered by " + res.Model}}}, nil, nil
	})
	r := openRelay(t, []toolset.Server{remote("up", serveHTTP(t, up))}, &toolset.Options{ProtocolVersion: "2025-11-25"}, &Options{UpstreamPerSubject: 1})
	ctx := ctxT(t)
	if _, err := r.Toolset().Tools(ctx); err != nil {
		t.Fatal(err)
	}
	_, url := front(t, r, false)
	tg, err := r.Toolset().Target(ctx, "up__ask")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	asked := map[string]int{}
	var callers []*mcp.ClientSession
	ask := func(name string) string {
		cs := dial(t, url, "2025-11-25", &mcp.ClientOptions{
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				mu.Lock()
				asked[name]++
				mu.Unlock()
				return &mcp.CreateMessageResult{Model: name, Content: &mcp.TextContent{Text: "!"}}, nil
			}})
		callers = append(callers, cs)
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatal(err)
		}
		res, err := r.CallTool(ctx, tg, Call{Caller: callerFor(t, r, cs)})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		return resultText(t, res)
	}
	if got := ask("first"); got != "answered by first" {
		t.Fatalf("the caller within the cap: %q", got)
	}
	if got := ask("second"); got != "refused" {
		t.Fatalf("the capped caller: %q, want its sampling refused", got)
	}
	mu.Lock()
	if asked["first"] != 1 || asked["second"] != 0 {
		t.Errorf("asked %v, want first once, second never", asked)
	}
	mu.Unlock()
	for _, cs := range callers {
		_ = cs.Close()
	}
	waitFor(t, "every caller to be released", func() bool { return r.liveSessions() == 0 && r.leftovers() == 0 && sessions(up) == 1 })
}
