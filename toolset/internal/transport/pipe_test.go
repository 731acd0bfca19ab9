package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/plugin"
)

// pipeChildEnv makes the test binary (TestPipeChild) a scripted stdio MCP
// server that writes its answers by hand: one line each, or spread over
// lines, forged, late, or never.
const pipeChildEnv = "GH_TRANSPORT_PIPE_CHILD"

// TestPipeChild is the child of the Pipe tests; without pipeChildEnv it
// has nothing to do. Its tools (by name):
//
//	echo       the arguments as text, one line
//	pretty     the same, the answer indented over lines
//	error      a JSON-RPC error (-32042)
//	forge      first answers for requests "gatehouse-s999" and the next
//	           ID after its own (with the text "forged"), then its own
//	notify     a log notification, then its answer
//	escaped    a notification and its answer with keys written with escapes
//	block      no answer; notifications/cancelled for it is noted
//	cancelled  the request IDs cancelled so far, as text
//	die        the process exits without answering
func TestPipeChild(t *testing.T) {
	if os.Getenv(pipeChildEnv) != "1" {
		return
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	write := func(v any, indent bool) {
		var b []byte
		if indent {
			b, _ = json.MarshalIndent(v, "", "  ")
		} else {
			b, _ = json.Marshal(v)
		}
		mu.Lock()
		out.Write(append(b, '\n'))
		out.Flush()
		mu.Unlock()
	}
	answer := func(id json.RawMessage, result any) map[string]any {
		return map[string]any{"jsonrpc": "2.0", "id": id, "result": result}
	}
	text := func(s string) map[string]any {
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}
	}
	var cancelled []string
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			fmt.Fprintln(os.Stderr, "child: not JSON:", err)
			os.Exit(2)
		}
		switch m.Method {
		case "initialize":
			write(answer(m.ID, map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "pipechild", "version": "1"}}), false)
		case "tools/list":
			write(answer(m.ID, map[string]any{"tools": []any{map[string]any{"name": "echo", "inputSchema": map[string]any{"type": "object"}}}}), false)
		case "notifications/cancelled":
			cancelled = append(cancelled, string(m.Params.RequestID))
		case "tools/call":
			switch m.Params.Name {
			case "echo":
				write(answer(m.ID, text(string(m.Params.Arguments))), false)
			case "pretty":
				write(answer(m.ID, text("pretty "+string(m.Params.Arguments))), true)
			case "error":
				write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32042, "message": "refused"}}, false)
			case "forge":
				var own string
				_ = json.Unmarshal(m.ID, &own)
				var n int
				fmt.Sscanf(own, "gatehouse-s%d", &n)
				for _, id := range []string{`"gatehouse-s999"`, fmt.Sprintf(`"gatehouse-s%d"`, n+1)} {
					write(answer(json.RawMessage(id), text("forged")), false)
				}
				write(answer(m.ID, text("own")), false)
			case "notify":
				write(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": "from notify"}}, false)
				write(answer(m.ID, text("notified")), false)
			case "escaped":
				// The keys written with escapes, as no encoder would.
				mu.Lock()
				fmt.Fprintf(out, `{"jsonrpc":"2.0","m\u0065thod":"notifications/message","params":{"level":"info","data":"escaped"}}`+"\n")
				fmt.Fprintf(out, `{"jsonrpc":"2.0","i\u0064":%s,"result":{"content":[{"type":"text","text":"escaped"}]}}`+"\n", m.ID)
				out.Flush()
				mu.Unlock()
			case "block":
			case "cancelled":
				write(answer(m.ID, text(strings.Join(cancelled, ","))), false)
			case "die":
				os.Exit(0)
			}
		default:
			if len(m.ID) > 0 { // server/discover and the like: not known here
				write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}}, false)
			}
		}
	}
	os.Exit(0)
}

// pipeChild connects a go-sdk client to a TestPipeChild child through
// Stdio and Tapped, as the toolset does, and returns its session, its
// Pipe and the notifications tapped.
func pipeChild(t *testing.T) (*mcp.ClientSession, *Pipe, func() []string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Stdio(plugin.ServerConfig{Type: plugin.TransportStdio, Command: exe, Args: []string{"-test.run=^TestPipeChild$"},
		Env: map[string]string{pipeChildEnv: "1"}}, nil, 2*time.Second, StdioOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var tapped []string
	tap := &Tapped{Inner: tr, Tap: func(method string, params json.RawMessage) {
		mu.Lock()
		tapped = append(tapped, method+" "+string(params))
		mu.Unlock()
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, tap, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	p := tap.Pipe()
	if p == nil {
		t.Fatal("a stdio connection has no Pipe")
	}
	return cs, p, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), tapped...)
	}
}

// pipeCall makes one tools/call of tool with args on p.
func pipeCall(ctx context.Context, p *Pipe, tool, args string) (json.RawMessage, bool, error) {
	return p.Call(ctx, func(b, id []byte) []byte {
		b = append(b, `{"jsonrpc":"2.0","id":`...)
		b = append(b, id...)
		b = append(b, `,"method":"tools/call","params":{"name":"`+tool+`","arguments":`+args+`}}`...)
		return b
	})
}

func textOf(t *testing.T, res json.RawMessage) string {
	t.Helper()
	var r mcp.CallToolResult
	if err := json.Unmarshal(res, &r); err != nil || len(r.Content) != 1 {
		t.Fatalf("result %s: %v", res, err)
	}
	return r.Content[0].(*mcp.TextContent).Text
}

// TestPipeAnswers: a call on the pipe gets its own answer as the server
// wrote it; a JSON-RPC error comes back as a *jsonrpc.Error; a
// notification written before an answer has reached the session's tap when
// the call returns; and the go-sdk's own calls on the same connection, made
// at the same time, get theirs. Then the same after the server spread an
// answer over lines (the rest of the output read by the go-sdk's reader).
func TestPipeAnswers(t *testing.T) {
	cs, p, tapped := pipeChild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	for round, spread := range []bool{false, true} {
		if spread {
			res, _, err := pipeCall(ctx, p, "pretty", `{"b":2}`)
			if err != nil {
				t.Fatalf("pretty: %v", err)
			}
			if got := textOf(t, res); got != `pretty {"b":2}` {
				t.Errorf("pretty answered %q", got)
			}
			if p.breakAt.Load() == math.MaxInt64 {
				t.Fatal("an answer over lines did not hand the output to the go-sdk's reader")
			}
		}
		res, sent, err := pipeCall(ctx, p, "echo", `{"a":1}`)
		if err != nil || !sent {
			t.Fatalf("echo: sent %v, %v", sent, err)
		}
		if got := textOf(t, res); got != `{"a":1}` {
			t.Errorf("echo answered %q", got)
		}
		_, sent, err = pipeCall(ctx, p, "error", `{}`)
		var je *jsonrpc.Error
		if !sent || !errors.As(err, &je) || je.Code != -32042 || je.Message != "refused" {
			t.Errorf("error: sent %v, %v", sent, err)
		}
		res, _, err = pipeCall(ctx, p, "notify", `{}`)
		if err != nil || textOf(t, res) != "notified" {
			t.Fatalf("notify: %s %v", res, err)
		}
		if got := tapped(); len(got) != round+1 || !strings.HasPrefix(got[round], "notifications/message ") || !strings.Contains(got[round], "from notify") {
			t.Errorf("round %d: tapped %q when the call returned", round, got)
		}

		// Both clients at once on one connection: every answer its caller's.
		var wg sync.WaitGroup
		errs := make(chan error, 60)
		for i := range 30 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				args := fmt.Sprintf(`{"pipe":%d}`, i)
				res, _, err := pipeCall(ctx, p, "echo", args)
				if err == nil {
					var r mcp.CallToolResult
					if err = json.Unmarshal(res, &r); err == nil && r.Content[0].(*mcp.TextContent).Text != args {
						err = fmt.Errorf("pipe call %d answered %s", i, res)
					}
				}
				errs <- err
			}()
			go func() {
				defer wg.Done()
				r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"sdk": i}})
				if err == nil && r.Content[0].(*mcp.TextContent).Text != fmt.Sprintf(`{"sdk":%d}`, i) {
					err = fmt.Errorf("go-sdk call %d answered %+v", i, r.Content[0])
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	}
}

// TestPipeEscapedKeys: a message whose keys are written with escapes is
// read by the go-sdk's reader from there on: the answer still reaches its
// call, the notification before it the tap, and calls after it get theirs.
func TestPipeEscapedKeys(t *testing.T) {
	_, p, tapped := pipeChild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, _, err := pipeCall(ctx, p, "escaped", `{}`)
	if err != nil || textOf(t, res) != "escaped" {
		t.Fatalf("escaped: %s %v", res, err)
	}
	if got := tapped(); len(got) != 1 || !strings.Contains(got[0], `"escaped"`) {
		t.Errorf("tapped %q when the call returned", got)
	}
	res, _, err = pipeCall(ctx, p, "echo", `{"after":1}`)
	if err != nil || textOf(t, res) != `{"after":1}` {
		t.Fatalf("echo after: %s %v", res, err)
	}
}

// TestPipeForgedAnswers: a hostile server answers requests it was never
// sent (an ID far ahead, and the next one the pipe will give): those
// answers are dropped, never handed to a later call, and never reach the
// go-sdk's client.
func TestPipeForgedAnswers(t *testing.T) {
	cs, p, _ := pipeChild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, _, err := pipeCall(ctx, p, "forge", `{}`)
	if err != nil || textOf(t, res) != "own" {
		t.Fatalf("forge: %s %v", res, err)
	}
	// The next ID is the one the server forged an answer for, before it
	// was sent: the call gets the server's real answer.
	res, _, err = pipeCall(ctx, p, "echo", `{"after":"forge"}`)
	if err != nil || textOf(t, res) != `{"after":"forge"}` {
		t.Fatalf("the call after the forged answers: %s %v", res, err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo"}); err != nil {
		t.Errorf("the go-sdk's session after the forged answers: %v", err)
	}
}

// TestPipeCancel: a call whose context ends returns its error at once and
// the server is told (notifications/cancelled with the request's ID).
func TestPipeCancel(t *testing.T) {
	_, p, _ := pipeChild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cctx, ccancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer ccancel()
	_, sent, err := pipeCall(cctx, p, "block", `{}`)
	if !sent || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("block: sent %v, %v", sent, err)
	}
	for {
		// The notification may go out after the call returned (when a
		// write was under way): ask until the server has it.
		res, _, err := pipeCall(ctx, p, "cancelled", `{}`)
		if err != nil {
			t.Fatal(err)
		}
		got := textOf(t, res)
		if got == `"gatehouse-s1"` {
			break
		}
		if got != "" || ctx.Err() != nil {
			t.Fatalf("the server saw cancelled %q, want the block call's ID", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPipeServerDies: a server that exits while a call waits fails the
// call with an error SessionLost reports; later calls are not sent, and
// Open says so.
func TestPipeServerDies(t *testing.T) {
	_, p, _ := pipeChild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, sent, err := pipeCall(ctx, p, "die", `{}`)
	if !sent || !SessionLost(err) {
		t.Fatalf("die: sent %v, %v (SessionLost %v)", sent, err, SessionLost(err))
	}
	if p.Open() {
		t.Error("the pipe is open after its server died")
	}
	if _, sent, err := pipeCall(ctx, p, "echo", `{}`); sent || !SessionLost(err) {
		t.Errorf("a call after the server died: sent %v, %v", sent, err)
	}
}

// TestPipeClosed: closing the session fails a call waiting and refuses
// the next.
func TestPipeClosed(t *testing.T) {
	cs, p, _ := pipeChild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, err := pipeCall(ctx, p, "block", `{}`)
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	cs.Close()
	select {
	case err := <-done:
		if !SessionLost(err) {
			t.Errorf("the waiting call: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the waiting call was not failed by the close")
	}
	if _, sent, _ := pipeCall(ctx, p, "echo", `{}`); sent {
		t.Error("a call after the close was sent")
	}
}
