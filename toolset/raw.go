package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/jsonscan"
	"github.com/gatehouse-dev/gatehouse/plugin"
)

// ErrNoRawPath is returned by CallRaw, before anything is sent, when the
// tool's server cannot be called with bytes: use Call.
var ErrNoRawPath = errors.New("toolset: no raw path to this tool's server")

// ErrStreamEnded is the error (inside an *Error) of Call and CallRaw when
// the server ended the call's response stream without answering and
// without an event ID to resume it by: the call may still be running
// there, and its answer, if any, goes nowhere the toolset listens. A
// gateway mirrors it to its caller (it ends the caller's stream the same
// way).
var ErrStreamEnded = errors.New("toolset: the server ended the response stream without answering, with no event ID to resume it")

// maxRawMessage bounds one upstream message read by CallRaw (the go-sdk's
// DefaultMaxEventSize).
const maxRawMessage = mcp.DefaultMaxEventSize

// maxResumes bounds how often CallRaw resumes a response stream the server
// closed before answering (Last-Event-ID).
const maxResumes = 3

// CallRaw calls the tool registered under name like Call, but hands the
// arguments to the server and its result back as bytes, never decoding
// them: args is a JSON object's bytes (or nil) and meta a JSON object's
// bytes (or nil) sent as the call's _meta as they are (the caller removes
// keys it must not forward). The result is the server's JSON-RPC "result"
// object exactly as sent, checked to be one valid JSON object.
//
// It serves only what can go without the go-sdk's client: a streamable
// HTTP server whose shared session is up and speaks a revision with
// sessions (2025-11-25 and earlier). For any other tool, or one whose
// server was woken from the store and not yet re-listed, it returns an
// error wrapping ErrNoRawPath before sending anything: use Call.
//
// The rest is as Call for a caller with no upstream session of its own: a
// lost session (404) is re-established once through the drift checks and
// the call sent again; cancelling ctx sends notifications/cancelled; a
// response stream the server closes before answering is resumed with
// Last-Event-ID when it carried event IDs; progress and log notifications
// on the stream are routed as on the shared session (without a progress
// token nothing is routed to a caller); a server-to-client request on it
// is refused, as the shared session's empty capabilities announce. A JSON-RPC
// error answer is returned as a *jsonrpc.Error inside the *Error.
func (t *Toolset) CallRaw(ctx context.Context, name string, args, meta json.RawMessage) (json.RawMessage, error) {
	cat := t.current()
	if cat == nil {
		return nil, ErrNoRawPath
	}
	e, err := t.callable(cat, name)
	if err != nil {
		return nil, err
	}
	c := e.conn
	if !t.rawConn(e) {
		return nil, ErrNoRawPath
	}
	remote := e.info.RemoteName
	fail := func(code string, err error) error {
		return &Error{Code: code, Server: c.name, Tool: name, Err: err}
	}
	if t.isClosed() {
		return nil, fail(CodeClosed, nil)
	}
	if err := c.refreshToken(ctx); err != nil {
		return nil, fail(CodeAuthFailed, err)
	}
	for attempt := 0; ; attempt++ {
		sess := c.liveSession()
		sid, proto := rawSession(sess)
		if sid == "" {
			return nil, ErrNoRawPath
		}
		id := t.rawIDs.Add(1)
		res, lost, err := c.postCall(ctx, sid, proto, id, remote, args, meta)
		if !lost {
			if err != nil {
				var te *Error
				if errors.As(err, &te) {
					te.Server, te.Tool = c.name, name
					return nil, err
				}
				if ctx.Err() != nil {
					return nil, fail(CodeCallFailed, ctx.Err())
				}
				if errors.Is(err, ErrStreamEnded) {
					return nil, fail(CodeCallFailed, err)
				}
				return nil, fail(CodeConnectionFailed, err)
			}
			return res, nil
		}
		if attempt > 0 {
			return nil, fail(CodeConnectionFailed, err)
		}
		t.log.Info("toolset: session lost; reconnecting once", "server", c.name, "tool", name, "err", err)
		if _, err := c.reconnect(valuesFree{ctx}, sess); err != nil {
			return nil, fail(CodeConnectionFailed, fmt.Errorf("reconnecting: %w", err))
		}
		t.resubscribe(ctx, c)
		// The new session's listing may have changed the tool.
		e2, err := t.callable(t.current(), name)
		if err != nil {
			return nil, err
		}
		if e2.conn != c || e2.info.RemoteName != remote {
			return nil, &Error{Code: CodeToolWithdrawn, Server: c.name, Tool: name,
				Err: fmt.Errorf("MCP tool %s is no longer published by server %s", name, c.name)}
		}
	}
}

// RawReady reports whether CallRaw would send a call of the tool name now
// rather than answer ErrNoRawPath (its server's session may still be found
// lost when the call goes out). A caller checks it before it spends
// anything on a call (a rate-limit token) that must then go through Call.
func (t *Toolset) RawReady(name string) bool {
	cat := t.current()
	if cat == nil {
		return false
	}
	e, ok := cat.byName[name]
	if !ok || !t.rawConn(e) {
		return false
	}
	sid, _ := rawSession(e.conn.liveSession())
	return sid != ""
}

// rawConn reports whether e's server can be called with bytes: streamable
// HTTP through the toolset's own client, listed since it was woken.
func (t *Toolset) rawConn(e *entry) bool {
	c := e.conn
	return !e.describe && c != nil && c.srv.transport == nil && c.srv.Config.Type == plugin.TransportStreamableHTTP &&
		c.httpClient != nil && !t.pending(c)
}

// rawSession returns the session ID and negotiated revision of a shared
// session CallRaw may use, or "" when it may not.
func rawSession(sess *mcp.ClientSession) (id, proto string) {
	if sess == nil || sess.ID() == "" {
		return "", ""
	}
	ir := sess.InitializeResult()
	if ir == nil || ir.ProtocolVersion == "" || ir.ProtocolVersion >= "2026-07-28" {
		return "", ""
	}
	return sess.ID(), ir.ProtocolVersion
}

// rawID is the JSON-RPC ID of CallRaw's n-th request: a string, so it never
// meets the go-sdk client's numeric IDs on the same session.
func rawID(n uint64) []byte {
	b := append([]byte(`"gatehouse-`), strconv.FormatUint(n, 10)...)
	return append(b, '"')
}

// postCall sends one tools/call and reads its answer. lost reports a
// session the server no longer knows (nothing was run).
func (c *conn) postCall(ctx context.Context, sid, proto string, n uint64, remote string, args, meta json.RawMessage) (_ json.RawMessage, lost bool, _ error) {
	id := rawID(n)
	name, _ := json.Marshal(remote)
	// The message is sent in pieces: the arguments are not copied.
	head := make([]byte, 0, 96+len(name))
	head = append(head, `{"jsonrpc":"2.0","id":`...)
	head = append(head, id...)
	head = append(head, `,"method":"tools/call","params":{"name":`...)
	head = append(head, name...)
	if len(args) > 0 {
		head = append(head, `,"arguments":`...)
	}
	tail := make([]byte, 0, 16+len(meta))
	if len(meta) > 0 {
		tail = append(tail, `,"_meta":`...)
		tail = append(tail, meta...)
	}
	tail = append(tail, "}}"...)
	body := [][]byte{head, args, tail}

	// The exchange ends with ctx until the answer is read; after that the
	// rest of the stream is read to its end whatever ctx does (the
	// caller's request ends as soon as it is answered), so that the
	// connection goes back to the pool.
	rctx, rcancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, rcancel)
	draining := false
	defer func() {
		if !draining {
			stop()
			rcancel()
		}
	}()
	resp, err := c.post(rctx, sid, proto, body...)
	if err != nil {
		if ctx.Err() != nil {
			// The request may have been read: the server may be running it.
			c.cancelRaw(sid, proto, id)
		}
		return nil, false, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, true, fmt.Errorf("%w: the server answered 404 to session %s", mcp.ErrSessionMissing, sid)
	case resp.StatusCode != http.StatusOK:
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		return nil, false, fmt.Errorf("the server answered HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(snippet))
	}
	r := &rawReader{c: c, ctx: rctx, sid: sid, proto: proto, id: id}
	res, err := r.read(resp)
	if err != nil && ctx.Err() != nil {
		c.cancelRaw(sid, proto, id)
	}
	if err == nil && stop() {
		// The rest of the stream (the server ends it right after the
		// answer) is read before the next call can want a connection: a
		// moment in line here, or a goroutine when it takes longer.
		draining = true
		body := resp.Body
		resp.Body = http.NoBody
		done := make(chan struct{})
		go func() {
			drain(body)
			rcancel()
			close(done)
		}()
		t := time.NewTimer(drainWait)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
	}
	return res, false, err
}

// drainWait is how long a call waits for the end of its response stream
// before it leaves the reading to a goroutine: long enough for the
// chunk that ends a stream written right after the answer (see
// docs/BENCHMARKS.md), short enough to bound a call's added latency.
const drainWait = 2 * time.Millisecond

// drain reads what is left of a response stream after the answer (the
// server ends it once it has answered) and closes it: a body read to its
// end returns its connection to the pool instead of closing it. A server
// that keeps the stream open is cut after a moment.
func drain(body io.ReadCloser) {
	t := time.AfterFunc(100*time.Millisecond, func() { body.Close() })
	var b [512]byte
	for n := 0; n < 64<<10; {
		k, err := body.Read(b[:])
		n += k
		if err != nil {
			break
		}
	}
	t.Stop()
	body.Close()
}

// post POSTs one JSON-RPC message, the concatenation of parts, on
// session sid.
func (c *conn) post(ctx context.Context, sid, proto string, parts ...[]byte) (*http.Response, error) {
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.srv.Config.URL, &partsReader{parts: parts})
	if err != nil {
		return nil, err
	}
	req.ContentLength = int64(size)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", proto)
	return c.httpClient.Do(req)
}

// partsReader reads its parts one after the other. Its WriteTo writes
// them as they are: net/http copies a body without one through a new
// buffer (io.MultiReader's WriteTo does too).
type partsReader struct{ parts [][]byte }

func (r *partsReader) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for len(r.parts) > 0 {
		k, err := w.Write(r.parts[0])
		n += int64(k)
		r.parts[0] = r.parts[0][k:]
		if err != nil {
			return n, err
		}
		r.parts = r.parts[1:]
	}
	return n, nil
}

func (r *partsReader) Read(p []byte) (int, error) {
	n := 0
	for len(r.parts) > 0 && n < len(p) {
		k := copy(p[n:], r.parts[0])
		n += k
		if r.parts[0] = r.parts[0][k:]; len(r.parts[0]) == 0 {
			r.parts = r.parts[1:]
		}
	}
	if n == 0 && len(r.parts) == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// cancelRaw tells the server that the caller gave up on request id.
func (c *conn) cancelRaw(sid, proto string, id []byte) {
	ctx, cancel := context.WithTimeout(c.ts.life, 2*time.Second)
	defer cancel()
	body := append([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`), id...)
	body = append(body, `,"reason":"the caller cancelled the call"}}`...)
	if resp, err := c.post(ctx, sid, proto, body); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
	}
}

// rawReader reads the answer to one raw request: a JSON body, or an SSE
// stream (resumed if the server closes it early).
type rawReader struct {
	c         *conn
	ctx       context.Context
	sid       string
	proto     string
	id        []byte
	lastEvent string // the last SSE event ID seen
	retry     time.Duration
	refused   int // server-to-client requests refused so far
}

// maxRefusals bounds the refusals one call sends back: a server that
// floods its response stream with requests is answered for the first
// ones only.
const maxRefusals = 16

func (r *rawReader) read(resp *http.Response) (json.RawMessage, error) {
	for resumes := 0; ; resumes++ {
		ct := resp.Header.Get("Content-Type")
		if strings.HasPrefix(ct, "application/json") {
			b, err := readLimited(resp.Body, resp.ContentLength)
			if err != nil {
				return nil, err
			}
			res, done, err := r.message(b)
			if err == nil && !done {
				err = errors.New("the server's JSON answer is not the response to the call")
			}
			return res, err
		}
		if !strings.HasPrefix(ct, "text/event-stream") {
			return nil, fmt.Errorf("the server answered with Content-Type %q", ct)
		}
		res, done, err := r.events(resp.Body)
		if done || err != nil {
			return res, err
		}
		// The stream ended before the response: resume it, as the go-sdk
		// client does, when the server gave event IDs.
		if r.lastEvent == "" {
			return nil, ErrStreamEnded
		}
		if resumes >= maxResumes {
			return nil, fmt.Errorf("%w: the server closed the response stream %d times before answering", io.ErrUnexpectedEOF, resumes+1)
		}
		if r.retry > 0 {
			t := time.NewTimer(min(r.retry, 10*time.Second))
			select {
			case <-r.ctx.Done():
				t.Stop()
				return nil, r.ctx.Err()
			case <-t.C:
			}
		}
		next, err := r.resume()
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		resp = next
	}
}

// resume GETs the rest of the stream after lastEvent.
func (r *rawReader) resume() (*http.Response, error) {
	req, err := http.NewRequestWithContext(r.ctx, http.MethodGet, r.c.srv.Config.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", r.sid)
	req.Header.Set("Mcp-Protocol-Version", r.proto)
	req.Header.Set("Last-Event-ID", r.lastEvent)
	resp, err := r.c.httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: resuming the response stream: HTTP %d", io.ErrUnexpectedEOF, resp.StatusCode)
	}
	return resp, nil
}

func readLimited(body io.Reader, n int64) ([]byte, error) {
	size := 512
	if n > 0 && n <= maxRawMessage {
		size = int(n) + 1
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	if _, err := buf.ReadFrom(io.LimitReader(body, maxRawMessage+1)); err != nil {
		return nil, err
	}
	if buf.Len() > maxRawMessage {
		return nil, fmt.Errorf("the server's answer exceeds %d bytes", maxRawMessage)
	}
	return buf.Bytes(), nil
}

// events reads SSE events until the response to the call (done) or the
// end of the stream.
func (r *rawReader) events(body io.Reader) (json.RawMessage, bool, error) {
	bp := r.c.ts.getBuf()
	defer r.c.ts.putBuf(bp)
	res, done, err := scanEvents(body, bp, r.message, func(id string) { r.lastEvent = id }, func(d time.Duration) { r.retry = d })
	if done && err == nil {
		res = bytes.Clone(res) // the buffer goes back to the pool
	}
	return res, done, err
}

// getBuf returns a read buffer of the toolset's pool.
func (t *Toolset) getBuf() *[]byte {
	if bp, ok := t.bufs.Get().(*[]byte); ok {
		return bp
	}
	b := make([]byte, 0, 4096)
	return &b
}

// putBuf returns a buffer to the pool, unless it grew past 1 MiB.
func (t *Toolset) putBuf(bp *[]byte) {
	if cap(*bp) <= 1<<20 {
		*bp = (*bp)[:0]
		t.bufs.Put(bp)
	}
}

// scanEvents reads the SSE stream body (lines ending in LF or CRLF, as
// the go-sdk reads them) and calls onData with each event's data (data
// lines joined by LF; events without data are skipped), onID with each id
// field and onRetry with each valid retry field, until onData reports done
// or an error, or the stream ends (done=false, err=nil). *bufp (its
// capacity; it is grown and left grown) holds the stream from the start of
// the current event; a single data line (the usual case) is not copied, so
// what onData returns may point into *bufp.
func scanEvents(body io.Reader, bufp *[]byte, onData func([]byte) (json.RawMessage, bool, error), onID func(string), onRetry func(time.Duration)) (json.RawMessage, bool, error) {
	buf := (*bufp)[:0]
	defer func() { *bufp = buf[:0] }()
	pos := 0                  // first byte not yet split into lines
	dataOff, dataLen := -1, 0 // the event's only data line, in buf
	var multi []byte          // the event's data when it spans lines
	var readErr error
	for {
		for {
			i := bytes.IndexByte(buf[pos:], '\n')
			if i < 0 {
				break
			}
			lineOff := pos
			line := bytes.TrimSuffix(buf[pos:pos+i], []byte("\r"))
			pos += i + 1
			if len(line) == 0 { // dispatch
				var ev []byte
				switch {
				case multi != nil:
					ev = multi
				case dataOff >= 0:
					ev = buf[dataOff : dataOff+dataLen]
				}
				dataOff, dataLen, multi = -1, 0, nil
				if len(ev) > 0 {
					res, done, err := onData(ev)
					if done || err != nil {
						return res, done, err
					}
				}
				// The event is consumed: drop its bytes.
				n := copy(buf, buf[pos:])
				buf, pos = buf[:n], 0
				continue
			}
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "data":
				switch {
				case multi != nil:
					multi = append(append(multi, '\n'), value...)
				case dataOff >= 0:
					multi = append(append(append([]byte(nil), buf[dataOff:dataOff+dataLen]...), '\n'), value...)
				default:
					dataOff, dataLen = lineOff+(len(line)-len(value)), len(value)
				}
			case "id":
				onID(string(value))
			case "retry":
				if ms, err := strconv.Atoi(string(value)); err == nil && ms >= 0 {
					onRetry(time.Duration(ms) * time.Millisecond)
				}
			}
		}
		if readErr == io.EOF {
			return nil, false, nil
		}
		if readErr != nil {
			return nil, false, readErr
		}
		if len(buf) > maxRawMessage || len(multi) > maxRawMessage {
			return nil, false, fmt.Errorf("an event from the server exceeds %d bytes", maxRawMessage)
		}
		if cap(buf)-len(buf) < 2048 {
			grown := make([]byte, len(buf), 2*cap(buf)+4096)
			copy(grown, buf)
			buf = grown
		}
		var n int
		n, readErr = body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
	}
}

// message handles one JSON-RPC message from the server: the response to
// the call (done), a notification (routed) or a request (refused).
func (r *rawReader) message(b []byte) (json.RawMessage, bool, error) {
	var id, result, rpcErr, method, params []byte
	ok := jsonscan.Object(b, func(key []byte, escaped bool, val []byte) bool {
		if escaped {
			return true
		}
		switch string(key) {
		case "id":
			id = val
		case "result":
			result = val
		case "error":
			rpcErr = val
		case "method":
			method = val
		case "params":
			params = val
		}
		return true
	})
	if !ok {
		return nil, false, errors.New("the server sent a message that is not a JSON object")
	}
	if method != nil {
		var m string
		if json.Unmarshal(method, &m) != nil {
			return nil, false, nil
		}
		if id == nil {
			r.c.ts.routeNotification(nil, m, params)
			return nil, false, nil
		}
		if r.refused < maxRefusals {
			r.refused++
			r.refuse(id)
		}
		return nil, false, nil
	}
	if !bytes.Equal(id, r.id) {
		return nil, false, nil // an answer to someone else: not ours to judge
	}
	if rpcErr != nil {
		var je jsonrpc.Error
		if err := json.Unmarshal(rpcErr, &je); err != nil {
			return nil, true, fmt.Errorf("the server's error answer is malformed: %w", err)
		}
		return nil, true, &Error{Code: CodeCallFailed, Err: &je}
	}
	if len(result) == 0 || result[0] != '{' {
		return nil, true, &Error{Code: CodeCallFailed, Err: errors.New("the server's answer has no result object")}
	}
	return result, true, nil
}

// refuse answers a server-to-client request sent on the shared session.
func (r *rawReader) refuse(id []byte) {
	msg, _ := json.Marshal(errNoSessionCaller.Message)
	body := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	body = append(body, `,"error":{"code":`...)
	body = strconv.AppendInt(body, jsonrpc.CodeInvalidRequest, 10)
	body = append(body, `,"message":`...)
	body = append(body, msg...)
	body = append(body, "}}"...)
	ctx, cancel := context.WithTimeout(r.c.ts.life, 2*time.Second)
	defer cancel()
	if resp, err := r.c.post(ctx, r.sid, r.proto, body); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
	}
}
