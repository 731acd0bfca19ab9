package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/jsonscan"
)

// MaxAnswer is the largest message taken from a streamable HTTP server:
// one SSE event, or one JSON body. It is the go-sdk's documented default
// (its client, given no size, applies none: a hostile server could make it
// buffer without end).
const MaxAnswer = mcp.DefaultMaxEventSize

// ErrAnswerTooLarge is the JSON-RPC error a call gets in place of a
// server's answer larger than MaxAnswer: the answer is dropped and the
// session lives on. The server may have run the call: a journal keeps it
// in doubt (see BadAnswer).
var ErrAnswerTooLarge = &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
	Message: "the server's answer exceeds 16777216 bytes, the most Gatehouse takes; it was dropped",
	Data:    json.RawMessage(badAnswerMark)}

// badAnswerMark is the data of the JSON-RPC errors AnswerLimit puts in
// place of an answer it does not take (IsBadAnswer).
const badAnswerMark = `{"gatehouse":"bad_answer"}`

// Reasons a server's answer to a call is not taken (BadAnswerText).
const (
	ReasonNotJSONRPC   = "it is not a JSON-RPC message"
	ReasonContentType  = "it is neither JSON nor an event stream"
	ReasonNoResult     = "it has no result object"
	ReasonNotTheAnswer = "it is not the response to the call"
)

// ReasonStatus is the reason for an answer with HTTP status code (not a
// JSON-RPC error).
func ReasonStatus(code int) string { return "it answered HTTP " + strconv.Itoa(code) }

// BadAnswerText is the message of the JSON-RPC error a call gets in place
// of a server's answer not taken for reason (a Reason constant or
// ReasonStatus).
func BadAnswerText(reason string) string { return "the server's answer was not taken: " + reason }

// AnswerTooLarge is ErrAnswerTooLarge as the JSON-RPC response to the
// request id (its bytes as sent).
func AnswerTooLarge(id []byte) []byte { return rpcError(id, ErrAnswerTooLarge.Message) }

// BadAnswer is the JSON-RPC response to the request id (its bytes as sent)
// that AnswerLimit puts in place of an answer not taken for reason: an
// internal error with BadAnswerText, marked so that IsBadAnswer knows it.
func BadAnswer(id []byte, reason string) []byte { return rpcError(id, BadAnswerText(reason)) }

func rpcError(id []byte, message string) []byte {
	msg, _ := json.Marshal(message)
	b := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	b = append(b, `,"error":{"code":-32603,"message":`...)
	b = append(b, msg...)
	b = append(b, `,"data":`+badAnswerMark...)
	return append(b, "}}"...)
}

// IsBadAnswer reports whether err (a go-sdk client's error for a call) is
// the error AnswerLimit put in place of an answer it did not take, and
// returns its message. A server may send the same error itself; it gains
// nothing by it (the call is failed and in doubt, as when it hangs up).
func IsBadAnswer(err error) (string, bool) {
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInternalError || string(je.Data) != badAnswerMark {
		return "", false
	}
	return je.Message, true
}

// AnswerLimit holds every message a streamable HTTP server sends to at
// most MaxAnswer bytes, in front of the go-sdk's client, and keeps a bad
// answer to a call from taking the session down with it: the go-sdk's
// client fails its whole connection on an HTTP error status, a body or
// event that is no JSON-RPC message, or another content type. In place of
// such an answer to a call, and of a JSON body or SSE event larger than
// Max, the go-sdk gets BadAnswer (AnswerTooLarge) for the request the
// response belongs to (a large event on the standalone stream is dropped),
// so it sees a well-formed answer and keeps its session. Redirects (the
// HTTP client follows them), an error status that carries a JSON-RPC
// error, 401 and 403 (authorization) and 404 (a lost session) pass as
// they are.
type AnswerLimit struct {
	Base http.RoundTripper
	Max  int
}

func (l *AnswerLimit) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.Base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	failed := resp.StatusCode >= 400
	call := req.Method == http.MethodPost && (failed || resp.Body != http.NoBody)
	var id []byte
	if call {
		id, call = requestID(req)
	}
	ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	ct = strings.TrimSpace(ct)
	switch {
	case call && failed:
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
			return resp, nil
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, int64(l.Max)+1))
		resp.Body.Close()
		if m, derr := jsonrpc.DecodeMessage(b); err == nil && derr == nil {
			if r, ok := m.(*jsonrpc.Response); ok && r.Error != nil {
				resp.Body = io.NopCloser(bytes.NewReader(b)) // the go-sdk passes the error on
				return resp, nil
			}
		}
		return answer(resp, BadAnswer(id, ReasonStatus(resp.StatusCode))), nil
	case resp.Body == http.NoBody:
	case ct == "application/json":
		b, err := io.ReadAll(io.LimitReader(resp.Body, int64(l.Max)+1))
		resp.Body.Close()
		if err != nil {
			resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), errReader{err}))
			return resp, nil
		}
		switch {
		case len(b) > l.Max:
			if !call {
				id, _ = requestID(req)
			}
			b = AnswerTooLarge(id)
		case call:
			if _, err := jsonrpc.DecodeMessage(b); err != nil {
				b = BadAnswer(id, ReasonNotJSONRPC)
			}
		}
		return answer(resp, b), nil
	case ct == "text/event-stream":
		if !call {
			id, _ = requestID(req)
		}
		resp.Body = &eventLimit{body: resp.Body, max: l.Max, id: id, check: call}
	case call && resp.StatusCode >= 200 && resp.StatusCode <= 299:
		resp.Body.Close()
		return answer(resp, BadAnswer(id, ReasonContentType)), nil
	}
	return resp, nil
}

// answer makes resp a 200 JSON response with body b.
func answer(resp *http.Response, b []byte) *http.Response {
	resp.StatusCode, resp.Status = http.StatusOK, "200 OK"
	resp.Header = resp.Header.Clone()
	resp.Header.Set("Content-Type", "application/json")
	resp.Header.Del("Content-Length")
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	return resp
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// requestID returns the JSON-RPC ID of a POST's message ("null" when it
// has none: a notification, or a GET) and whether the message is a call
// (a request with an ID, whose answer the response carries).
func requestID(req *http.Request) (id []byte, call bool) {
	id = []byte("null")
	if req.Method != http.MethodPost || req.GetBody == nil {
		return id, false
	}
	body, err := req.GetBody()
	if err != nil {
		return id, false
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, 1<<20))
	if err != nil {
		return id, false
	}
	method := false
	jsonscan.Object(b, func(key []byte, escaped bool, val []byte) bool {
		switch {
		case escaped:
		case string(key) == "id":
			id = bytes.Clone(val)
		case string(key) == "method":
			method = true
		}
		return true
	})
	return id, method && string(id) != "null"
}

// eventLimit passes an SSE stream on one whole event at a time, each held
// to max bytes: an event over it is skipped to its end and, on a POST's
// stream (id is not null), replaced by AnswerTooLarge for the POST's
// request. With check (a call's stream), an event the go-sdk's client
// would refuse (taking its connection down: a line without a colon, data
// that is no JSON-RPC message) is replaced by BadAnswer for the request.
type eventLimit struct {
	body  io.ReadCloser
	max   int
	id    []byte
	check bool

	in      []byte // read from body, not yet split into events
	scanned int    // how much of in is known to hold no newline
	event   []byte // the current event's lines so far
	out     []byte // complete events ready for Read
	skip    bool   // inside an event past max: dropping to its end
	partial bool   // a line of it was dropped in pieces: its newline ends that line
	cr      bool   // the pieces dropped so far were carriage returns only
	err     error  // body's error, once out is drained
	pooledB *[]byte
}

var eventBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (e *eventLimit) Read(p []byte) (int, error) {
	for len(e.out) == 0 {
		if e.err != nil {
			return 0, e.err
		}
		if e.pooledB == nil {
			e.pooledB = eventBufs.Get().(*[]byte)
		}
		buf := *e.pooledB
		n, err := e.body.Read(buf)
		e.feed(buf[:n])
		if err != nil {
			// A stream that ends inside an event: what there is goes on
			// (the reader sees the stream end as it would have).
			if !e.skip && !e.partial {
				e.out = append(e.out, e.event...)
				e.out = append(e.out, e.in...)
				e.event, e.in, e.scanned = e.event[:0], e.in[:0], 0
			}
			e.err = err
		}
	}
	n := copy(p, e.out)
	e.out = e.out[n:]
	if len(e.out) == 0 {
		e.out = nil
	}
	return n, nil
}

// feed splits chunk into lines and events. An event's size counts its
// lines, the blank line that ends it included, as the go-sdk counts it.
func (e *eventLimit) feed(chunk []byte) {
	e.in = append(e.in, chunk...)
	for {
		// A long line is scanned once, not again with each chunk (a
		// server's 16 MiB line would cost it gigabytes of scanning).
		i := bytes.IndexByte(e.in[e.scanned:], '\n')
		if i < 0 {
			e.scanned = len(e.in)
			if !e.skip && len(e.event)+len(e.in) > e.max {
				e.overflow()
			}
			if e.skip && len(e.in) > 0 {
				// A long line inside a dropped event: its rest, up to its
				// newline, is dropped too (a line of carriage returns may
				// still be the blank line that ends the event).
				e.cr = (!e.partial || e.cr) && len(bytes.Trim(e.in, "\r")) == 0
				e.in, e.scanned = e.in[:0], 0
				e.partial = true
			}
			return
		}
		i += e.scanned
		e.scanned = 0
		line := e.in[:i+1]
		e.in = e.in[i+1:]
		blank := len(bytes.TrimRight(line, "\r\n")) == 0
		if e.partial { // the end of a line dropped in pieces
			e.partial = false
			if blank && e.cr {
				e.skip = false // it was the blank line that ends the event
			}
			continue
		}
		switch {
		case e.skip:
		case len(e.event)+len(line) > e.max:
			e.overflow()
		case blank:
			if e.check && !readable(e.event) {
				e.out = append(e.out, "event: message\ndata: "...)
				e.out = append(e.out, BadAnswer(e.id, ReasonNotJSONRPC)...)
				e.out = append(e.out, "\n\n"...)
				e.event = e.event[:0]
				break
			}
			e.out = append(e.out, e.event...)
			e.out = append(e.out, line...)
			e.event = e.event[:0]
		default:
			e.event = append(e.event, line...)
		}
		if e.skip && blank {
			e.skip = false // the dropped event ends here
		}
	}
}

// overflow drops the current event and puts the answer in its place.
func (e *eventLimit) overflow() {
	e.event = e.event[:0]
	e.skip = true
	if string(e.id) != "null" {
		e.out = append(e.out, "event: message\ndata: "...)
		e.out = append(e.out, AnswerTooLarge(e.id)...)
		e.out = append(e.out, "\n\n"...)
	}
}

func (e *eventLimit) Close() error {
	if e.pooledB != nil {
		eventBufs.Put(e.pooledB)
		e.pooledB = nil
	}
	return e.body.Close()
}

// readable reports whether the go-sdk's client reads the SSE event ev (its
// lines, without the blank line that ends it) without failing its
// connection: every line has a colon, and the data of a message event
// (data lines trimmed of spaces, joined by LF), if any, is one JSON-RPC
// message.
func readable(ev []byte) bool {
	var name, data []byte
	lines := 0
	for len(ev) > 0 {
		line := ev
		if i := bytes.IndexByte(ev, '\n'); i >= 0 {
			line, ev = ev[:i], ev[i+1:]
		} else {
			ev = nil
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			continue
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if !found {
			return false
		}
		switch string(field) {
		case "event":
			name = bytes.TrimSpace(value)
		case "data":
			value = bytes.TrimSpace(value)
			switch lines++; lines {
			case 1:
				data = value
			case 2:
				data = append(append(bytes.Clone(data), '\n'), value...)
			default:
				data = append(append(data, '\n'), value...)
			}
		}
	}
	if len(data) == 0 || (len(name) > 0 && string(name) != "message") {
		return true // the go-sdk skips it
	}
	_, err := jsonrpc.DecodeMessage(data)
	return err == nil
}
