package toolset

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

	"github.com/gatehouse-dev/gatehouse/plugin"
)

// rawText calls name with CallRaw and returns the text of its result.
func rawText(t *testing.T, ts *Toolset, name, args string) string {
	t.Helper()
	b, err := ts.CallRaw(ctxT(t), name, json.RawMessage(args), nil)
	if err != nil {
		t.Fatalf("CallRaw %s: %v", name, err)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("result %s: %v", b, err)
	}
	return resultText(t, &res)
}

func TestCallRawHTTP(t *testing.T) {
	fx := startHTTP(t, "127.0.0.1:0", "-tools", "echo")
	ts := open(t, []Server{remote("fx", fx.url(""), plugin.TransportStreamableHTTP)}, nil)
	if ts.RawReady("fx__echo") {
		t.Fatal("RawReady before any session")
	}
	if _, err := ts.CallRaw(ctxT(t), "fx__echo", nil, nil); !errors.Is(err, ErrNoRawPath) {
		t.Fatalf("CallRaw before any session: %v, want ErrNoRawPath", err)
	}
	if got := call(t, ts, "fx__echo", map[string]any{"text": "1"}); got != "1" {
		t.Fatalf("echo %q", got)
	}
	if !ts.RawReady("fx__echo") {
		t.Fatal("RawReady false on a live streamable HTTP session")
	}
	if got := rawText(t, ts, "fx__echo", `{"text":"raw \"quoted\" ü"}`); got != `raw "quoted" ü` {
		t.Fatalf("raw echo %q", got)
	}
	// A restarted server: the lost session is re-established once.
	fx.restart()
	if got := rawText(t, ts, "fx__echo", `{"text":"after"}`); got != "after" {
		t.Fatalf("raw echo after restart %q", got)
	}
	inits := 0
	for _, r := range fx.requests() {
		if r.RPC == "initialize" {
			inits++
		}
	}
	if inits != 2 {
		t.Errorf("initialize sent %d times, want 2", inits)
	}
}

func TestCallRawNotForStdio(t *testing.T) {
	ts := open(t, []Server{stdio("fx", "-tools", "echo")}, nil)
	if got := call(t, ts, "fx__echo", map[string]any{"text": "1"}); got != "1" {
		t.Fatalf("echo %q", got)
	}
	if ts.RawReady("fx__echo") {
		t.Error("RawReady for a stdio server")
	}
	if _, err := ts.CallRaw(ctxT(t), "fx__echo", nil, nil); !errors.Is(err, ErrNoRawPath) {
		t.Errorf("CallRaw on stdio: %v, want ErrNoRawPath", err)
	}
}

// hostile serves a real go-sdk server whose answers to the raw path's
// tools/call (string IDs "gatehouse-N") are replaced by answer's bytes.
type hostile struct {
	url     string
	mu      sync.Mutex
	answer  func(w http.ResponseWriter, id string)
	posted  []string     // bodies of the raw path's other POSTs (refusals, cancellations)
	handled atomic.Int64 // tools/call run by the server
	raw     atomic.Int64 // tools/call with the raw path's IDs
	resume  string       // the answer to a GET with Last-Event-ID
	cancels chan struct{}
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
	})}
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

// TestCallRawHostileServer attacks the raw path's reading of answers the
// way a hostile or broken server would.
func TestCallRawHostileServer(t *testing.T) {
	h := newHostile(t)
	ts := open(t, []Server{remote("h", h.url, plugin.TransportStreamableHTTP)}, nil)
	if got := call(t, ts, "h__echo", map[string]any{"x": 1}); got != `{"x":1}` {
		t.Fatalf("echo %q", got)
	}
	// The honest answer first, as SSE and as JSON, with notifications and
	// another request's answer in between, split across lines and reads.
	if got := rawText(t, ts, "h__echo", `{"y":2}`); got != `{"y":2}` {
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
	if got := rawText(t, ts, "h__echo", `{}`); got != "two lines" {
		t.Fatalf("multi-line event: %q", got)
	}
	h.set(func(w http.ResponseWriter, id string) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":"json"}]}}`)
	})
	if got := rawText(t, ts, "h__echo", `{}`); got != "json" {
		t.Fatalf("JSON answer: %q", got)
	}

	bad := []struct {
		name   string
		answer func(w http.ResponseWriter, id string)
		want   string
	}{
		{"invalid JSON result", func(w http.ResponseWriter, id string) {
			sse(w, "data: {\"jsonrpc\":\"2.0\",\"id\":"+id+",\"result\":{\"content\":[}}\n\n")
		}, "not a JSON object"},
		{"result not an object", func(w http.ResponseWriter, id string) {
			sse(w, "data: {\"jsonrpc\":\"2.0\",\"id\":"+id+",\"result\":\"steer\"}\n\n")
		}, "no result object"},
		{"a smuggled second object", func(w http.ResponseWriter, id string) {
			sse(w, "data: {\"jsonrpc\":\"2.0\",\"id\":"+id+",\"result\":{}}{\"x\":1}\n\n")
		}, "not a JSON object"},
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
		}, `Content-Type "text/html"`},
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
		_, err := ts.CallRaw(ctxT(t), "h__echo", json.RawMessage(`{}`), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}

	// A JSON-RPC error answer comes back as a *jsonrpc.Error.
	h.set(func(w http.ResponseWriter, id string) {
		sse(w, "data: {\"jsonrpc\":\"2.0\",\"id\":"+id+",\"error\":{\"code\":-32602,\"message\":\"bad args\"}}\n\n")
	})
	_, err := ts.CallRaw(ctxT(t), "h__echo", json.RawMessage(`{}`), nil)
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
	if got := rawText(t, ts, "h__echo", `{}`); got != "after" {
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
	if got := rawText(t, ts, "h__echo", `{}`); got != "resumed" {
		t.Fatalf("resumed stream: %q", got)
	}
}

// TestCallRawCancel: a caller that gives up cancels the call upstream.
func TestCallRawCancel(t *testing.T) {
	h := newHostile(t)
	ts := open(t, []Server{remote("h", h.url, plugin.TransportStreamableHTTP)}, nil)
	if got := call(t, ts, "h__echo", map[string]any{"x": 1}); got != `{"x":1}` {
		t.Fatalf("echo %q", got)
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() {
		_, err := ts.CallRaw(ctx, "h__echo", json.RawMessage(`{"block":true}`), nil)
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
		t.Errorf("no notifications/cancelled for the raw request: %v", h.otherPosts())
	}
}

// TestCallRawReusesConnections: raw calls return their connection to the
// pool (the rest of each response stream is read), so a closed loop of
// calls does not dial one connection per call.
func TestCallRawReusesConnections(t *testing.T) {
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
	ts := open(t, []Server{remote("e", "http://"+ln.Addr().String()+"/mcp", plugin.TransportStreamableHTTP)}, nil)
	if got := call(t, ts, "e__echo", nil); got != "ok" {
		t.Fatalf("echo %q", got)
	}
	before := conns.Load()
	for range 200 {
		// As in a gateway: the call's context ends as soon as it returns
		// (the caller's HTTP request is answered).
		ctx, cancel := context.WithCancel(ctxT(t))
		b, err := ts.CallRaw(ctx, "e__echo", json.RawMessage(`{}`), nil)
		cancel()
		if err != nil || !strings.Contains(string(b), `"ok"`) {
			t.Fatalf("raw echo %s %v", b, err)
		}
	}
	// A call may start before the previous stream's end is read: a few
	// connections, not one a call.
	if n := conns.Load() - before; n > 8 {
		t.Errorf("200 raw calls opened %d connections", n)
	}
}

// TestCallRawRequestFlood: a server that floods the call's stream with
// server-to-client requests gets a bounded number of refusals, and the
// call still gets its answer.
func TestCallRawRequestFlood(t *testing.T) {
	h := newHostile(t)
	ts := open(t, []Server{remote("h", h.url, plugin.TransportStreamableHTTP)}, nil)
	if got := call(t, ts, "h__echo", map[string]any{"x": 1}); got != `{"x":1}` {
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
	if got := rawText(t, ts, "h__echo", `{}`); got != "done" {
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
