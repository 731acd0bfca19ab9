package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tapped wraps an upstream transport so that every notification
// is handed to tap as it is read, in wire order: the go-sdk client queues
// notifications for a handler goroutine while it hands responses over at
// once, so a handler could see a call's progress after the call returned
// (and after a relay answered the call's caller). A nil tap taps nothing.
//
// Streamable HTTP connections are not wrapped: the go-sdk tells its own
// connection type when the session is initialized (an unexported method a
// wrapper cannot forward), and without that the connection never opens
// its standalone SSE stream (no resources/updated, no list_changed) and
// sends no negotiated Mcp-Protocol-Version header. Their messages are
// tapped in the HTTP response bodies instead (sseTap), which is the same
// wire order. Stdio connections are not wrapped either: their Pipe's
// reader taps, in wire order with the pipe's answers (see Pipe).
type Tapped struct {
	Inner mcp.Transport
	Tap   func(method string, params json.RawMessage)

	pipe *Pipe // of the last connection made
}

// Pipe returns the Pipe of the connection Connect made last (a stdio
// server's), or nil.
func (r *Tapped) Pipe() *Pipe { return r.pipe }

func (r *Tapped) Connect(ctx context.Context) (mcp.Connection, error) {
	inner := r.Inner
	if d, ok := inner.(*Detached); ok {
		if st, ok := d.Inner.(*mcp.StreamableClientTransport); ok {
			// The streamable client detaches its connection from ctx itself;
			// and only its own connection is told of the initialize result,
			// on which it opens its standalone SSE stream (a wrapped one never
			// is: no GET, no server-initiated messages).
			inner = st
		}
	}
	if st, ok := inner.(*stdioTransport); ok {
		// Its Pipe's reader taps, in wire order with the pipe's answers.
		c, err := st.connect(ctx, r.Tap)
		r.pipe = PipeOf(c)
		return c, err
	}
	if r.Tap == nil {
		c, err := inner.Connect(ctx)
		r.pipe = PipeOf(c)
		return c, err
	}
	if st, ok := inner.(*mcp.StreamableClientTransport); ok {
		cp := *st
		base := http.DefaultClient
		if st.HTTPClient != nil {
			base = st.HTTPClient
		}
		hc := *base
		rt := hc.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		hc.Transport = &sseTap{base: rt, tap: r.Tap}
		cp.HTTPClient = &hc
		return cp.Connect(ctx)
	}
	c, err := inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	r.pipe = PipeOf(c)
	return &tappedConn{Connection: c, tap: r.Tap}, nil
}

type tappedConn struct {
	mcp.Connection
	tap func(method string, params json.RawMessage)
}

func (c *tappedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return msg, err
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.IsCall() {
		return msg, nil
	}
	c.tap(req.Method, req.Params)
	return msg, nil
}

// sseTap taps the notifications of a streamable HTTP upstream as the
// go-sdk reads them from a response body (an SSE stream).
type sseTap struct {
	base http.RoundTripper
	tap  func(method string, params json.RawMessage)
}

func (s *sseTap) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if ct := resp.Header.Get("Content-Type"); len(ct) >= 17 && ct[:17] == "text/event-stream" {
		resp.Body = &tapBody{ReadCloser: resp.Body, tap: s}
	}
	return resp, nil
}

// tapBody scans SSE lines as they are read; each event's data is tapped
// when the blank line ending it has been read.
type tapBody struct {
	io.ReadCloser
	tap  *sseTap
	line []byte // the incomplete last line
	data []byte // the current event's data
}

// maxTapLine bounds what is buffered of one line; a longer line (a large
// result) is not a notification worth routing and is skipped.
const maxTapLine = 1 << 20

func (b *tapBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	chunk := p[:n]
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			if len(b.line)+len(chunk) <= maxTapLine {
				b.line = append(b.line, chunk...)
			} else {
				b.line = append(b.line[:0], 0) // poisoned: not a data line
			}
			break
		}
		var line []byte
		if len(b.line) > 0 {
			b.line = append(b.line, chunk[:i]...)
			line = b.line
		} else {
			line = chunk[:i]
		}
		b.onLine(bytes.TrimSuffix(line, []byte("\r")))
		b.line = b.line[:0]
		chunk = chunk[i+1:]
	}
	return n, err
}

var (
	dataPrefix   = []byte("data:")
	notification = []byte(`"notifications/`)
)

func (b *tapBody) onLine(line []byte) {
	if len(line) == 0 {
		if len(b.data) > 0 {
			b.route(b.data)
			b.data = b.data[:0]
		}
		return
	}
	if !bytes.HasPrefix(line, dataPrefix) {
		return
	}
	v := bytes.TrimPrefix(line[len(dataPrefix):], []byte(" "))
	if len(b.data) > 0 {
		b.data = append(b.data, '\n')
	}
	if len(b.data)+len(v) <= maxTapLine {
		b.data = append(b.data, v...)
	}
}

func (b *tapBody) route(data []byte) {
	if !bytes.Contains(data, notification) {
		return // responses and requests pass untouched
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(data, &m) != nil || len(m.ID) > 0 {
		return
	}
	b.tap.tap(m.Method, m.Params)
}
