package transport

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
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
// server's answer larger than MaxAnswer: the answer is dropped, the session
// lives on, and, the server having answered, the call is a known failure
// (never re-sent, journaled as failed).
var ErrAnswerTooLarge = &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
	Message: "the server's answer exceeds 16777216 bytes, the most Gatehouse takes; it was dropped"}

// AnswerTooLarge is ErrAnswerTooLarge as the JSON-RPC response to the
// request id (its bytes as sent).
func AnswerTooLarge(id []byte) []byte {
	msg, _ := json.Marshal(ErrAnswerTooLarge.Message)
	b := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	b = append(b, `,"error":{"code":-32603,"message":`...)
	b = append(b, msg...)
	return append(b, "}}"...)
}

// AnswerLimit holds every message a streamable HTTP server sends to at
// most MaxAnswer bytes, in front of the go-sdk's client: a JSON body, or an
// SSE event, larger than that is replaced by AnswerTooLarge for the
// request the response belongs to (dropped, on the standalone stream), so
// the go-sdk sees a well-formed answer and keeps its session.
type AnswerLimit struct {
	Base http.RoundTripper
	Max  int
}

func (l *AnswerLimit) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.Base.RoundTrip(req)
	if err != nil || resp.Body == nil || resp.Body == http.NoBody {
		return resp, err
	}
	ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	switch strings.TrimSpace(ct) {
	case "application/json":
		b, err := io.ReadAll(io.LimitReader(resp.Body, int64(l.Max)+1))
		resp.Body.Close()
		if err != nil {
			resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), errReader{err}))
			return resp, nil
		}
		if len(b) > l.Max {
			b = AnswerTooLarge(requestID(req))
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Del("Content-Length")
	case "text/event-stream":
		resp.Body = &eventLimit{body: resp.Body, max: l.Max, id: requestID(req)}
	}
	return resp, nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// requestID returns the JSON-RPC ID of a POST's message ("null" when it
// has none: a notification, or a GET).
func requestID(req *http.Request) []byte {
	if req.Method != http.MethodPost || req.GetBody == nil {
		return []byte("null")
	}
	body, err := req.GetBody()
	if err != nil {
		return []byte("null")
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, 1<<20))
	if err != nil {
		return []byte("null")
	}
	id := []byte("null")
	jsonscan.Object(b, func(key []byte, escaped bool, val []byte) bool {
		if !escaped && string(key) == "id" {
			id = bytes.Clone(val)
			return false
		}
		return true
	})
	return id
}

// eventLimit passes an SSE stream on one whole event at a time, each held
// to max bytes: an event over it is skipped to its end and, on a POST's
// stream (id is not null), replaced by AnswerTooLarge for the POST's
// request.
type eventLimit struct {
	body io.ReadCloser
	max  int
	id   []byte

	in      []byte // read from body, not yet split into events
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
				e.event, e.in = e.event[:0], e.in[:0]
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
		i := bytes.IndexByte(e.in, '\n')
		if i < 0 {
			if !e.skip && len(e.event)+len(e.in) > e.max {
				e.overflow()
			}
			if e.skip && len(e.in) > 0 {
				// A long line inside a dropped event: its rest, up to its
				// newline, is dropped too (a line of carriage returns may
				// still be the blank line that ends the event).
				e.cr = (!e.partial || e.cr) && len(bytes.Trim(e.in, "\r")) == 0
				e.in = e.in[:0]
				e.partial = true
			}
			return
		}
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
