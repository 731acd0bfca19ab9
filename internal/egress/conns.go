package egress

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/rawio"
)

// conns sends a client's plain-HTTP (http://) requests itself, on
// connections it keeps, instead of through net/http's Transport. It writes
// each request with net/http's own Request.Write and reads the answer with
// http.ReadResponse, on the caller's goroutine: no goroutine per connection
// and no hand-off between goroutines per request. The Transport runs two
// goroutines per connection (one writes, one reads) and hands every request
// and every answer across them; for the small, frequent requests a gateway
// sends an MCP server that hand-off is most of the client's cost
// (docs/BENCHMARKS.md, "A client without hand-offs"). Requests it does not
// take (https, upgrades, a base transport with keep-alives off or a
// response-header timeout) go to the Transport as before.
//
// What it keeps of the Transport's behaviour:
//
//   - the dial through the guard;
//   - idle connections per host:port, at most MaxIdleConnsPerHost, closed
//     after IdleConnTimeout or once the server closed them (looked at
//     before each use, and every 15 s while any is idle);
//   - a connection reused only when its answer was read to the end,
//     neither side asked to close it, and its context did not end;
//   - response headers bounded by MaxResponseHeaderBytes, at most 5
//     informational (1xx) answers skipped before the final one;
//   - a context that ends closes the connection, which ends a write or a
//     read blocked on it, and RoundTrip or Read return its cause;
//   - an answer the server sent before it read the whole request (a 413,
//     then it stopped reading) is the caller's, though the write failed
//     (early; waited for 50 ms at most);
//   - a request that met a closed connection is sent once more, on another
//     connection, only when the server cannot have acted on it (the write
//     failed before the connection took a byte) or it is replayable (GET,
//     HEAD, OPTIONS, TRACE, or an Idempotency-Key) and nothing came back.
//
// It does not ask for gzip (the Transport does, and decompresses): answers
// come as the server sends them.
type conns struct {
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	maxIdle   int
	idleFor   time.Duration
	maxHeader int64
	every     time.Duration // sweepEvery (shorter in tests)

	mu    sync.Mutex
	idle  map[string][]*pconn // by host:port, most recently used last
	sweep *time.Timer         // armed while a connection is idle
}

// pconn is one kept connection.
type pconn struct {
	c       net.Conn
	br      *bufio.Reader
	bw      reqWriter
	limit   int64     // bytes the reader may still read; < 0: no limit
	written int64     // bytes written to the connection by the request being sent
	refused bool      // the connection failed the request's last write (not its body's reader)
	nread   int64     // bytes read from it since the request was sent
	since   time.Time // when it went idle
	reused  bool
}

// reqWriter gathers a request for one write to the connection. It is not
// a *bufio.Writer, so Request.Write does not flush the header on its own
// before a body it cannot see the length of: a small request goes out
// whole, in one system call. A large one goes out in pieces of maxGather.
type reqWriter struct {
	pc  *pconn
	buf []byte
	err error
}

const maxGather = 64 << 10

// room flushes what was gathered when n more bytes would not fit.
func (w *reqWriter) room(n int) error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf)+n > maxGather {
		return w.flush()
	}
	return nil
}

func (w *reqWriter) Write(p []byte) (int, error) {
	if err := w.room(len(p)); err != nil {
		return 0, err
	}
	if len(p) > maxGather {
		n, err := w.pc.Write(p)
		w.err = err
		return n, err
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func (w *reqWriter) WriteString(s string) (int, error) {
	if len(s) > maxGather {
		return w.Write([]byte(s))
	}
	if err := w.room(len(s)); err != nil {
		return 0, err
	}
	w.buf = append(w.buf, s...)
	return len(s), nil
}

// WriteByte makes reqWriter an io.ByteWriter: Request.Write then writes
// to it as it is, without a bufio.Writer of its own.
func (w *reqWriter) WriteByte(b byte) error {
	if err := w.room(1); err != nil {
		return err
	}
	w.buf = append(w.buf, b)
	return nil
}

// flush writes what was gathered; the buffer is kept for the next request
// unless it grew large.
func (w *reqWriter) flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) > 0 {
		if _, err := w.pc.Write(w.buf); err != nil {
			w.err = err
		}
	}
	if cap(w.buf) > 16<<10 {
		w.buf = nil
	} else {
		w.buf = w.buf[:0]
	}
	return w.err
}

// Write writes to the connection, counting what it accepted.
func (pc *pconn) Write(p []byte) (int, error) {
	n, err := pc.c.Write(p)
	pc.written += int64(n)
	pc.refused = err != nil
	return n, err
}

// Read reads from the connection, within the current limit (the response
// header's bound while ReadResponse reads a header).
func (pc *pconn) Read(p []byte) (int, error) {
	l := pc.limit
	if l == 0 {
		return 0, errHeaderTooLarge
	}
	if l > 0 && int64(len(p)) > l {
		p = p[:l]
	}
	n, err := pc.c.Read(p)
	pc.nread += int64(n)
	if l > 0 {
		pc.limit -= int64(n)
	}
	return n, err
}

// max1xx bounds the informational answers skipped before the final one
// (the Transport's bound): a server cannot keep a caller reading them.
const max1xx = 5

var (
	errTooMany1xx     = errors.New("egress: the server sent too many informational (1xx) answers")
	errHeaderTooLarge = errors.New("egress: the server's response headers exceed the limit")
	errBodyClosed     = errors.New("http: read on closed response body")
)

// newConns returns the plain-HTTP sender for a client whose transport is
// base and whose dials go through dial, or nil when base's settings ask
// for what only the Transport does.
func newConns(base *http.Transport, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *conns {
	if base.DisableKeepAlives || base.ResponseHeaderTimeout != 0 || !peekSupported {
		return nil
	}
	c := &conns{dial: dial, maxIdle: base.MaxIdleConnsPerHost, idleFor: base.IdleConnTimeout, maxHeader: base.MaxResponseHeaderBytes, every: sweepEvery}
	if c.maxIdle <= 0 {
		c.maxIdle = http.DefaultMaxIdleConnsPerHost
	}
	if c.maxHeader <= 0 {
		c.maxHeader = 10 << 20 // the Transport's default
	}
	return c
}

// takes reports whether c sends req itself.
func (c *conns) takes(req *http.Request) bool {
	return c != nil && req.URL.Scheme == "http" && req.Header.Get("Upgrade") == "" && req.Header.Get("Expect") == ""
}

// hostPort is the host:port req is dialed at.
func hostPort(req *http.Request) string {
	host, port := req.URL.Hostname(), req.URL.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(host, port)
}

// get returns an idle connection to addr that the server has not closed,
// or dials one.
func (c *conns) get(ctx context.Context, addr string) (*pconn, error) {
	now := time.Now()
	for {
		c.mu.Lock()
		list := c.idle[addr]
		if len(list) == 0 {
			c.mu.Unlock()
			break
		}
		pc := list[len(list)-1]
		list[len(list)-1] = nil
		c.idle[addr] = list[:len(list)-1]
		c.mu.Unlock()
		if !c.usable(pc, now) {
			pc.c.Close()
			continue
		}
		pc.reused = true
		return pc, nil
	}
	nc, err := c.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		// Raw system calls on its socket: see package rawio.
		if rc, err := rawio.New(tc); err == nil {
			nc = rc
		}
	}
	pc := &pconn{c: nc}
	pc.limit = -1
	pc.br = bufio.NewReaderSize(pc, 4096)
	pc.bw.pc = pc
	return pc, nil
}

// usable reports whether an idle connection may carry the next request:
// idle no longer than IdleConnTimeout, nothing unasked waiting on it, and
// not closed by the server.
func (c *conns) usable(pc *pconn, now time.Time) bool {
	return (c.idleFor <= 0 || now.Sub(pc.since) <= c.idleFor) && pc.br.Buffered() == 0 && alive(pc.c)
}

// put keeps pc for the next request to addr, or closes it when the host
// has enough idle connections.
func (c *conns) put(addr string, pc *pconn) {
	pc.since = time.Now()
	c.mu.Lock()
	if c.idle == nil {
		c.idle = make(map[string][]*pconn)
	}
	if len(c.idle[addr]) < c.maxIdle {
		c.idle[addr] = append(c.idle[addr], pc)
		if c.sweep == nil && c.every > 0 {
			c.sweep = time.AfterFunc(c.every, c.sweepIdle)
		}
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	pc.c.Close()
}

// sweepEvery is how often idle connections are looked at while there are
// some: those idle past IdleConnTimeout, and those the server closed, are
// closed (as the Transport's reader goroutine and timer would), so a pool
// holds no dead sockets once the calls stop.
const sweepEvery = 15 * time.Second

// sweepIdle closes the idle connections that are too old or closed by the
// server, and arms the next sweep while any are left.
func (c *conns) sweepIdle() {
	now := time.Now()
	var dead []*pconn
	c.mu.Lock()
	left := 0
	for addr, list := range c.idle {
		kept := list[:0]
		for _, pc := range list {
			if !c.usable(pc, now) {
				dead = append(dead, pc)
				continue
			}
			kept = append(kept, pc)
		}
		clear(list[len(kept):])
		if len(kept) == 0 {
			delete(c.idle, addr)
			continue
		}
		c.idle[addr] = kept
		left += len(kept)
	}
	if left > 0 && c.sweep != nil {
		c.sweep.Reset(c.every)
	} else {
		c.sweep = nil
	}
	c.mu.Unlock()
	for _, pc := range dead {
		pc.c.Close()
	}
}

// closeIdle closes every idle connection.
func (c *conns) closeIdle() {
	if c == nil {
		return
	}
	c.mu.Lock()
	idle := c.idle
	c.idle = nil
	if c.sweep != nil {
		c.sweep.Stop()
		c.sweep = nil
	}
	c.mu.Unlock()
	for _, list := range idle {
		for _, pc := range list {
			pc.c.Close()
		}
	}
}

// roundTrip sends req (c.takes(req)) and returns its answer, whose body
// gives the connection back (or closes it) when read to its end or closed.
func (c *conns) roundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	addr := hostPort(req)
	for attempt := 0; ; attempt++ {
		resp, retry, err := c.try(ctx, req, addr)
		if err == nil {
			return resp, nil
		}
		if !retry || attempt > 0 {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				req.Body.Close()
				return nil, err
			}
			b, gerr := req.GetBody()
			if gerr != nil {
				return nil, err
			}
			req = req.Clone(ctx) // RoundTrip does not modify the caller's request
			req.Body = b
		}
	}
}

// try sends req once. retry: it failed on a reused connection before the
// server can have acted on it, and may be sent again on a new one.
func (c *conns) try(ctx context.Context, req *http.Request, addr string) (_ *http.Response, retry bool, _ error) {
	if err := ctx.Err(); err != nil {
		return nil, false, context.Cause(ctx)
	}
	pc, err := c.get(ctx, addr)
	if err != nil {
		return nil, false, err
	}
	// The context's end closes the connection: a blocked write or read
	// returns, and the connection is not kept.
	stop := context.AfterFunc(ctx, func() { pc.c.Close() })
	fail := func(err error) error {
		stop()
		pc.c.Close()
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return err
	}
	// Request.Write closes req.Body; a retry sends GetBody's copy. A
	// write that failed before the connection took a byte on a reused
	// connection (the server had closed it) may be sent again.
	pc.written, pc.refused = 0, false
	err = req.Write(&pc.bw)
	if err == nil {
		err = pc.bw.flush()
	}
	if err != nil {
		if pc.written > 0 && pc.refused && ctx.Err() == nil {
			if resp := c.early(ctx, pc, req, stop); resp != nil {
				return resp, false, nil
			}
		}
		resend := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
		return nil, pc.reused && pc.written == 0 && resend, fail(err)
	}
	var resp *http.Response
	pc.nread = int64(pc.br.Buffered())
	for informational := 0; ; informational++ {
		if informational > max1xx {
			return nil, false, fail(errTooMany1xx)
		}
		resp, err = c.readHeader(pc, req)
		if err != nil {
			// Nothing at all came back on a reused connection: the
			// server had closed it, or dropped the request unanswered.
			nothing := pc.reused && pc.nread == 0
			return nil, nothing && replayable(req), fail(err)
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue // an informational answer: the final one follows
		}
		break
	}
	keep := !resp.Close && !req.Close
	return withBody(resp, &body{rc: resp.Body, pc: pc, stop: stop, ctx: ctx, keep: keep, put: func() { c.put(addr, pc) }}), false, nil
}

// readHeader reads an answer's status line and header from pc, within
// MaxResponseHeaderBytes.
func (c *conns) readHeader(pc *pconn, req *http.Request) (*http.Response, error) {
	pc.limit = c.maxHeader
	resp, err := http.ReadResponse(pc.br, req)
	pc.limit = -1
	return resp, err
}

// withBody gives resp the body b, which ends the connection's turn (at
// once for an answer without one).
func withBody(resp *http.Response, b *body) *http.Response {
	if resp.Body == http.NoBody {
		b.finish(stateEOF)
		return resp
	}
	resp.Body = b
	return resp
}

// earlyWait bounds how long early waits for an answer the server sent
// before it stopped reading the request.
const earlyWait = 50 * time.Millisecond

// early returns the answer a server gave before it read the whole request
// and stopped reading (a 413 for a body too large, a 401, then a closed
// connection): the write failed, but the answer is what the caller must
// see, as the Transport, which reads while it writes, gives it. It waits
// earlyWait at most for the answer's header; nil when none came, or an
// informational one. The connection is not kept after it.
func (c *conns) early(ctx context.Context, pc *pconn, req *http.Request, stop func() bool) *http.Response {
	if pc.c.SetReadDeadline(time.Now().Add(earlyWait)) != nil {
		return nil
	}
	resp, err := c.readHeader(pc, req)
	if err != nil || resp.StatusCode < 200 || pc.c.SetReadDeadline(time.Time{}) != nil {
		return nil
	}
	resp.Close = true
	return withBody(resp, &body{rc: resp.Body, pc: pc, stop: stop, ctx: ctx})
}

// replayable reports whether req may be sent twice (as the Transport
// decides it).
func replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != ""
}

// body is an answer's body: read to its end, it gives the connection back;
// closed before, it closes the connection (which ends a Read blocked on it).
type body struct {
	rc   io.ReadCloser
	pc   *pconn
	stop func() bool
	ctx  context.Context
	keep bool
	put  func()
	// state is stateOpen until the body ends: stateEOF (read to its end),
	// stateFailed (a read failed) or stateClosed (closed before its end).
	state atomic.Int32
}

const (
	stateOpen int32 = iota
	stateEOF
	stateFailed
	stateClosed
)

func (b *body) Read(p []byte) (int, error) {
	switch b.state.Load() {
	case stateEOF:
		return 0, io.EOF
	case stateClosed:
		return 0, errBodyClosed
	}
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.finish(stateEOF)
	case err != nil:
		b.finish(stateFailed)
		if b.ctx.Err() != nil {
			err = context.Cause(b.ctx)
		} else if b.state.Load() == stateClosed {
			err = errBodyClosed
		}
	}
	return n, err
}

func (b *body) Close() error {
	b.finish(stateClosed)
	return nil
}

// finish ends the body once, in state end: the connection goes back to the
// pool when the body was read to its end, both sides keep it, and the
// context's end did not start closing it; otherwise it is closed.
func (b *body) finish(end int32) {
	if !b.state.CompareAndSwap(stateOpen, end) {
		return
	}
	if b.stop() && end == stateEOF && b.keep {
		b.pc.reused = false
		b.put()
		return
	}
	b.pc.c.Close()
}
