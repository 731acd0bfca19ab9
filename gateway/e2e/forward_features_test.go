// Forwarding of everything beyond tools (package gateway/forward), through
// the real binary, for each upstream transport and revision.

package e2e

//lint:file-ignore SA1019 forwarding sampling, elicitation, roots and logging (deprecated by SEP-2577, still in 2025-11-25) is this file's job.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var fwdBin struct {
	once sync.Once
	path string
	err  error
}

// fwdServer builds the forwarding fixture (gateway/e2e/internal/fwdmcp)
// once.
func fwdServer(t *testing.T) string {
	t.Helper()
	fwdBin.once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		fwdBin.path = filepath.Join(bins.dir, "fwdmcp")
		cmd := exec.Command("go", "build", "-o", fwdBin.path, "./gateway/e2e/internal/fwdmcp")
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			fwdBin.err = err
			t.Logf("%s", out)
		}
	})
	if fwdBin.err != nil {
		t.Fatal(fwdBin.err)
	}
	return fwdBin.path
}

// upstream is a running fwdmcp over HTTP.
type upstream struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
}

// startUpstream runs fwdmcp on addr ("127.0.0.1:0" for any port).
func startUpstream(t *testing.T, dir, addr string, stateless bool, cancelled string) *upstream {
	t.Helper()
	ready := filepath.Join(dir, "ready-"+time.Now().Format("150405.000000000"))
	args := []string{"-http", addr, "-ready", ready, "-cancelled", cancelled}
	if stateless {
		args = append(args, "-stateless")
	}
	u := &upstream{cmd: exec.Command(fwdServer(t), args...), done: make(chan struct{})}
	if err := u.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = u.cmd.Wait(); close(u.done) }()
	t.Cleanup(u.stop)
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(ready)
		if err == nil {
			u.addr = string(b)
			return u
		}
		if time.Now().After(deadline) {
			t.Fatal("upstream did not start")
		}
		select {
		case <-u.done:
			t.Fatal("upstream exited")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (u *upstream) stop() {
	_ = u.cmd.Process.Kill()
	<-u.done
}

// fwdClient is a caller with every client feature.
type fwdClient struct {
	cs       *mcp.ClientSession
	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
	logs     []*mcp.LoggingMessageParams
	updated  chan string
}

func connectFwd(t *testing.T, url string) *fwdClient {
	t.Helper()
	fc := &fwdClient{updated: make(chan string, 8)}
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-forward", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: "pong"}}, nil
		},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			fc.mu.Lock()
			fc.progress = append(fc.progress, r.Params)
			fc.mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			fc.mu.Lock()
			fc.logs = append(fc.logs, r.Params)
			fc.mu.Unlock()
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			fc.updated <- r.Params.URI
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///work", Name: "work"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	fc.cs = cs
	return fc
}

func (fc *fwdClient) counts() (progress, logs int, tokens []any) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	for _, p := range fc.progress {
		tokens = append(tokens, p.ProgressToken)
	}
	return len(fc.progress), len(fc.logs), tokens
}

// gatewayFor writes a config with the upstream as inline server "up",
// prefix "", and starts the gateway.
func gatewayFor(t *testing.T, dir, entry string) *gw {
	t.Helper()
	writeConfig(t, dir, "store: sqlite:"+filepath.Join(dir, "gh.db")+"\nservers:\n  up:\n"+entry+"    prefix: \"\"\n")
	return startGateway(t, dir)
}

// TestForwardPairings checks every forwarded feature through the gateway
// (a stateful 2025-11-25 caller) for each kind of upstream: stateful HTTP
// (2025-11-25), stateless HTTP and stdio (both 2026-07-28, negotiated with
// server/discover).
func TestForwardPairings(t *testing.T) {
	for _, mode := range []string{"stdio", "http-stateful", "http-stateless"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			cancelled := filepath.Join(dir, "cancelled")
			var entry string
			switch mode {
			case "stdio":
				fwdServer(t) // on the gateway's PATH
				entry = "    type: stdio\n    command: fwdmcp\n    args: [\"-cancelled\", \"" + cancelled + "\"]\n"
			default:
				u := startUpstream(t, dir, "127.0.0.1:0", mode == "http-stateless", cancelled)
				entry = "    type: streamable-http\n    url: http://" + u.addr + "/mcp\n"
			}
			g := gatewayFor(t, dir, entry)
			fc := connectFwd(t, g.url)
			// Over stdio and stateless HTTP the go-sdk negotiates 2026-07-28
			// (server/discover): no sessions, so no logging/setLevel, no
			// server-initiated requests and no subscriptions upstream.
			checkForwarding(t, fc, cancelled, mode == "http-stateful", mode != "http-stateless")
		})
	}
}

func checkForwarding(t *testing.T, fc *fwdClient, cancelled string, stateful, cancelSeen bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := fc.cs

	caps := cs.InitializeResult().Capabilities
	if caps.Resources == nil || caps.Prompts == nil || caps.Completions == nil {
		t.Fatalf("capabilities not advertised: %+v", caps)
	}
	if strings.Contains(cs.InitializeResult().Instructions, "upstream instructions") {
		t.Fatal("upstream instructions were forwarded")
	}

	// Resources and templates: URIs as the upstream publishes them.
	rl, err := cs.ListResources(ctx, nil)
	if err != nil || len(rl.Resources) != 1 || rl.Resources[0].URI != "fwd://static/hello" {
		t.Fatalf("resources/list = %+v, %v", rl, err)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fwd://static/hello"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "hello from upstream" {
		t.Fatalf("resources/read = %+v, %v", rr, err)
	}
	tl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tl.ResourceTemplates) != 1 || tl.ResourceTemplates[0].URITemplate != "fwd://items/{id}" {
		t.Fatalf("resources/templates/list = %+v, %v", tl, err)
	}
	if rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fwd://items/7"}); err != nil || rr.Contents[0].Text != "item 7" {
		t.Fatalf("templated read = %+v, %v", rr, err)
	}
	if _, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fwd://nowhere"}); err == nil {
		t.Fatal("reading an unknown URI succeeded")
	}

	// Prompts and completion.
	pl, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(pl.Prompts) != 1 || pl.Prompts[0].Name != "greet" {
		t.Fatalf("prompts/list = %+v, %v", pl, err)
	}
	gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"color": "red"}})
	if err != nil || gp.Messages[0].Content.(*mcp.TextContent).Text != "hello in red" {
		t.Fatalf("prompts/get = %+v, %v", gp, err)
	}
	cr, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"},
		Argument: mcp.CompleteParamsArgument{Name: "color", Value: "r"}})
	if err != nil || strings.Join(cr.Completion.Values, ",") != "ref/prompt,red" {
		t.Fatalf("completion/complete = %+v, %v", cr, err)
	}

	// Logging and progress: the caller's token comes back; the upstream
	// saw the gateway's own.
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "work", Meta: mcp.Meta{"progressToken": "tok-1"}})
	if err != nil || res.IsError {
		t.Fatalf("work: %+v, %v", res, err)
	}
	if got := text(res); !strings.HasPrefix(got, "token=gatehouse/") {
		t.Fatalf("upstream saw progress token %q, want the gateway's", got)
	}
	fwdWait(t, "3 progress notifications and a log message", func() bool {
		p, l, _ := fc.counts()
		// A 2026-07-28 upstream has no logging/setLevel: no log messages.
		return p == 3 && (l >= 1 || !stateful)
	})
	if _, _, tokens := fc.counts(); tokens[0] != "tok-1" {
		t.Fatalf("progress tokens = %v, want tok-1", tokens)
	}

	// Cancellation reaches the upstream.
	cctx, ccancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "wait"})
		errc <- err
	}()
	time.Sleep(300 * time.Millisecond) // let the call reach the upstream
	ccancel()
	if err := <-errc; err == nil {
		t.Fatal("cancelled call succeeded")
	}
	if !cancelSeen {
		return // KNOWN GAP: a stateless HTTP upstream does not see it (see report)
	}
	fwdWait(t, "the upstream to see the cancellation", func() bool {
		b, _ := os.ReadFile(cancelled)
		return strings.Count(string(b), "cancelled") == 1
	})

	if !stateful {
		return // server-to-client requests and subscriptions need sessions
	}
	// Server-to-client requests reach this caller.
	for tool, want := range map[string]string{"sample": "sampled: pong", "ask": "accept ada", "roots": "roots: file:///work"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool})
		if err != nil || text(res) != want {
			t.Fatalf("%s = %q (%v), want %q", tool, text(res), err, want)
		}
	}
	// Subscriptions: the update reaches the subscriber.
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "fwd://static/hello"}); err != nil {
		t.Fatal(err)
	}
	// KNOWN GAP: the upstream's notifications/resources/updated does not
	// reach the subscriber yet (see report); subscribe and unsubscribe are
	// forwarded.
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "fwd://static/hello"}); err != nil {
		t.Fatal(err)
	}
}

// TestForwardIsolation: one caller's progress and logs never reach another
// caller.
func TestForwardIsolation(t *testing.T) {
	dir := t.TempDir()
	u := startUpstream(t, dir, "127.0.0.1:0", false, filepath.Join(dir, "cancelled"))
	g := gatewayFor(t, dir, "    type: streamable-http\n    url: http://"+u.addr+"/mcp\n")
	a, b := connectFwd(t, g.url), connectFwd(t, g.url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []*fwdClient{a, b} {
		if err := c.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.cs.CallTool(ctx, &mcp.CallToolParams{Name: "work", Meta: mcp.Meta{"progressToken": 7}}); err != nil {
		t.Fatal(err)
	}
	fwdWait(t, "a's progress", func() bool { p, l, _ := a.counts(); return p == 3 && l == 1 })
	// b calls too, then checks it got only its own.
	if _, err := b.cs.CallTool(ctx, &mcp.CallToolParams{Name: "work", Meta: mcp.Meta{"progressToken": "b"}}); err != nil {
		t.Fatal(err)
	}
	fwdWait(t, "b's progress", func() bool { p, _, _ := b.counts(); return p == 3 })
	if p, l, toks := b.counts(); p != 3 || l != 1 || toks[0] != "b" {
		t.Fatalf("b got %d progress (%v) and %d logs", p, toks, l)
	}
	if p, l, _ := a.counts(); p != 3 || l != 1 {
		t.Fatalf("a got %d progress and %d logs after b's call", p, l)
	}
}

// TestForwardUpstreamRestart: the upstream restarts between two requests
// of one caller; the caller's next requests succeed.
func TestForwardUpstreamRestart(t *testing.T) {
	dir := t.TempDir()
	cancelled := filepath.Join(dir, "cancelled")
	u := startUpstream(t, dir, "127.0.0.1:0", false, cancelled)
	addr := u.addr
	g := gatewayFor(t, dir, "    type: streamable-http\n    url: http://"+addr+"/mcp\n")
	fc := connectFwd(t, g.url)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := fc.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fwd://static/hello"}); err != nil {
		t.Fatal(err)
	}
	if res, err := fc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "sample"}); err != nil || text(res) != "sampled: pong" {
		t.Fatalf("sample before restart: %q %v", text(res), err)
	}
	u.stop()
	startUpstream(t, dir, addr, false, cancelled) // same address, new process, no sessions
	rr, err := fc.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fwd://static/hello"})
	if err != nil || rr.Contents[0].Text != "hello from upstream" {
		t.Fatalf("read after restart: %+v, %v", rr, err)
	}
	if res, err := fc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "sample"}); err != nil || text(res) != "sampled: pong" {
		t.Fatalf("sample after restart: %q %v", text(res), err)
	}
	if res, err := fc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "work"}); err != nil || res.IsError {
		t.Fatalf("work after restart: %+v %v", res, err)
	}
}

func fwdWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
