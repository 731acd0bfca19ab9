package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// These tests were toolset/raw_test.go's TestCallRaw* (CallRaw is now
// CallBytes, RawReady BytesReady, ErrNoRawPath ErrNoBytePath).

// target routes name.
func target(t *testing.T, r *Relay, name string) toolset.Target {
	t.Helper()
	tg, err := r.Toolset().Target(ctxT(t), name)
	if err != nil {
		t.Fatalf("Target %s: %v", name, err)
	}
	return tg
}

// callBytes calls name with CallBytes.
func callBytes(ctx context.Context, t *testing.T, r *Relay, name, args string) (json.RawMessage, error) {
	t.Helper()
	return r.CallBytes(ctx, target(t, r, name), Call{Args: json.RawMessage(args)})
}

// bytesText calls name with CallBytes and returns the text of its result.
func bytesText(t *testing.T, r *Relay, name, args string) string {
	t.Helper()
	b, err := callBytes(ctxT(t), t, r, name, args)
	if err != nil {
		t.Fatalf("CallBytes %s: %v", name, err)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("result %s: %v", b, err)
	}
	return resultText(t, &res)
}

// TestCallBytesHTTP (was TestCallRawHTTP): a live streamable HTTP session
// at 2025-11-25 is a byte path; a restarted server's lost session is
// re-established once; a call that needs routing back to its caller, or a
// server without a live session, has none, and nothing is sent.
func TestCallBytesHTTP(t *testing.T) {
	fx := startHTTP(t, "127.0.0.1:0", "-tools", "echo")
	r := openRelay(t, []toolset.Server{remote("fx", fx.URL(""))}, nil, nil)
	if got := call(t, r, "fx__echo", `{"text":"1"}`); got != "1" {
		t.Fatalf("echo %q", got)
	}
	tg := target(t, r, "fx__echo")
	if !r.BytesReady(tg, &Call{}) {
		t.Fatal("BytesReady false on a live streamable HTTP session")
	}
	if got := bytesText(t, r, "fx__echo", `{"text":"raw \"quoted\" ü"}`); got != `raw "quoted" ü` {
		t.Fatalf("bytes echo %q", got)
	}
	// A call whose caller needs what the server sends about it has no
	// byte path.
	for name, c := range map[string]*Call{
		"a progress token":                  {ProgressToken: "p"},
		"a caller with sessions of its own": {Caller: &Caller{id: "d", dedicated: true}},
	} {
		if r.BytesReady(tg, c) {
			t.Errorf("BytesReady for %s", name)
		}
		if _, err := r.CallBytes(ctxT(t), tg, *c); !errors.Is(err, ErrNoBytePath) {
			t.Errorf("CallBytes with %s: %v, want ErrNoBytePath", name, err)
		}
	}
	// A restarted server: the lost session is re-established once.
	fx.Restart()
	if got := bytesText(t, r, "fx__echo", `{"text":"after"}`); got != "after" {
		t.Fatalf("bytes echo after restart %q", got)
	}
	rpcs := map[string]int{}
	for _, req := range fx.Requests() {
		rpcs[req.RPC]++
	}
	// tools/call: CallTool's, CallBytes's, and after the restart the one
	// answered 404 and the one sent again.
	if rpcs["initialize"] != 2 || rpcs["tools/call"] != 4 {
		t.Errorf("the server was sent %v, want 2 initialize and 4 tools/call", rpcs)
	}
	// Without a live session (the toolset closed) there is no byte path.
	sent := len(fx.Requests())
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if r.BytesReady(tg, &Call{}) {
		t.Error("BytesReady without a live session")
	}
	if _, err := r.CallBytes(ctxT(t), tg, Call{Args: json.RawMessage(`{"text":"x"}`)}); !errors.Is(err, ErrNoBytePath) {
		t.Errorf("CallBytes without a live session: %v, want ErrNoBytePath", err)
	}
	for _, req := range fx.Requests()[sent:] {
		if req.RPC != "" {
			t.Errorf("%s sent after the toolset closed", req.RPC)
		}
	}
}

// TestCallBytesNotForStdio (was TestCallRawNotForStdio).
func TestCallBytesNotForStdio(t *testing.T) {
	r := openRelay(t, []toolset.Server{stdio("fx", "-tools", "echo")}, nil, nil)
	if got := call(t, r, "fx__echo", `{"text":"1"}`); got != "1" {
		t.Fatalf("echo %q", got)
	}
	tg := target(t, r, "fx__echo")
	if r.BytesReady(tg, &Call{}) {
		t.Error("BytesReady for a stdio server")
	}
	if _, err := r.CallBytes(ctxT(t), tg, Call{}); !errors.Is(err, ErrNoBytePath) {
		t.Errorf("CallBytes on stdio: %v, want ErrNoBytePath", err)
	}
}

// hostile serves a real go-sdk server whose answers to the byte path's
// tools/call (string IDs "gatehouse-N") are replaced by answer's bytes.
type hostile struct {
	url     string
	mu      sync.Mutex
	answer  func(w http.ResponseWriter, id string)
	posted  []string     // bodies of the byte path's other POSTs (refusals, cancellations)
	handled atomic.Int64 // tools/call run by the server
	raw     atomic.Int64 // tools/call with the byte path's IDs
	resume  string       // the answer to a GET with Last-Event-ID
	cancels chan struct{}
	conns   atomic.Int64 // connections accepted
}

func newHostile(t *testing.T) *hostile {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1"}, nil)
	h := &hostile{cancels: make(chan struct{}, 4)}
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		h.handled.Add(1)
		if strings.Contains(string(req.Params.Arguments), "block") {
			<-ctx.Done()
			h.cancels <- struct{}{}
			return nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
			h.mu.Lock()
			ev := h.resume
			h.mu.Unlock()
			if r.Header.Get("Last-Event-ID") == "never" {
				sse(w, "id: never\ndata: \n\n") // closed again, no progress
				return
			}
			if r.Header.Get("Last-Event-ID") == "s1_1" && ev != "" {
				sse(w, ev)
				return
			}
		}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			_ = json.Unmarshal(body, &m)
			h.mu.Lock()
			answer := h.answer
			if !(m.Method == "tools/call" && strings.Contains(string(m.ID), "gatehouse-")) && (m.Method == "" || m.Method == "notifications/cancelled") {
				h.posted = append(h.posted, string(body))
			}
			h.mu.Unlock()
			if m.Method == "tools/call" && strings.Contains(string(m.ID), "gatehouse-") {
				h.raw.Add(1)
			}
			if m.Method == "tools/call" && strings.Contains(string(m.ID), "gatehouse-") && answer != nil {
				answer(w, string(m.ID))
				return
			}
		}
		sdk.ServeHTTP(w, r)
	}), ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			h.conns.Add(1)
		}
	}}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	h.url = "http://" + ln.Addr().String() + "/mcp"
	return h
}

func (h *hostile) set(f func(w http.ResponseWriter, id string)) {
	h.mu.Lock()
	h.answer = f
	h.mu.Unlock()
}

func (h *hostile) otherPosts() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.posted...)
}

func sse(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		_, _ = io.WriteString(w, e)
		w.(http.Flusher).Flush()
	}
}

// TestCallBytesHostileServer (was TestCallRawHostileServer) attacks the
// byte path's reading of answers the way a hostile or broken server would.
func TestCallBytesHostileServer(t *testing.T) {
	h := newHostile(t)
	r := openRelay(t, []toolset.Server{remote("h", h.url)}, nil, nil)
	if got := call(t, r, "h__echo", `{"x":1}`); got != `{"x":1}` {
		t.Fatalf("echo %q", got)
	}
	// The honest answer first, as SSE and as JSON, with notifications and
	// another request's answer in between, split across lines and reads.
	if got := bytesText(t, r, "h__echo", `{"y":2}`); got != `{"y":2}` {
		t.Fatalf("raw echo %q", got)
	}
	if h.raw.Load() != 1 || h.handled.Load() != 2 {
		t.Fatalf("raw tools/call at the server: %d of %d, want 1 of 2", h.raw.Load(), h.handled.Load())
	}
	h.set(func(w http.ResponseWriter, id string) {
		sse(w,
			": a comment\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n",
			"id: e1\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"gatehouse-0\",\"result\":{\"content\":[]}}\r\n\r\n",
			"data: {\"jsonrpc\":\"2.0\",\"id\":"+id+",\n",
			"data: \"result\":{\"content\":[{\"type\":\"text\",\"text\":\"two lines\"}]}}\n\n")
	})
	if got := bytesText(t, r, "h__echo", `{}`); got != "two lines" {
		t.Fatalf("multi-line event: %q", got)
	}
	h.set(func(w http.ResponseWriter, id string) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":"json"}]}}`)
	})
	if got := bytesText(t, r, "h__echo", `{}`); got != "json" {
		t.Fatalf("JSON answer: %q", got)
	}

	bad := []struct {
		name   string
		answer func(w http.ResponseWriter, id string)
		want   string
	}{
		{"invalid JSON result", func(w http.ResponseWriter, id string) {
			sse(w, "data: {\"jsonrpc\":\"2.0\",\"id\":"+id+",\"result\":{\"content\":[}}\n\n")
		}, "not a JSON-RPC message"},
		{"result not an object", func(w http.ResponseWriter, id string) {
			sse(w, "data: {\"jsonrpc\":\"2.0\",\"id\":"+id+",\"result\":\"steer\"}\n\n")
		}, "no result object"},
		{"a smuggled second object", func(w http.ResponseWriter, id string) {
			sse(w, "data: {\"jsonrpc\":\"2.0\",\"id\":"+id+",\"result\":{}}{\"x\":1}\n\n")
		}, "not a JSON-RPC message"},
		{"only an answer to another ID, then the end", func(w http.ResponseWriter, id string) {
			sse(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"gatehouse-999999\",\"result\":{\"content\":[]}}\n\n")
		}, "without answering"},
		{"a stream closed again and again after an event ID", func(w http.ResponseWriter, id string) {
			sse(w, "id: never\ndata: \n\n")
		}, "times before answering"},
		{"HTTP 500", func(w http.ResponseWriter, id string) {
			http.Error(w, "boom", http.StatusInternalServerError)
		}, "HTTP 500"},
		{"another content type", func(w http.ResponseWriter, id string) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<html>")
		}, "neither JSON nor an event stream"},
		{"an event larger than the bound", func(w http.ResponseWriter, id string) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":"+id+",\"result\":{\"x\":\"")
			chunk := bytes.Repeat([]byte("a"), 1<<20)
			for i := 0; i < 17; i++ {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, "exceeds"},
	}
	for _, c := range bad {
		h.set(c.answer)
		_, err := callBytes(ctxT(t), t, r, "h__echo", `{}`)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
		// A bad answer fails the call, not the connection: typed, never
		// by its text (a stream that ends is no answer at all).
		bad := !strings.Contains(c.want, "answering")
		if got := errors.Is(err, toolset.ErrBadAnswer); got != bad || (bad && errors.Is(err, toolset.ErrConnectionFailed)) {
			t.Errorf("%s: err %v is a bad answer: %v, want %v", c.name, err, got, bad)
		}
	}

	// A JSON-RPC error answer comes back as a *jsonrpc.Error.
	h.set(func(w http.ResponseWriter, id string) {
		sse(w, "data: {\"jsonrpc\":\"2.0\",\"id\":"+id+",\"error\":{\"code\":-32602,\"message\":\"bad args\"}}\n\n")
	})
	_, err := callBytes(ctxT(t), t, r, "h__echo", `{}`)
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != -32602 || rpc.Message != "bad args" {
		t.Errorf("error answer: %v", err)
	}

	// A server-to-client request on the shared session is refused (its
	// capabilities are empty), and the call still gets its answer.
	h.set(func(w http.ResponseWriter, id string) {
		sse(w, "data: {\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"sampling/createMessage\",\"params\":{}}\n\n",
			"data: {\"jsonrpc\":\"2.0\",\"id\":"+id+",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"after\"}]}}\n\n")
	})
	if got := bytesText(t, r, "h__echo", `{}`); got != "after" {
		t.Fatalf("answer after a refused request: %q", got)
	}
	var refused bool
	for _, p := range h.otherPosts() {
		if strings.Contains(p, `"id":77`) && strings.Contains(p, `"error"`) {
			refused = true
		}
	}
	if !refused {
		t.Errorf("the server's request was not refused: %v", h.otherPosts())
	}

	// Resumption: the server closes the stream after an event ID; the raw
	// path GETs the rest with Last-Event-ID.
	h.set(func(w http.ResponseWriter, id string) {
		h.mu.Lock()
		h.resume = "id: s1_2\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n"
		h.mu.Unlock()
		sse(w, "id: s1_1\nretry: 10\ndata: \n\n")
	})
	if got := bytesText(t, r, "h__echo", `{}`); got != "resumed" {
		t.Fatalf("resumed stream: %q", got)
	}
}

// TestCallBytesCancel (was TestCallRawCancel): a caller that gives up
// cancels the call upstream.
func TestCallBytesCancel(t *testing.T) {
	h := newHostile(t)
	r := openRelay(t, []toolset.Server{remote("h", h.url)}, nil, nil)
	if got := call(t, r, "h__echo", `{"x":1}`); got != `{"x":1}` {
		t.Fatalf("echo %q", got)
	}
	tg := target(t, r, "h__echo")
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() {
		_, err := r.CallBytes(ctx, tg, Call{Args: json.RawMessage(`{"block":true}`)})
		done <- err
	}()
	waitFor(t, "the call to reach the server", func() bool { return h.handled.Load() == 2 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	select {
	case <-h.cancels:
	case <-time.After(10 * time.Second):
		t.Fatalf("the server's handler was not cancelled; posts: %q", h.otherPosts())
	}
	var sent bool
	for _, p := range h.otherPosts() {
		if strings.Contains(p, "notifications/cancelled") && strings.Contains(p, `"requestId":"gatehouse-`) {
			sent = true
		}
	}
	if !sent {
		t.Errorf("no notifications/cancelled for the byte path's request: %v", h.otherPosts())
	}
}

// TestCallBytesReusesConnections (was TestCallRawReusesConnections):
// byte calls return their connection to the pool (the rest of each
// response stream is read), so a closed loop of calls does not dial one
// connection per call.
func TestCallBytesReusesConnections(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	var conns atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil),
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				conns.Add(1)
			}
		},
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	r := openRelay(t, []toolset.Server{remote("e", "http://"+ln.Addr().String()+"/mcp")}, nil, nil)
	if got := call(t, r, "e__echo", ""); got != "ok" {
		t.Fatalf("echo %q", got)
	}
	tg := target(t, r, "e__echo")
	before := conns.Load()
	handed0, _ := r.drains.counts()
	for range 200 {
		// As in a gateway: the call's context ends as soon as it returns
		// (the caller's HTTP request is answered).
		ctx, cancel := context.WithCancel(ctxT(t))
		b, err := r.CallBytes(ctx, tg, Call{Args: json.RawMessage(`{}`)})
		cancel()
		if err != nil || !strings.Contains(string(b), `"ok"`) {
			t.Fatalf("bytes echo %s %v", b, err)
		}
	}
	// A call may start before the previous stream's end is read (more
	// often on a loaded machine under -race: CI saw 9): a few connections,
	// never one a call (the bug this guards against dialled 200).
	if n := conns.Load() - before; n > 40 {
		t.Errorf("200 byte calls opened %d connections", n)
	}
	handed, _ := r.drains.counts()
	t.Logf("200 byte calls: %d streams' ends read by the drainer (the rest came with the answer), %d connections opened", handed-handed0, conns.Load()-before)
}

// TestCallBytesRequestFlood (was TestCallRawRequestFlood): a server that
// floods the call's stream with server-to-client requests gets a bounded
// number of refusals, and the call still gets its answer.
func TestCallBytesRequestFlood(t *testing.T) {
	h := newHostile(t)
	r := openRelay(t, []toolset.Server{remote("h", h.url)}, nil, nil)
	if got := call(t, r, "h__echo", `{"x":1}`); got != `{"x":1}` {
		t.Fatalf("echo %q", got)
	}
	h.set(func(w http.ResponseWriter, id string) {
		var evs []string
		for i := range 200 {
			evs = append(evs, fmt.Sprintf("data: {\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"roots/list\"}\n\n", 1000+i))
		}
		evs = append(evs, "data: {\"jsonrpc\":\"2.0\",\"id\":"+id+",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n")
		sse(w, evs...)
	})
	if got := bytesText(t, r, "h__echo", `{}`); got != "done" {
		t.Fatalf("answer after the flood: %q", got)
	}
	refusals := 0
	for _, p := range h.otherPosts() {
		if strings.Contains(p, `"error"`) {
			refusals++
		}
	}
	if refusals != maxRefusals {
		t.Errorf("%d refusals sent, want %d", refusals, maxRefusals)
	}
}
