package relay

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
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// ErrNoBytePath is returned by CallBytes, before anything is sent, when
// the call cannot go as bytes: use CallTool.
var ErrNoBytePath = errors.New("relay: no byte path to this tool's server")

// maxRawMessage bounds one upstream message read by CallBytes: the
// toolset's MaxAnswer, counted as the toolset counts it.
const maxRawMessage = toolset.MaxAnswer

// maxResumes bounds how often CallBytes resumes a response stream the
// server closed before answering (Last-Event-ID).
const maxResumes = 3

// BytesReady reports whether CallBytes would send a call of c to tg now
// rather than answer ErrNoBytePath (the server's session may still be
// found lost when the call goes out): the server speaks streamable HTTP
// through the toolset's client and its shared session is up on a revision
// with sessions, or it is a stdio server whose shared session has a Pipe
// on a revision before 2026-07-28; and c needs nothing routed back to it (no progress token,
// no upstream session of its own, not a tool offered for a capability:
// Needs). A caller checks it before it spends
// anything on the call.
func (r *Relay) BytesReady(tg toolset.Target, c *Call) bool {
	if c.ProgressToken != nil || !r.shares(c.Caller) || r.needs(tg.Upstream, tg.Remote) != 0 {
		return false
	}
	if _, _, ok := tg.Upstream.HTTP(); ok {
		sid, _ := rawSession(tg.Upstream.Live())
		return sid != ""
	}
	p := tg.Upstream.Pipe()
	return p != nil && bytesRevision(p.Session())
}

// CallBytes sends a tools/call to tg like CallTool, but hands the
// arguments to the server and its result back as bytes, never decoding
// them: the result is the server's JSON-RPC "result" object exactly as
// sent, checked to be one valid JSON object.
//
// It serves only what BytesReady allows; for anything else it returns
// ErrNoBytePath before sending anything. The rest is as CallTool for a
// caller with no upstream session of its own: a lost session (404) is
// re-established once through the drift checks and the call sent again;
// cancelling ctx sends notifications/cancelled; a response stream the
// server closes before answering is resumed with Last-Event-ID when it
// carried event IDs; progress, log and resource update notifications on
// the stream are routed as on the shared session; a server-to-client
// request on it is refused, as on the shared session. A
// JSON-RPC error answer is returned as a *jsonrpc.Error inside a
// *toolset.Error. A stdio server's call goes on its shared session's
// toolset.Pipe (callPipe).
func (r *Relay) CallBytes(ctx context.Context, tg toolset.Target, c Call) (json.RawMessage, error) {
	u := tg.Upstream
	if !r.BytesReady(tg, &c) {
		return nil, ErrNoBytePath
	}
	endpoint, hc, isHTTP := u.HTTP()
	fail := func(code string, err error) error {
		return &toolset.Error{Code: code, Server: u.Name(), Tool: tg.Tool, Err: err}
	}
	if r.closed() {
		return nil, fail(toolset.CodeClosed, nil)
	}
	meta, err := c.metaJSON()
	if err != nil {
		return nil, fail(toolset.CodeInvalidArguments, err)
	}
	if err := u.Authorize(ctx); err != nil {
		return nil, fail(toolset.CodeAuthFailed, errors.Unwrap(err))
	}
	if !isHTTP {
		return r.callPipe(ctx, tg, c.Args, meta, fail)
	}
	p := poster{r: r, server: u.Name(), url: endpoint, hc: hc} // a value: it lives on the stack
	for attempt := 0; ; attempt++ {
		sess := u.Live()
		p.sid, p.proto = rawSession(sess)
		if p.sid == "" {
			return nil, ErrNoBytePath
		}
		res, lost, err := p.call(ctx, r.rawIDs.Add(1), tg.Remote, c.Args, meta)
		if !lost {
			if err != nil {
				var te *toolset.Error
				if errors.As(err, &te) {
					te.Server, te.Tool = u.Name(), tg.Tool
					return nil, err
				}
				if ctx.Err() != nil {
					return nil, fail(toolset.CodeCallFailed, ctx.Err())
				}
				if errors.Is(err, toolset.ErrStreamEnded) {
					return nil, fail(toolset.CodeCallFailed, err)
				}
				return nil, fail(toolset.CodeConnectionFailed, err)
			}
			return res, nil
		}
		if attempt > 0 {
			return nil, fail(toolset.CodeConnectionFailed, err)
		}
		r.log.Info("relay: session lost; reconnecting once", "server", u.Name(), "tool", tg.Tool, "err", err)
		if _, err := u.Reconnect(ctx, sess); err != nil {
			return nil, fail(toolset.CodeConnectionFailed, fmt.Errorf("reconnecting: %w", err))
		}
		// The new session's listing may have changed the tool.
		if err := r.ts.Recheck(tg); err != nil {
			return nil, err
		}
	}
}

// metaJSON returns the call's _meta as the bytes of a JSON object (nil for
// none): the caller's without reserved keys, plus the key.
func (c *Call) metaJSON() (json.RawMessage, error) {
	if c.Meta == nil && c.Key == "" && !hasReserved(c.MetaJSON) {
		return c.MetaJSON, nil
	}
	m, err := c.meta()
	if err != nil || m == nil {
		return nil, err
	}
	return json.Marshal(m)
}

// hasReserved reports whether a _meta object has a key the protocol
// reserves (or an escaped key, which might decode to one).
func hasReserved(meta json.RawMessage) bool {
	found := false
	jsonscan.Object(meta, func(key []byte, escaped bool, _ []byte) bool {
		// An escaped key may decode to a reserved one: decode to be sure.
		found = escaped || bytes.HasPrefix(key, []byte(reservedMetaPrefix))
		return !found
	})
	return found
}

// rawSession returns the session ID and negotiated revision of a shared
// streamable HTTP session CallBytes may use, or "" when it may not.
func rawSession(sess *mcp.ClientSession) (id, proto string) {
	if sess == nil || sess.ID() == "" || !bytesRevision(sess) {
		return "", ""
	}
	return sess.ID(), sess.InitializeResult().ProtocolVersion
}

// bytesRevision reports whether sess negotiated a revision CallBytes
// speaks: one before 2026-07-28 (whose answers the go-sdk's client
// completes: resultType, input requests).
func bytesRevision(sess *mcp.ClientSession) bool {
	if sess == nil {
		return false
	}
	ir := sess.InitializeResult()
	return ir != nil && ir.ProtocolVersion != "" && ir.ProtocolVersion < "2026-07-28"
}

// callPipe is CallBytes for a stdio server: the request written on its
// shared session's Pipe, one line (arguments and _meta spread over lines
// by the caller are compacted). A connection that ends while the call
// waits (the server died) is connected again once through the drift
// checks and the call sent again, as CallTool does.
func (r *Relay) callPipe(ctx context.Context, tg toolset.Target, args, meta json.RawMessage, fail func(string, error) error) (json.RawMessage, error) {
	u := tg.Upstream
	var err error
	if args, err = oneLine(args); err != nil {
		return nil, fail(toolset.CodeInvalidArguments, err)
	}
	if meta, err = oneLine(meta); err != nil {
		return nil, fail(toolset.CodeInvalidArguments, err)
	}
	name, _ := json.Marshal(tg.Remote)
	message := func(b, id []byte) []byte {
		b = callHead(b, id, name, len(args) > 0)
		b = append(b, args...)
		return callTail(b, meta)
	}
	for attempt := 0; ; attempt++ {
		p := u.Pipe()
		if p == nil || !bytesRevision(p.Session()) {
			if attempt == 0 {
				return nil, ErrNoBytePath
			}
			return nil, fail(toolset.CodeConnectionFailed, errors.New("reconnecting: the new session cannot take the call as bytes"))
		}
		res, sent, err := p.Call(ctx, message)
		switch {
		case !sent && attempt == 0:
			return nil, ErrNoBytePath // nothing was sent: the go-sdk's client takes it
		case !sent:
			return nil, fail(toolset.CodeConnectionFailed, err)
		case err == nil:
			if len(res) == 0 || res[0] != '{' {
				te, _ := toolset.AsBadAnswer(toolset.BadAnswer(toolset.ReasonNoResult))
				te.Server, te.Tool = u.Name(), tg.Tool
				return nil, te
			}
			return res, nil
		}
		if je := (*jsonrpc.Error)(nil); errors.As(err, &je) {
			return nil, fail(toolset.CodeCallFailed, je)
		}
		if ctx.Err() != nil {
			return nil, fail(toolset.CodeCallFailed, ctx.Err())
		}
		if attempt > 0 || !toolset.SessionLost(err) {
			return nil, fail(toolset.CodeCallFailed, err)
		}
		r.log.Info("relay: session lost; reconnecting once", "server", u.Name(), "tool", tg.Tool, "err", err)
		if _, err := u.Reconnect(ctx, p.Session()); err != nil {
			return nil, fail(toolset.CodeConnectionFailed, fmt.Errorf("reconnecting: %w", err))
		}
		if err := r.ts.Recheck(tg); err != nil {
			return nil, err
		}
	}
}

// oneLine returns v without line breaks: v itself when it has none (the
// usual case), else compacted.
func oneLine(v json.RawMessage) (json.RawMessage, error) {
	if bytes.IndexByte(v, '\n') < 0 && bytes.IndexByte(v, '\r') < 0 {
		return v, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// poster sends JSON-RPC messages on one upstream session with the
// toolset's HTTP client.
type poster struct {
	r          *Relay
	server     string // the upstream's name (where its notifications come from)
	url        string
	hc         *http.Client
	sid, proto string
}

// rawID is the JSON-RPC ID of CallBytes's n-th request: a string, so it never
// meets the go-sdk client's numeric IDs on the same session.
func rawID(n uint64) []byte {
	b := append([]byte(`"gatehouse-`), strconv.FormatUint(n, 10)...)
	return append(b, '"')
}

// callHead appends to b a tools/call request's bytes up to its arguments
// (when it has some): its ID id and the tool's name as JSON strings.
func callHead(b, id, name []byte, args bool) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"method":"tools/call","params":{"name":`...)
	b = append(b, name...)
	if args {
		b = append(b, `,"arguments":`...)
	}
	return b
}

// callTail appends to b the rest of a tools/call request after its
// arguments: its _meta (nil: none) and the closing braces.
func callTail(b, meta []byte) []byte {
	if len(meta) > 0 {
		b = append(b, `,"_meta":`...)
		b = append(b, meta...)
	}
	return append(b, "}}"...)
}

// call sends one tools/call and reads its answer. lost reports a session
// the server no longer knows (nothing was run).
func (p poster) call(ctx context.Context, n uint64, remote string, args, meta json.RawMessage) (_ json.RawMessage, lost bool, _ error) {
	id := rawID(n)
	name, _ := json.Marshal(remote)
	// The message is sent in pieces: the arguments are not copied.
	head := callHead(make([]byte, 0, 96+len(name)), id, name, len(args) > 0)
	tail := callTail(make([]byte, 0, 16+len(meta)), meta)
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
	resp, err := p.post(rctx, body...)
	if err != nil {
		if ctx.Err() != nil {
			// The request may have been read: the server may be running it.
			p.cancel(id)
		}
		return nil, false, err
	}
	// The body as it is at the end: a resumed stream's (read), or none
	// when the drainer has it.
	defer func() { resp.Body.Close() }()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, true, fmt.Errorf("%w: the server answered 404 to session %s", mcp.ErrSessionMissing, p.sid)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		return nil, false, fmt.Errorf("the server answered HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(snippet))
	case resp.StatusCode != http.StatusOK:
		// A bad answer to this call, not a lost connection: the call
		// fails and the session lives on (as the go-sdk's client sees it
		// through the toolset's transport.AnswerLimit). A JSON-RPC error
		// it carries is the server's answer.
		b, err := readLimited(resp.Body, resp.ContentLength)
		if err == nil {
			if m, derr := jsonrpc.DecodeMessage(b); derr == nil {
				if r, ok := m.(*jsonrpc.Response); ok && r.Error != nil {
					var je *jsonrpc.Error
					if errors.As(r.Error, &je) {
						return nil, false, &toolset.Error{Code: toolset.CodeCallFailed, Err: je}
					}
				}
			}
		}
		return nil, false, toolset.BadAnswer(toolset.ReasonStatus(resp.StatusCode))
	}
	rr := &rawReader{poster: p, ctx: rctx, id: id}
	res, err := rr.read(resp)
	if err != nil && ctx.Err() != nil {
		p.cancel(id)
	}
	if err == nil && stop() && !rr.src.eof {
		// The rest of the stream (the server ends it right after the
		// answer) is read by the relay's drainer, so that the connection
		// goes back to the pool; when its end came with the answer
		// (src.eof), it went back already.
		draining = true
		body := resp.Body
		resp.Body = http.NoBody
		p.r.drains.drain(body, rcancel)
	}
	return res, false, err
}

// post POSTs one JSON-RPC message, the concatenation of parts, on the
// session.
func (p poster) post(ctx context.Context, parts ...[]byte) (*http.Response, error) {
	size := 0
	for _, part := range parts {
		size += len(part)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, &partsReader{parts: parts})
	if err != nil {
		return nil, err
	}
	req.ContentLength = int64(size)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", p.sid)
	req.Header.Set("Mcp-Protocol-Version", p.proto)
	return p.hc.Do(req)
}

// cancel tells the server that the caller gave up on request id.
func (p poster) cancel(id []byte) {
	ctx, cancel := context.WithTimeout(p.r.life, 2*time.Second)
	defer cancel()
	body := append([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`), id...)
	body = append(body, `,"reason":"the caller cancelled the call"}}`...)
	if resp, err := p.post(ctx, body); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
	}
}

// rawReader reads the answer to one raw request: a JSON body, or an SSE
// stream (resumed if the server closes it early).
type rawReader struct {
	poster
	src       eofReader // the response body being read
	ctx       context.Context
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
			r.src = eofReader{r: resp.Body}
			b, err := readLimited(&r.src, resp.ContentLength)
			if errors.Is(err, errEventTooLarge) {
				return nil, answerTooLarge()
			}
			if err != nil {
				return nil, err
			}
			res, done, err := r.message(b)
			if err == nil && !done {
				err = toolset.BadAnswer(toolset.ReasonNotTheAnswer)
			}
			return res, err
		}
		if !strings.HasPrefix(ct, "text/event-stream") {
			return nil, toolset.BadAnswer(toolset.ReasonContentType)
		}
		r.src = eofReader{r: resp.Body}
		res, done, err := r.events(&r.src)
		if errors.Is(err, errEventTooLarge) {
			return nil, answerTooLarge()
		}
		if done || err != nil {
			return res, err
		}
		// The stream ended before the response: resume it, as the go-sdk
		// client does, when the server gave event IDs.
		if r.lastEvent == "" {
			return nil, toolset.ErrStreamEnded
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
		// The caller's response is the resumed one from now on: the
		// body it closes or drains.
		*resp = *next
	}
}

// eofReader reads r and notes when it ends (io.EOF): a response body
// read to its end has returned its connection to the pool.
type eofReader struct {
	r   io.Reader
	eof bool
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		e.eof = true
	}
	return n, err
}

// resume GETs the rest of the stream after lastEvent.
func (r *rawReader) resume() (*http.Response, error) {
	req, err := http.NewRequestWithContext(r.ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", r.sid)
	req.Header.Set("Mcp-Protocol-Version", r.proto)
	req.Header.Set("Last-Event-ID", r.lastEvent)
	resp, err := r.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: resuming the response stream: HTTP %d", io.ErrUnexpectedEOF, resp.StatusCode)
	}
	return resp, nil
}

// errEventTooLarge reports an SSE event or JSON body past maxRawMessage:
// the call's answer is toolset.ErrAnswerTooLarge (answerTooLarge).
var errEventTooLarge = errors.New("relay: the server's message exceeds the largest answer taken")

// answerTooLarge is a call's error in place of an answer past
// maxRawMessage: the bad answer the toolset's client gets for it too.
func answerTooLarge() error { return toolset.AnswerTooLarge() }

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
		return nil, errEventTooLarge
	}
	return buf.Bytes(), nil
}

// events reads SSE events until the response to the call (done) or the
// end of the stream.
func (r *rawReader) events(body io.Reader) (json.RawMessage, bool, error) {
	bp := r.r.getBuf()
	defer r.r.putBuf(bp)
	res, done, err := scanEvents(body, bp, r.message, func(id string) { r.lastEvent = id }, func(d time.Duration) { r.retry = d })
	if done && err == nil {
		res = bytes.Clone(res) // the buffer goes back to the pool
	}
	return res, done, err
}

// getBuf returns a read buffer of the relay's pool.
func (r *Relay) getBuf() *[]byte {
	if bp, ok := r.bufs.Get().(*[]byte); ok {
		return bp
	}
	b := make([]byte, 0, 4096)
	return &b
}

// putBuf returns a buffer to the pool, unless it grew past 1 MiB.
func (r *Relay) putBuf(bp *[]byte) {
	if cap(*bp) <= 1<<20 {
		*bp = (*bp)[:0]
		r.bufs.Put(bp)
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
			if pos > maxRawMessage {
				// The event so far (it starts at buf[0]) is past the limit,
				// its ending blank line included, as the go-sdk counts.
				return nil, false, errEventTooLarge
			}
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
		if len(buf) > maxRawMessage {
			return nil, false, errEventTooLarge
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
	msg, ok := jsonscan.ReadMessage(b)
	id, result, rpcErr, method, params := msg.ID, msg.Result, msg.Error, msg.Method, msg.Params
	if !ok {
		return nil, false, toolset.BadAnswer(toolset.ReasonNotJSONRPC)
	}
	if method != nil {
		var m string
		if json.Unmarshal(method, &m) != nil {
			return nil, false, nil
		}
		if id == nil {
			if m == "notifications/resources/updated" {
				// Sent with the call (on its response stream): the
				// shared session's update, as if read there.
				var p mcp.ResourceUpdatedNotificationParams
				if json.Unmarshal(params, &p) == nil {
					r.r.onResourceUpdated(context.Background(), r.server, &p)
				}
				return nil, false, nil
			}
			r.r.routeFrom(r.server, nil, m, params)
			return nil, false, nil
		}
		if r.refused < maxRefusals {
			r.refused++
			r.answer(id, m)
		}
		return nil, false, nil
	}
	if !bytes.Equal(id, r.id) {
		return nil, false, nil // an answer to someone else: not ours to judge
	}
	if rpcErr != nil {
		var je jsonrpc.Error
		if err := json.Unmarshal(rpcErr, &je); err != nil {
			return nil, true, toolset.BadAnswer(toolset.ReasonNotJSONRPC)
		}
		return nil, true, &toolset.Error{Code: toolset.CodeCallFailed, Err: &je}
	}
	if len(result) == 0 || result[0] != '{' {
		return nil, true, toolset.BadAnswer(toolset.ReasonNoResult)
	}
	return result, true, nil
}

// answer answers a server-to-client request sent on the shared session's
// response stream, as the toolset's shared go-sdk client answers it
// (sharedAnswer).
func (r *rawReader) answer(id []byte, method string) {
	body := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	if res, e := sharedAnswer(method); e == nil {
		body = append(body, `,"result":`...)
		body = append(body, res...)
	} else {
		msg, _ := json.Marshal(e.Message)
		body = append(body, `,"error":{"code":`...)
		body = strconv.AppendInt(body, e.Code, 10)
		body = append(body, `,"message":`...)
		body = append(body, msg...)
		body = append(body, '}')
	}
	body = append(body, '}')
	ctx, cancel := context.WithTimeout(r.r.life, 2*time.Second)
	defer cancel()
	if resp, err := r.post(ctx, body); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
	}
}

// sharedAnswer is how the toolset's shared go-sdk client (which announces
// no capabilities) answers a server-to-client request: ping with an empty
// result; roots/list refused by the toolset (toolset.ErrNoRoots); sampling
// and elicitation with the go-sdk client's own errors for a client without
// the handler; any other method as not found. The byte sender answers the
// same, so a server sees one client whichever sender carried the call
// (TestSharedClientAnswers compares the two).
func sharedAnswer(method string) (result []byte, e *jsonrpc.Error) {
	switch method {
	case "ping":
		return []byte("{}"), nil
	case "roots/list":
		return nil, toolset.ErrNoRoots
	case "sampling/createMessage":
		return nil, &jsonrpc.Error{Code: codeUnsupportedMethod, Message: "client does not support CreateMessage"}
	case "elicitation/create":
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "client does not support elicitation"}
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method not found: %q", method)}
}

// codeUnsupportedMethod is the go-sdk's JSON-RPC code for a method a peer
// knows but does not support (it exports no name for it).
const codeUnsupportedMethod = -31001
