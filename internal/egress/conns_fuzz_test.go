package egress

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzConnsAnswer sends one request through conns to a server that answers
// with the fuzzed bytes and hangs up, then a second request on whatever
// connection the first one left (a pipe: no peek, so a kept connection is
// found closed by the write, which sends the request again on a new one):
// neither may hang or panic, a body is never longer than what was sent, and
// the first answer's leftovers never reach the second.
func FuzzConnsAnswer(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n10\r\ndata: {\"a\":1}\n\n\r\n0\r\n\r\n",
		"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
		"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"garbage\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 3000) + "\r\n\r\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, answer []byte) {
		dials := 0
		c := &conns{maxIdle: 2, maxHeader: 2048, every: time.Hour}
		c.dial = func(ctx context.Context, _, _ string) (net.Conn, error) {
			dials++
			client, server := net.Pipe()
			n := dials
			go func() {
				defer server.Close()
				br := bufio.NewReader(server)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					reply := answer
					if n > 1 || req.URL.Path == "/second" {
						reply = []byte("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecond")
					}
					if _, err := server.Write(reply); err != nil || n == 1 {
						return // the first server answers once and hangs up
					}
				}
			}()
			return client, nil
		}
		defer c.closeIdle()
		send := func(path string) (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://up.test"+path, strings.NewReader(`{}`))
			resp, err := c.roundTrip(req)
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			return string(b), err
		}
		if got, err := send("/first"); err == nil && len(got) > len(answer) {
			t.Fatalf("a body of %d bytes from an answer of %d", len(got), len(answer))
		}
		got, err := send("/second")
		if err != nil {
			// The first answer may have left the connection unusable in a
			// way only the second request finds (a server that answers
			// twice); a fresh connection must then work.
			if got, err = send("/second"); err != nil {
				t.Fatalf("a third request on a fresh connection: %v", err)
			}
		}
		if got != "second" {
			t.Fatalf("the second request read %q: the first answer's bytes leaked into it", got)
		}
	})
}
