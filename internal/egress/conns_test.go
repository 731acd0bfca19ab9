package egress_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/egress"
)

// countingServer is an httptest server that counts the connections it
// accepted and the requests it served.
type countingServer struct {
	*httptest.Server
	conns, reqs atomic.Int64
}

func newCountingServer(t *testing.T, h http.HandlerFunc) *countingServer {
	t.Helper()
	s := &countingServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.reqs.Add(1)
		h(w, r)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func guardClient(t *testing.T, url string, opts *egress.Options) *http.Client {
	t.Helper()
	hc, err := egress.New(opts).Client(url, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

func post(t *testing.T, hc *http.Client, url, body string) (int, string, error) {
	t.Helper()
	resp, err := hc.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func echoHandler(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"method":%q,"body":%q}`, r.Method, b)
}

// Sequential requests share one connection, and every answer is the one
// its own request asked for.
func TestConnsReuseOneConnection(t *testing.T) {
	s := newCountingServer(t, echoHandler)
	hc := guardClient(t, s.URL, nil)
	for i := range 50 {
		want := fmt.Sprintf(`{"n":%d}`, i)
		code, got, err := post(t, hc, s.URL+"/mcp", want)
		if err != nil || code != 200 || got != fmt.Sprintf(`{"method":"POST","body":%q}`, want) {
			t.Fatalf("request %d: %d %q %v", i, code, got, err)
		}
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("50 sequential requests used %d connections, want 1", n)
	}
}

// An SSE answer sent in pieces is read whole, and its connection is used
// again once the stream ended.
func TestConnsStreamedAnswer(t *testing.T) {
	s := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "id: %d\ndata: {\"i\":%d}\n\n", i, i)
			w.(http.Flusher).Flush()
			time.Sleep(5 * time.Millisecond)
		}
	})
	hc := guardClient(t, s.URL, nil)
	for range 3 {
		_, got, err := post(t, hc, s.URL, `{}`)
		if err != nil {
			t.Fatal(err)
		}
		if want := "id: 0\ndata: {\"i\":0}\n\nid: 1\ndata: {\"i\":1}\n\nid: 2\ndata: {\"i\":2}\n\n"; got != want {
			t.Fatalf("stream %q, want %q", got, want)
		}
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("3 streams used %d connections, want 1", n)
	}
}

// Many callers at once each get their own answer.
func TestConnsConcurrentCallers(t *testing.T) {
	s := newCountingServer(t, echoHandler)
	hc := guardClient(t, s.URL, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 40 {
				want := fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
				resp, err := hc.Post(s.URL, "application/json", strings.NewReader(want))
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(b) != fmt.Sprintf(`{"method":"POST","body":%q}`, want) {
					errs <- fmt.Errorf("caller %d request %d: %q %v", g, i, b, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if r := s.reqs.Load(); r != 320 {
		t.Fatalf("server served %d requests, want 320", r)
	}
	if n := s.conns.Load(); n > 8 {
		t.Fatalf("8 callers used %d connections, want at most 8", n)
	}
}

// A connection the server closed while it was idle is not used: the next
// request goes on a new one and reaches the server once.
func TestConnsServerClosedIdleConnection(t *testing.T) {
	s := newCountingServer(t, echoHandler)
	hc := guardClient(t, s.URL, nil)
	if _, _, err := post(t, hc, s.URL, `{"a":1}`); err != nil {
		t.Fatal(err)
	}
	s.CloseClientConnections() // the server drops the idle connection
	time.Sleep(20 * time.Millisecond)
	code, got, err := post(t, hc, s.URL, `{"a":2}`)
	if err != nil || code != 200 || !strings.Contains(got, `{\"a\":2}`) {
		t.Fatalf("after the server closed the idle connection: %d %q %v", code, got, err)
	}
	if r, n := s.reqs.Load(), s.conns.Load(); r != 2 || n != 2 {
		t.Fatalf("server saw %d requests on %d connections, want 2 on 2", r, n)
	}
}

// rawServer accepts connections on 127.0.0.1 and hands each to serve,
// which reads requests with http.ReadRequest and writes answers by hand.
func rawServer(t *testing.T, serve func(n int, c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	wg.Go(func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				serve(n, c, bufio.NewReader(c))
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "http://" + ln.Addr().String()
}

// A server that reads a request on a reused connection and closes it
// without answering may have acted on it: a POST is not sent again (the
// caller gets an error and the server saw it once), a GET is (as the
// Transport does).
func TestConnsNoResendOfAPostTheServerMayHaveRun(t *testing.T) {
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		t.Run(method, func(t *testing.T) {
			var seen atomic.Int64
			url := rawServer(t, func(n int, c net.Conn, br *bufio.Reader) {
				for i := 0; ; i++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					if req.URL.Path == "/effect" {
						seen.Add(1)
						if n == 0 && i == 1 {
							return // read it, then gone without an answer
						}
					}
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			})
			hc := guardClient(t, url, nil)
			if _, _, err := post(t, hc, url+"/warm", `{}`); err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(method, url+"/effect", nil)
			if method == http.MethodPost {
				req.Body = io.NopCloser(strings.NewReader(`{"effect":1}`)) // no GetBody: not replayable
				req.ContentLength = 12
			}
			resp, err := hc.Do(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			switch method {
			case http.MethodPost:
				if err == nil || seen.Load() != 1 {
					t.Fatalf("POST: err %v, server ran it %d times; want an error and 1", err, seen.Load())
				}
			case http.MethodGet:
				if err != nil || seen.Load() != 2 {
					t.Fatalf("GET: err %v, server saw it %d times; want the answer of a second try", err, seen.Load())
				}
			}
		})
	}
}

// Cancelling the request's context ends a read blocked on an endless
// stream with the context's error, and the connection is not used again.
func TestConnsCancelEndsABlockedRead(t *testing.T) {
	release := make(chan struct{})
	s := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {}\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		echoHandler(w, r)
	})
	defer close(release)
	hc := guardClient(t, s.URL, nil)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/stream", nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64)
	n, err := resp.Body.Read(buf)
	if err != nil || string(buf[:n]) != "data: {}\n\n" {
		t.Fatalf("first event %q %v", buf[:n], err)
	}
	time.AfterFunc(20*time.Millisecond, cancel)
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(resp.Body)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("blocked read ended with %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancel did not end the blocked read")
	}
	if _, _, err := post(t, hc, s.URL, `{}`); err != nil {
		t.Fatal(err)
	}
	if n := s.conns.Load(); n != 2 {
		t.Fatalf("a request after a cancelled stream used %d connections in all, want 2 (the cancelled one closed)", n)
	}
}

// Closing a body before its end closes its connection (a Read blocked on
// it returns), and the next request dials a new one.
func TestConnsCloseBeforeTheEnd(t *testing.T) {
	s := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			fmt.Fprint(w, strings.Repeat("x", 100))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		echoHandler(w, r)
	})
	hc := guardClient(t, s.URL, nil)
	resp, err := hc.Get(s.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(buf)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	resp.Body.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a read after Close returned no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the blocked read")
	}
	if _, err := resp.Body.Read(buf); err == nil {
		t.Fatal("Read after Close returned no error")
	}
	if _, _, err := post(t, hc, s.URL, `{}`); err != nil {
		t.Fatal(err)
	}
	if n := s.conns.Load(); n != 2 {
		t.Fatalf("used %d connections, want 2", n)
	}
}

// An answer with Connection: close is not followed by a reuse.
func TestConnsConnectionClose(t *testing.T) {
	s := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		echoHandler(w, r)
	})
	hc := guardClient(t, s.URL, nil)
	for range 3 {
		if code, _, err := post(t, hc, s.URL, `{}`); err != nil || code != 200 {
			t.Fatal(code, err)
		}
	}
	if n := s.conns.Load(); n != 3 {
		t.Fatalf("3 answers with Connection: close used %d connections, want 3", n)
	}
}

// Informational answers are skipped; response headers over the base
// transport's MaxResponseHeaderBytes are refused.
func TestConnsInformationalAndHeaderLimit(t *testing.T) {
	url := rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			switch req.URL.Path {
			case "/hints":
				fmt.Fprint(c, "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal")
			case "/huge":
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nX-Big: %s\r\nContent-Length: 0\r\n\r\n", strings.Repeat("a", 8192))
			}
		}
	})
	hc := guardClient(t, url, &egress.Options{Transport: &http.Transport{MaxResponseHeaderBytes: 2048}})
	code, got, err := post(t, hc, url+"/hints", `{}`)
	if err != nil || code != 200 || got != "final" {
		t.Fatalf("after a 103: %d %q %v", code, got, err)
	}
	if _, _, err := post(t, hc, url+"/huge", `{}`); err == nil || !strings.Contains(err.Error(), "exceed") {
		t.Fatalf("8 KiB of headers over a 2 KiB limit: %v, want a refusal", err)
	}
}

// The guard still decides every dial: with a host list, a plain-HTTP
// request to an unlisted loopback address is refused and never sent.
func TestConnsDialStillGuarded(t *testing.T) {
	s := newCountingServer(t, echoHandler)
	hc, err := egress.New(&egress.Options{AllowedHosts: []string{"mcp.test"}}).Client("http://mcp.test/mcp", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.CloseIdleConnections()
	_, err = hc.Post(s.URL, "application/json", strings.NewReader(`{}`))
	var ee *egress.Error
	if !errors.As(err, &ee) {
		t.Fatalf("a request to an unlisted loopback address: %v, want an *egress.Error", err)
	}
	if s.reqs.Load() != 0 {
		t.Fatal("the server was reached")
	}
}

// A server that answers before it read the whole request (a 413 for a body
// too large), then stops reading and closes, fails the request's write;
// the caller still gets that answer, not the write's error, as from the
// Transport. Both a net/http server and one that closes at once (its
// unread bytes reset the connection) are tried, each twice in a row (the
// second on a fresh connection: the first is not kept).
func TestConnsAnswerBeforeTheBodyIsRead(t *testing.T) {
	const big = 8 << 20 // past what the sockets' buffers take
	servers := map[string]func(t *testing.T) string{
		"net/http": func(t *testing.T) string {
			return newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			}).URL
		},
		"closes at once": func(t *testing.T) string {
			return rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				fmt.Fprintf(c, "HTTP/1.1 413 Request Entity Too Large\r\nConnection: close\r\nContent-Length: 15\r\n\r\nbody too large\n")
			})
		},
	}
	for name, start := range servers {
		t.Run(name, func(t *testing.T) {
			url := start(t)
			hc := guardClient(t, url, nil)
			for i := range 2 {
				code, got, err := post(t, hc, url+"/mcp", strings.Repeat("x", big))
				if err != nil || code != http.StatusRequestEntityTooLarge || got != "body too large\n" {
					t.Fatalf("request %d: %d %q, %v; want the server's 413", i, code, got, err)
				}
			}
		})
	}
}
