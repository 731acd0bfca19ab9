package front

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/internal/rawio"
)

// bound is how long a test waits for the server to act: generous, never
// asserted as a duration.
const bound = 20 * time.Second

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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

// frontHandler answers what a test checks: the request as the handler
// saw it, an answer flushed in two pieces, no body, an unread body, or a
// panic.
func frontHandler(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/flush":
		_, _ = io.WriteString(w, "first ")
		w.(http.Flusher).Flush()
		_, _ = io.WriteString(w, "second")
	case "/ignore":
		_, _ = io.WriteString(w, "body ignored")
	case "/204":
		w.WriteHeader(http.StatusNoContent)
	case "/panic":
		panic("boom")
	case "/big":
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(bytes.Repeat([]byte("x"), answerBuffer+100))
	case "/length":
		w.Header().Set("Content-Length", "5")
		_, _ = io.WriteString(w, "hello")
	default:
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %q %v host=%s te=%v close=%v", r.Method, r.URL.RequestURI(), b, err, r.Host, r.TransferEncoding, r.Close)
	}
}

// listenServe listens on 127.0.0.1 and serves it with serve in a
// goroutine; what serve returns arrives on the channel.
func listenServe(t testing.TB, serve func(net.Listener) error) (string, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- serve(ln) }()
	return ln.Addr().String(), done
}

// startFront serves h with a front before an http.Server on 127.0.0.1
// and returns its address and the front.
func startFront(t testing.TB, h http.Handler) (string, *Server) {
	t.Helper()
	hs := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	f := New(hs, Timeouts{ReadHeader: time.Minute, Read: time.Minute, Idle: time.Minute})
	addr, done := listenServe(t, f.Serve)
	t.Cleanup(func() {
		f.Close()
		_ = hs.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return addr, f
}

// startNetHTTP serves h with net/http's server alone.
func startNetHTTP(t testing.TB, h http.Handler) string {
	t.Helper()
	hs := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	addr, done := listenServe(t, hs.Serve)
	t.Cleanup(func() {
		_ = hs.Close()
		<-done
	})
	return addr
}

// exchange writes raw on a new connection to addr, closes its writing
// half, and returns the answers read until the server closes: each as
// "status|Content-Type|body", or what could not be parsed.
func exchange(t testing.TB, addr string, raw []byte) []string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(bound))
	// A server that answers before it read everything may close while
	// this still writes: what it answered is read all the same.
	_, _ = c.Write(raw)
	_ = c.(*net.TCPConn).CloseWrite()
	all, _ := io.ReadAll(c)
	var out []string
	br := bufio.NewReader(bytes.NewReader(all))
	for {
		if _, err := br.Peek(1); err != nil {
			return out
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return append(out, "unparsable: "+err.Error())
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return append(out, "body: "+err.Error())
		}
		out = append(out, fmt.Sprintf("%d|%s|%s", resp.StatusCode, resp.Header.Get("Content-Type"), body))
	}
}

// frontCases are requests as bytes on one connection: what a client
// sends, and every way a request can be wrong or unusual.
var frontCases = map[string]string{
	"post":             "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:1\r\nContent-Length: 2\r\n\r\n{}",
	"two pipelined":    "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nxPOST /b?q=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nyz!",
	"post then get":    "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nxGET /b HTTP/1.1\r\nHost: h\r\n\r\n",
	"get first":        "GET /a HTTP/1.1\r\nHost: h\r\n\r\nPOST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx",
	"delete":           "DELETE /mcp HTTP/1.1\r\nHost: h\r\n\r\n",
	"chunked":          "POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	"length and te":    "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	"two lengths":      "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
	"bad length":       "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n",
	"no host":          "POST /mcp HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
	"two hosts":        "POST /mcp HTTP/1.1\r\nHost: a\r\nHost: b\r\nContent-Length: 0\r\n\r\n",
	"bad host":         "POST /mcp HTTP/1.1\r\nHost: a b\r\nContent-Length: 0\r\n\r\n",
	"host with path":   "POST /mcp HTTP/1.1\r\nHost: a/b\r\nContent-Length: 0\r\n\r\n",
	"control in value": "POST /mcp HTTP/1.1\r\nHost: h\r\nX-A: a\x01b\r\nContent-Length: 0\r\n\r\n",
	"bad name":         "POST /mcp HTTP/1.1\r\nHost: h\r\nX A: b\r\nContent-Length: 0\r\n\r\n",
	"http/1.0":         "POST /mcp HTTP/1.0\r\nHost: h\r\nContent-Length: 1\r\n\r\nx",
	"http/2 line":      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	"expect":           "POST /mcp HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx",
	"upgrade":          "POST /mcp HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nContent-Length: 0\r\n\r\n",
	"connection close": "POST /a HTTP/1.1\r\nHost: h\r\nConnection: close\r\nContent-Length: 1\r\n\r\nxPOST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\ny",
	"absolute uri":     "POST http://h/mcp HTTP/1.1\r\nHost: other\r\nContent-Length: 0\r\n\r\n",
	"garbage":          "HELLO\r\n\r\n",
	"crlf after post":  "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx\r\nPOST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\ny",
	"unread body":      "POST /ignore HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhelloPOST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\ny",
	"flushed":          "POST /flush HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\nPOST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\ny",
	"no content":       "POST /204 HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\nPOST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\ny",
	"big answer":       "POST /big HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\nPOST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\ny",
	"own length":       "POST /length HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\nPOST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\ny",
	"panic":            "POST /panic HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\nPOST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\ny",
	"short body":       "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc",
	"folded header":    "POST /mcp HTTP/1.1\r\nHost: h\r\nX-A: a\r\n b\r\nContent-Length: 0\r\n\r\n",
	"lower-case names": "POST /mcp HTTP/1.1\r\nhost: h\r\ncontent-length: 1\r\nconnection: keep-alive\r\n\r\nx",
}

// TestFrontAnswersAsNetHTTP: every request of frontCases gets from the
// front the answers net/http's server gives it (status, type and body,
// in order), whether the front served it or handed it on; and the plain
// ones were served by the front itself.
func TestFrontAnswersAsNetHTTP(t *testing.T) {
	h := http.HandlerFunc(frontHandler)
	front, f := startFront(t, h)
	plain := startNetHTTP(t, h)
	for name, raw := range frontCases {
		want := exchange(t, plain, []byte(raw))
		got := exchange(t, front, []byte(raw))
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", name, got, want)
		}
	}
	// A 1 MiB header is too long for both: net/http answers 431.
	long := "POST /mcp HTTP/1.1\r\nHost: h\r\nX-Long: " + strings.Repeat("a", 1<<20+8192) + "\r\nContent-Length: 0\r\n\r\n"
	if got, want := exchange(t, front, []byte(long)), exchange(t, plain, []byte(long)); len(got) != 1 || got[0] != want[0] || !strings.HasPrefix(got[0], "431|") {
		t.Errorf("a header over the limit: got %q, want %q (431)", got, want)
	}
	// The plain requests were the front's, the rest net/http's.
	served, handed := f.Served(), f.Handed()
	before := served
	if got := exchange(t, front, []byte(frontCases["two pipelined"])); len(got) != 2 {
		t.Fatalf("two pipelined: %q", got)
	}
	if n := f.Served() - before; n != 2 {
		t.Errorf("two plain requests: %d served by the front, want 2", n)
	}
	if handed == 0 || served == 0 {
		t.Errorf("served %d, handed %d: the cases should take both ways", served, handed)
	}
}

// FuzzFrontAnswersAsNetHTTP: any bytes get from the front what they get
// from net/http's server.
func FuzzFrontAnswersAsNetHTTP(f *testing.F) {
	for _, raw := range frontCases {
		f.Add([]byte(raw))
	}
	h := http.HandlerFunc(frontHandler)
	front, _ := startFront(f, h)
	plain := startNetHTTP(f, h)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 64<<10 {
			return
		}
		want := exchange(t, plain, raw)
		got := exchange(t, front, raw)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%q:\n got %q\nwant %q", raw, got, want)
		}
	})
}

// TestFrontClientGoneCancels: a client that goes away during a long
// request cancels the request's context, as under net/http, though the
// front watches the connection only once the request runs long.
func TestFrontClientGoneCancels(t *testing.T) {
	entered, cancelled := make(chan struct{}), make(chan error, 1)
	addr, f := startFront(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		close(entered)
		select {
		case <-r.Context().Done():
			cancelled <- r.Context().Err()
		case <-time.After(bound):
			cancelled <- errors.New("still running")
		}
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}")
	<-entered
	c.Close()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Errorf("the request of a client gone: %v", err)
	}
	if f.Served() != 1 {
		t.Errorf("the front served %d requests, want 1", f.Served())
	}
}

// TestFrontPipelinedDuringLongRequest: a request sent while the one
// before it runs long (the front then watches the connection and reads
// the next request's first byte) is served whole, after it.
func TestFrontPipelinedDuringLongRequest(t *testing.T) {
	addr, f := startFront(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/slow" {
			time.Sleep(4 * watchAfter)
		}
		fmt.Fprintf(w, "%s:%s", r.URL.Path, b)
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	_, _ = io.WriteString(c, "POST /slow HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\na")
	time.Sleep(2 * watchAfter) // the watcher reads now
	_, _ = io.WriteString(c, "POST /next HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nb")
	for _, want := range []string{"/slow:a", "/next:b"} {
		_ = c.SetReadDeadline(time.Now().Add(bound))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("want %q: %v", want, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if string(body) != want {
			t.Errorf("got %q, want %q", body, want)
		}
	}
	if n := f.Served(); n != 2 {
		t.Errorf("the front served %d requests, want 2", n)
	}
}

// TestFrontShutdown: Shutdown closes an idle connection at once, lets a
// request in flight finish and answer, and then Serve returns
// http.ErrServerClosed.
func TestFrontShutdown(t *testing.T) {
	release, entered := make(chan struct{}), make(chan struct{}, 1)
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			entered <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "done "+r.URL.Path)
	})}
	f := New(hs, Timeouts{ReadHeader: time.Minute, Read: time.Minute, Idle: time.Minute})
	addr, served := listenServe(t, f.Serve)
	defer hs.Close()
	idle := dial(t, addr)
	ibr := bufio.NewReader(idle)
	if got := roundTrip(t, idle, ibr, "POST /first HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"); got != http.StatusOK {
		t.Fatalf("first request: %d", got)
	}
	busy := dial(t, addr)
	_, _ = io.WriteString(busy, "POST /hold HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
	<-entered
	silent := dial(t, addr) // connected, nothing sent yet
	shut := make(chan error, 1)
	go func() { shut <- f.Shutdown(context.Background()) }()
	if !closedByServer(idle) {
		t.Error("the idle connection stayed open during Shutdown")
	}
	if !closedByServer(silent) {
		t.Error("a connection that sent nothing stayed open during Shutdown")
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned with a request in flight: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	_ = busy.SetReadDeadline(time.Now().Add(bound))
	resp, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatalf("the request in flight: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "done /hold" {
		t.Errorf("the request in flight answered %q", body)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve: %v", err)
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("the listener still accepts after Shutdown")
	}
}

// TestFrontReadTimeoutEndsWithTheBody: the read deadline (Timeouts.Read)
// bounds reading a request, not running it: a request whose body has been
// read runs on past it and is answered, as under net/http's ReadTimeout.
func TestFrontReadTimeoutEndsWithTheBody(t *testing.T) {
	const read = 2 * watchAfter
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
			_, _ = io.WriteString(w, "cancelled")
		case <-time.After(4 * read):
			_, _ = io.WriteString(w, "ran on")
		}
	})
	hs := &http.Server{Handler: h, ReadTimeout: read}
	f := New(hs, Timeouts{ReadHeader: time.Minute, Read: read, Idle: time.Minute})
	front, done := listenServe(t, f.Serve)
	plain := &http.Server{Handler: h, ReadTimeout: read}
	bare, bareDone := listenServe(t, plain.Serve)
	defer func() {
		f.Close()
		_ = hs.Close()
		_ = plain.Close()
		<-done
		<-bareDone
	}()
	for _, addr := range []string{front, bare} {
		for _, req := range []string{
			"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}",
			"DELETE /mcp HTTP/1.1\r\nHost: h\r\n\r\n",
		} {
			c := dial(t, addr)
			_, _ = io.WriteString(c, req)
			_ = c.SetReadDeadline(time.Now().Add(bound))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("%s: %v", addr, err)
			}
			body, _ := io.ReadAll(resp.Body)
			if string(body) != "ran on" {
				t.Errorf("%s %q: %q, want the request run to its end", addr, req[:4], body)
			}
		}
	}
	if f.Served() != 2 {
		t.Errorf("the front served %d requests, want 2", f.Served())
	}
}

// wrapped is a listener's wrapper that gives its connection (the cap's).
type wrapped struct{ net.Conn }

func (w wrapped) NetConn() net.Conn { return w.Conn }

// TestFrontReadsTheSocketRaw: a TCP connection, bare or under a wrapper
// with NetConn, is read and written with raw system calls (on Linux);
// anything else is used as it is.
func TestFrontReadsTheSocketRaw(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			io.Copy(io.Discard, c)
		}
	}()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, c := range []net.Conn{d, wrapped{d}, wrapped{wrapped{d}}} {
		got := socket(c)
		_, raw := got.(*rawio.Conn)
		if raw != (runtime.GOOS == "linux") {
			t.Errorf("socket(%T) = %T", c, got)
		}
		if !raw && got != c {
			t.Errorf("socket(%T) = %T; want c itself", c, got)
		}
	}
	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	if got := socket(wrapped{p1}); got != (wrapped{p1}) {
		t.Errorf("socket of a pipe = %T; want it as it is", got)
	}
}
