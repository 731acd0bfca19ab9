package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bound is how long a test waits for the server to act: generous, never
// asserted as a duration.
const bound = 20 * time.Second

// serveLimited serves s's handler (tokens as in tokens) with limits on
// 127.0.0.1 and returns the MCP URL, the listener's address and the server.
func serveLimited(t *testing.T, s *Server, limits *HTTPLimits) (string, string, *HTTPServer) {
	t.Helper()
	h, err := s.Handler(&HTTPOptions{Verifier: verifier})
	if err != nil {
		t.Fatal(err)
	}
	hs, err := NewHTTPServer(h, limits)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	t.Cleanup(func() {
		_ = s.Close()
		_ = hs.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	addr := ln.Addr().String()
	return "http://" + addr + "/mcp", addr, hs
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer reads c until the server closes it (EOF or a reset) and
// reports whether it did within bound.
func closedByServer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(bound))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

func newPlainServer(t *testing.T) *Server {
	t.Helper()
	s, err := New(Options{Tools: testTools(&effects{}, nil), Identify: identify, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSlowClientsAreCutOff: a client that sends its headers a byte at a
// time, or its body never, loses its connection (ReadTimeout), instead of
// holding a connection and a goroutine for as long as it likes.
func TestSlowClientsAreCutOff(t *testing.T) {
	_, addr, _ := serveLimited(t, newPlainServer(t), &HTTPLimits{ReadTimeout: time.Second})
	t.Run("headers", func(t *testing.T) {
		c := dial(t, addr)
		stop := make(chan struct{})
		defer close(stop)
		go func() { // one header byte every 200ms, forever
			_, _ = io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: x\r\nX-Slow: ")
			for {
				select {
				case <-stop:
					return
				case <-time.After(200 * time.Millisecond):
				}
				if _, err := c.Write([]byte("a")); err != nil {
					return
				}
			}
		}()
		if !closedByServer(c) {
			t.Fatal("a client sending its headers slowly kept its connection")
		}
	})
	t.Run("body", func(t *testing.T) {
		c := dial(t, addr)
		_, _ = fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok-alice\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":")
		if !closedByServer(c) {
			t.Fatal("a client that never finishes its body kept its connection")
		}
	})
}

// initReq is a raw HTTP/1.1 initialize request with token ("" for none).
func initReq(token string) string {
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", auth, len(body), body)
}

// roundTrip writes req on c and reads the response's status (the body
// read to its end).
func roundTrip(t *testing.T, c net.Conn, br *bufio.Reader, req string) int {
	t.Helper()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(bound))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestIdleUnauthenticatedConnClosed: a keep-alive connection whose only
// request was refused (no token) is closed after
// UnauthenticatedIdleTimeout; one that authenticated stays open well past
// it.
func TestIdleUnauthenticatedConnClosed(t *testing.T) {
	const unauth = 300 * time.Millisecond
	_, addr, _ := serveLimited(t, newPlainServer(t), &HTTPLimits{IdleTimeout: time.Hour, UnauthenticatedIdleTimeout: unauth})
	anon := dial(t, addr)
	if code := roundTrip(t, anon, bufio.NewReader(anon), initReq("")); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d, want 401", code)
	}
	if !closedByServer(anon) {
		t.Fatal("an idle unauthenticated keep-alive connection was kept open")
	}

	authed := dial(t, addr)
	br := bufio.NewReader(authed)
	if code := roundTrip(t, authed, br, initReq("tok-alice")); code != http.StatusOK {
		t.Fatalf("with a token: %d", code)
	}
	time.Sleep(10 * unauth)
	if code := roundTrip(t, authed, br, initReq("tok-alice")); code != http.StatusOK {
		t.Fatalf("the authenticated connection, reused: %d", code)
	}
}

// TestConnectionFloodHeldAtCap: connections beyond MaxConns wait (the
// listener accepts no more) while a client already connected keeps being
// served; when one closes, the next is served.
func TestConnectionFloodHeldAtCap(t *testing.T) {
	const max = 4
	_, addr, hs := serveLimited(t, newPlainServer(t), &HTTPLimits{MaxConns: max, ReadHeaderTimeout: time.Minute, ReadTimeout: time.Minute})
	// The client already connected: a keep-alive connection with a token.
	client := dial(t, addr)
	cr := bufio.NewReader(client)
	if code := roundTrip(t, client, cr, initReq("tok-alice")); code != http.StatusOK {
		t.Fatalf("initialize: %d", code)
	}
	waitConns := func(n int) {
		t.Helper()
		deadline := time.Now().Add(bound)
		for hs.OpenConns() != n {
			if time.Now().After(deadline) {
				t.Fatalf("%d connections open, want %d", hs.OpenConns(), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	var flood []net.Conn
	for range max - 1 {
		flood = append(flood, dial(t, addr))
	}
	waitConns(max)
	extra := dial(t, addr)
	if _, err := io.WriteString(extra, "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = extra.SetReadDeadline(time.Now().Add(time.Second))
	if n, err := extra.Read(make([]byte, 1)); n > 0 || err == nil {
		t.Fatal("a connection beyond MaxConns was served")
	}
	if n := hs.OpenConns(); n != max {
		t.Fatalf("%d connections open, cap %d", n, max)
	}
	if code := roundTrip(t, client, cr, initReq("tok-alice")); code != http.StatusOK {
		t.Fatalf("the connected client was not served: %d", code)
	}
	flood[0].Close()
	_ = extra.SetReadDeadline(time.Now().Add(bound))
	resp, err := http.ReadResponse(bufio.NewReader(extra), nil)
	if err != nil {
		t.Fatalf("the waiting connection was not served once a slot freed: %v", err)
	}
	resp.Body.Close()
}

// TestStreamsOutliveTheTimeouts: with read and write timeouts of 500ms, a
// tools/call whose SSE answer streams progress for 2s is delivered whole,
// and the session's standalone GET stream still carries a notification
// after it.
func TestStreamsOutliveTheTimeouts(t *testing.T) {
	slow := SDKTool(&mcp.Tool{Name: "slow"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		for i := range 8 {
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-time.After(250 * time.Millisecond):
			}
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i + 1), Total: 8}); err != nil {
				return nil, nil, err
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	s, err := New(Options{Tools: map[string]Tool{"slow": slow}, Identify: identify, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	url, _, _ := serveLimited(t, s, &HTTPLimits{ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond})
	var progress atomic.Int32
	changed := make(chan struct{}, 1)
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearer{token: "tok-alice", base: tr}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}}
	params.SetProgressToken("p")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "done" {
		t.Fatalf("the long call: %+v %v", res, err)
	}
	// The client hands notifications to their handler on its own
	// goroutines: the last may be counted just after the answer.
	for deadline := time.Now().Add(bound); progress.Load() < 8 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := progress.Load(); n != 8 {
		t.Errorf("%d progress notifications arrived, want 8", n)
	}
	// The standalone stream has been open since Connect, longer than
	// both timeouts: it still delivers.
	s.MCPServer().AddTool(&mcp.Tool{Name: "later", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	select {
	case <-changed:
	case <-time.After(bound):
		t.Fatal("the standalone stream delivered nothing after the timeouts")
	}
}

// TestHTTPLimitsRefused: a negative limit is an error naming it.
func TestHTTPLimitsRefused(t *testing.T) {
	for _, l := range []HTTPLimits{{ReadTimeout: -1}, {WriteTimeout: -1}, {IdleTimeout: -1}, {ReadHeaderTimeout: -1}, {UnauthenticatedIdleTimeout: -1}, {MaxConns: -1}} {
		_, err := NewHTTPServer(http.NotFoundHandler(), &l)
		if !errors.Is(err, ErrInvalidLimits) || !strings.Contains(err.Error(), "negative") {
			t.Errorf("%+v: %v", l, err)
		}
	}
}

// TestMaxSessionsPerSubjectRefused: a negative cap is an invalid option.
func TestMaxSessionsPerSubjectRefused(t *testing.T) {
	_, err := New(Options{MaxSessionsPerSubject: -1, Logger: quietLogger()})
	if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "MaxSessionsPerSubject") {
		t.Fatalf("%v", err)
	}
}
