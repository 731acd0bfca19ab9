package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/jsonscan"
)

// A Pipe carries requests written as bytes on a stdio connection, beside
// the go-sdk's client that owns the connection: each request gets an ID of
// its own (a string, "gatehouse-s<n>", never one of the go-sdk's numeric
// IDs), is written as one line between the go-sdk's own messages, and its
// answer is taken out of the server's output before the go-sdk's client
// reads it, as the bytes the server sent. Nothing of it is decoded but the
// answer's top-level keys. Everything else the server writes (answers to
// the go-sdk's requests, notifications, requests) reaches the go-sdk's
// client as it was written.
//
// A Pipe is made by Stdio's connections; PipeOf finds one. It ends with its
// connection (closed, or the server's output ended): calls waiting then
// fail, and later calls are not sent.
//
// The server's output is sorted line by line, as the stdio transport
// frames messages: a line that answers one of the pipe's requests is taken
// out, and a notification is handed to the connection's tap (Tapped) there,
// in wire order, before any answer that follows it. From the first line
// that is not one whole JSON object (a message spread over lines, a batch)
// or has a key written with escapes, the rest is left to the go-sdk's reader, which reads such messages: the
// connection then takes the pipe's answers and taps notifications from
// what that reader decoded (procConn.Read), still in wire order.
type Pipe struct {
	w   io.Writer
	wmu *sync.Mutex // shared with the go-sdk's writes (lockedWriter)

	ids atomic.Uint64

	// breakAt is the number of messages passed on to the go-sdk's reader
	// before the first that is not one line (math.MaxInt64: none yet):
	// from that message on, procConn.Read taps notifications (it takes the
	// pipe's answers the go-sdk's reader decoded at any time).
	breakAt atomic.Int64

	mu      sync.Mutex
	waiting map[uint64]chan pipeAnswer
	err     error // why the pipe ended: nothing more is sent
}

// pipeAnswer is the answer to one request: its result or error value as
// the server wrote them (copied), or why there is none.
type pipeAnswer struct {
	result, rpcErr json.RawMessage
	err            error
}

// errPipeClosed is the end of a Pipe whose connection was closed.
var errPipeClosed = fmt.Errorf("%w (transport: the stdio connection was closed)", mcp.ErrConnectionClosed)

func newPipe(w io.Writer, wmu *sync.Mutex) *Pipe {
	p := &Pipe{w: w, wmu: wmu, waiting: make(map[uint64]chan pipeAnswer)}
	p.breakAt.Store(math.MaxInt64)
	return p
}

// pipeIDPrefix starts every ID a Pipe gives, with its opening quote.
const pipeIDPrefix = `"gatehouse-s`

// Open reports whether a call would be sent now.
func (p *Pipe) Open() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err == nil
}

// Call writes one request, the bytes message appends to b for the ID id
// (a JSON string, with its quotes), and returns its answer: the result
// value as the server wrote it, or the server's JSON-RPC error as a
// *jsonrpc.Error. sent is false when nothing was written (the pipe has
// ended: the error says why). When ctx ends first, the server is sent
// notifications/cancelled for the request and Call returns ctx's error;
// its answer, when it comes, is dropped. The message must be one line.
func (p *Pipe) Call(ctx context.Context, message func(b, id []byte) []byte) (result json.RawMessage, sent bool, err error) {
	n := p.ids.Add(1)
	var idBuf [32]byte
	id := strconv.AppendUint(append(idBuf[:0], pipeIDPrefix...), n, 10)
	id = append(id, '"')
	ch := make(chan pipeAnswer, 1)
	p.mu.Lock()
	if p.err != nil {
		err := p.err
		p.mu.Unlock()
		return nil, false, err
	}
	p.waiting[n] = ch
	p.mu.Unlock()

	line := append(message(make([]byte, 0, 256), id), '\n')
	if err := p.write(line); err != nil {
		p.forget(n)
		return nil, false, err
	}
	select {
	case a := <-ch:
		if a.err != nil {
			return nil, true, a.err
		}
		if a.rpcErr != nil {
			var je jsonrpc.Error
			if err := json.Unmarshal(a.rpcErr, &je); err != nil {
				return nil, true, fmt.Errorf("transport: the server's error answer does not decode: %w", err)
			}
			return nil, true, &je
		}
		return a.result, true, nil
	case <-ctx.Done():
		p.forget(n)
		p.cancel(id)
		return nil, true, ctx.Err()
	}
}

func (p *Pipe) write(b []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_, err := p.w.Write(b)
	return err
}

// forget stops waiting for request n.
func (p *Pipe) forget(n uint64) {
	p.mu.Lock()
	delete(p.waiting, n)
	p.mu.Unlock()
}

// cancel tells the server that the caller gave up on request id: at once
// when no write is under way, else from a goroutine of its own, so that a
// server that reads nothing more does not hold the caller (that write ends
// when the connection closes).
func (p *Pipe) cancel(id []byte) {
	b := append([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`), id...)
	b = append(b, `,"reason":"the caller cancelled the call"}}`+"\n"...)
	if p.wmu.TryLock() {
		_, _ = p.w.Write(b)
		p.wmu.Unlock()
		return
	}
	go func() { _ = p.write(b) }()
}

// end ends the pipe with err (the first end counts) and fails every call
// waiting.
func (p *Pipe) end(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
	for n, ch := range p.waiting {
		ch <- pipeAnswer{err: p.err}
		delete(p.waiting, n)
	}
}

// deliver hands request n's answer (result or rpcErr, copied) to its
// caller, if it still waits.
func (p *Pipe) deliver(n uint64, result, rpcErr []byte) {
	p.mu.Lock()
	ch := p.waiting[n]
	delete(p.waiting, n)
	p.mu.Unlock()
	if ch != nil {
		a := pipeAnswer{}
		if rpcErr != nil {
			a.rpcErr = bytes.Clone(rpcErr)
		} else {
			a.result = bytes.Clone(result)
		}
		ch <- a
	}
}

// pipeRequest returns n of a pipe's request ID: the JSON string
// "gatehouse-s<n>" (quotes included).
func pipeRequest(id []byte) (uint64, bool) {
	if len(id) < len(pipeIDPrefix)+2 || !bytes.HasPrefix(id, []byte(pipeIDPrefix)) || id[len(id)-1] != '"' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(id[len(pipeIDPrefix):len(id)-1]), 10, 64)
	return n, err == nil
}

// takeDecoded takes r when it answers one of the pipe's requests (one the
// go-sdk's reader decoded: see Pipe), and reports whether it did.
func (p *Pipe) takeDecoded(r *jsonrpc.Response) bool {
	id, ok := r.ID.Raw().(string)
	if !ok {
		return false
	}
	n, ok := pipeRequest(strconv.AppendQuote(nil, id))
	if !ok {
		return false
	}
	p.mu.Lock()
	ch := p.waiting[n]
	delete(p.waiting, n)
	p.mu.Unlock()
	if ch != nil {
		a := pipeAnswer{result: r.Result}
		if r.Error != nil {
			je := (*jsonrpc.Error)(nil)
			if !errors.As(r.Error, &je) {
				je = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: r.Error.Error()}
			}
			a.result = nil
			a.rpcErr, _ = json.Marshal(je)
		}
		ch <- a
	}
	return true
}

// lockedWriter is the go-sdk's writer of a connection with a Pipe: its
// writes (one message each) and the pipe's never interleave.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.WriteCloser
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// Close closes the writer at once: a write blocked on a server that reads
// nothing must not hold it.
func (l *lockedWriter) Close() error { return l.w.Close() }

// pipeReader is the go-sdk's reader of a connection with a Pipe: the
// server's output, less the lines that answer the pipe's requests.
type pipeReader struct {
	r     io.Reader
	p     *Pipe
	limit int // a line longer than this is passed on as it is read

	chunk   []byte // the read buffer
	pending []byte // the start of a line whose end was not read yet
	out     []byte // what is ready for the go-sdk, from off
	off     int
	long    bool // the line being read is past limit: passed on as read
	err     error

	tap    func(method string, params json.RawMessage) // nil: none
	passed int64                                       // messages passed on
	broken bool                                        // a message was not one line: the rest is passed on as it is
}

func newPipeReader(r io.Reader, p *Pipe, limit int, tap func(string, json.RawMessage)) *pipeReader {
	return &pipeReader{r: r, p: p, limit: limit, tap: tap, chunk: make([]byte, 32<<10)}
}

func (r *pipeReader) Read(b []byte) (int, error) {
	for r.off == len(r.out) {
		if r.err != nil {
			return 0, r.err
		}
		r.fill()
	}
	n := copy(b, r.out[r.off:])
	r.off += n
	return n, nil
}

// maxKept bounds the buffers a pipeReader keeps between messages.
const maxKept = 1 << 20

// fill reads once from the server and sorts what it read.
func (r *pipeReader) fill() {
	if cap(r.out) > maxKept {
		r.out = nil
	}
	r.out, r.off = r.out[:0], 0
	n, err := r.r.Read(r.chunk)
	data := r.chunk[:n]
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if r.long {
			if i < 0 {
				r.out = append(r.out, data...)
				break
			}
			r.out = append(r.out, data[:i+1]...)
			data = data[i+1:]
			r.long = false
			continue
		}
		if i < 0 {
			if len(r.pending)+len(data) > r.limit {
				// Not an answer worth taking: the go-sdk's reader
				// stops at its own bound.
				r.out = append(append(r.out, r.pending...), data...)
				r.pending, r.long = r.pending[:0], true
				r.breakHere()
				break
			}
			r.pending = append(r.pending, data...)
			break
		}
		line := data[:i+1]
		if len(r.pending) > 0 {
			r.pending = append(r.pending, line...)
			line = r.pending
		}
		data = data[i+1:]
		r.sort(line)
		r.pending = r.pending[:0]
		if cap(r.pending) > maxKept {
			r.pending = nil
		}
	}
	if err != nil {
		if len(r.pending) > 0 {
			r.out = append(r.out, r.pending...)
			r.pending = r.pending[:0]
		}
		r.err = err
		r.p.end(fmt.Errorf("%w (transport: the server's output ended: %w)", mcp.ErrConnectionClosed, err))
	}
}

// sort takes line (with its newline) when it answers one of the pipe's
// requests, and passes it on to the go-sdk's reader otherwise, tapping it
// first when it is a notification.
func (r *pipeReader) sort(line []byte) {
	if r.broken {
		r.out = append(r.out, line...)
		return
	}
	m, ok := jsonscan.ReadMessage(line)
	// An escaped key may decode to one of the keys read: the go-sdk's
	// reader decides what the message is, from here on.
	odd := m.Escaped
	switch {
	case odd || !ok:
		if !odd && len(bytes.TrimSpace(line)) == 0 {
			break // whitespace: no message
		}
		r.breakHere()
		r.out = append(r.out, line...)
		return
	case m.Method == nil && (m.Result != nil || m.Error != nil):
		if n, mine := pipeRequest(m.ID); mine {
			r.p.deliver(n, m.Result, m.Error)
			return
		}
	case m.Method != nil && m.ID == nil && r.tap != nil:
		var method string
		if json.Unmarshal(m.Method, &method) == nil {
			r.tap(method, bytes.Clone(m.Params))
		}
	}
	if ok {
		r.passed++
	}
	r.out = append(r.out, line...)
}

// breakHere leaves the rest of the output, from the message being passed
// on, to the go-sdk's reader (see Pipe).
func (r *pipeReader) breakHere() {
	if !r.broken {
		r.broken = true
		r.p.breakAt.Store(r.passed)
	}
}

// PipeOf returns the Pipe of a connection made by Stdio (through the
// wrappers of this package), or nil.
func PipeOf(c any) *Pipe {
	for {
		switch v := c.(type) {
		case *procConn:
			return v.pipe
		case *tappedConn:
			c = v.Connection
		case *cancelConn:
			c = v.Connection
		default:
			return nil
		}
	}
}
