// Package front is an HTTP/1.1 server loop for the plain requests an MCP
// client makes, in front of net/http's server.
//
// A connection is read here first. A request that is a plain HTTP/1.1
// POST or DELETE (its body's length given, no Expect, no Upgrade, no
// Transfer-Encoding, one well-formed Host) is served here, by the
// http.Server's handler, under the same deadlines and with the context
// values net/http would give it (the server's ConnContext and ConnState
// hooks included). Anything else (a GET, which is an MCP client's long
// stream, a request net/http would refuse, a TLS connection) is handed to
// the http.Server with the bytes read of it so far, and net/http serves
// the connection from then on: the front never answers what it does not
// know how to. Requests are parsed by net/http's own parser
// (http.ReadRequest).
//
// What the front saves over net/http is per request: net/http starts a
// goroutine that reads ahead on the connection once a request's body has
// been read (to notice a client that goes away) and stops it when the
// answer is written, two hand-offs between threads for every call. The
// front watches the connection only for a request still running after
// watchAfter: a call answered sooner costs no goroutine, and a client
// that goes away during a longer one still cancels its request. A TCP
// connection is read and written through package rawio (raw system calls
// on its socket, on Linux), which spares the runtime's monitor thread a
// wake-up on every call of a process that goes idle between calls.
package front

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/rawio"
)

const (
	// watchAfter is how long a request runs before the front watches its
	// connection for the client going away.
	watchAfter = 50 * time.Millisecond
	// maxHead bounds a request's line and headers, as net/http's default
	// MaxHeaderBytes (and its 4 KiB of slack) do; a longer one is handed
	// to net/http, which answers 431.
	maxHead = http.DefaultMaxHeaderBytes + 4096
	// answerBuffer is how much of an answer is held before its head is
	// written: an answer that fits goes out with its Content-Length, in
	// one write.
	answerBuffer = 32 << 10
	// maxDiscard is how much of a body its handler left unread is read
	// and dropped to keep the connection (net/http's figure).
	maxDiscard = 256 << 10
)

// errDone is a write after the handler returned.
var errDone = errors.New("front: write after the handler returned")

// Timeouts are the deadlines of the connections the front serves, as
// http.Server's fields of the same names bound net/http's (all must be
// more than zero).
type Timeouts struct {
	// ReadHeader bounds reading a request's line and headers, from the
	// first byte (from the accept for a connection's first request).
	ReadHeader time.Duration
	// Read bounds reading a whole request, from its first byte.
	Read time.Duration
	// Idle closes a connection idle this long between requests.
	Idle time.Duration
}

// Server is the front of one http.Server. Serve it with Serve; stop it
// with Shutdown or Close, and the http.Server with its own.
type Server struct {
	hs *http.Server
	t  Timeouts

	mu       sync.Mutex
	conns    map[*frontConn]struct{}
	lns      map[net.Listener]struct{}
	hand     *handoff // nil until Serve
	shutdown atomic.Bool
	date     atomic.Pointer[frontDate]
	// served and handed count the requests served here and the
	// connections handed to net/http.
	served, handed atomic.Int64
}

// New returns the front of hs: it serves hs.Handler, calls hs.ConnContext
// and hs.ConnState as net/http would, logs a handler's panic to
// hs.ErrorLog, and hands hs what it does not serve (Serve runs hs.Serve
// on a listener of its own).
func New(hs *http.Server, t Timeouts) *Server {
	return &Server{hs: hs, t: t, conns: map[*frontConn]struct{}{}, lns: map[net.Listener]struct{}{}}
}

// Served returns how many requests the front served itself.
func (s *Server) Served() int64 { return s.served.Load() }

// Handed returns how many connections it handed to net/http.
func (s *Server) Handed() int64 { return s.handed.Load() }

// frontDate is the Date header of one second.
type frontDate struct {
	sec  int64
	text string
}

func (f *Server) dateHeader(now time.Time) string {
	if d := f.date.Load(); d != nil && d.sec == now.Unix() {
		return d.text
	}
	d := &frontDate{sec: now.Unix(), text: now.UTC().Format(http.TimeFormat)}
	f.date.Store(d)
	return d.text
}

// handoff is the listener net/http's server accepts the front's handed
// connections from.
type handoff struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newHandoff(addr net.Addr) *handoff {
	return &handoff{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (h *handoff) Accept() (net.Conn, error) {
	select {
	case c := <-h.ch:
		return c, nil
	case <-h.done:
		return nil, net.ErrClosed
	}
}

func (h *handoff) Close() error {
	h.once.Do(func() { close(h.done) })
	return nil
}

func (h *handoff) Addr() net.Addr { return h.addr }

// give hands c to net/http, or closes it once net/http stopped serving.
func (h *handoff) give(c net.Conn) {
	select {
	case h.ch <- c:
	case <-h.done:
		_ = c.Close()
	}
}

// prefixConn is a connection whose first bytes were already read.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// recReader reads the connection for its bufio.Reader. While recording
// (a request's line and headers) it keeps every byte read, so that the
// request can still go to net/http, and reads at most maxHead.
type recReader struct {
	c       net.Conn
	rec     []byte
	on      bool
	left    int
	pending []byte // read by the watcher ahead of the reader
}

var errHeadTooLong = errors.New("server: request head too long")

// start records from here, beginning with what buffered holds.
func (r *recReader) start(br *bufio.Reader) {
	if cap(r.rec) > 64<<10 {
		r.rec = nil
	}
	r.rec = r.rec[:0]
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		r.rec = append(r.rec, b...)
	}
	r.on, r.left = true, maxHead-len(r.rec)
}

func (r *recReader) stop() { r.on = false }

func (r *recReader) Read(p []byte) (int, error) {
	if len(r.pending) > 0 {
		n := copy(p, r.pending)
		r.pending = r.pending[n:]
		if r.on {
			r.rec = append(r.rec, p[:n]...)
			r.left -= n
		}
		return n, nil
	}
	if r.on {
		if r.left <= 0 {
			return 0, errHeadTooLong
		}
		if len(p) > r.left {
			p = p[:r.left]
		}
	}
	n, err := r.c.Read(p)
	if r.on && n > 0 {
		r.rec = append(r.rec, p[:n]...)
		r.left -= n
	}
	return n, err
}

// frontConn is one connection the front serves.
type frontConn struct {
	s  *Server
	c  net.Conn
	rw net.Conn // what c is read and written through (socket)
	rr recReader
	bw *bufio.Writer

	idle atomic.Bool // between requests: Shutdown may close it

	mu       sync.Mutex
	running  bool               // a request is being served
	bodyEOF  atomic.Bool        // its body has been read to the end
	cancel   context.CancelFunc // its context's
	watching chan struct{}      // the watcher's end, while it reads
	gone     bool               // the watcher saw the client go
	timer    *time.Timer
}

// serveConn serves c until it closes or is handed to net/http.
func (s *Server) serveConn(ctx context.Context, c net.Conn) {
	hs := s.hs
	if cc := hs.ConnContext; cc != nil {
		ctx = cc(ctx, c)
	}
	ctx = context.WithValue(ctx, http.LocalAddrContextKey, c.LocalAddr())
	state := func(st http.ConnState) {
		if hs.ConnState != nil {
			hs.ConnState(c, st)
		}
	}
	state(http.StateNew)
	if isTLS(c) {
		// HTTP/2 may be agreed in the handshake: net/http's to serve.
		state(http.StateHijacked)
		s.handed.Add(1)
		s.hand.give(c)
		return
	}
	fc := &frontConn{s: s, c: c, rw: socket(c)}
	fc.rr.c = fc.rw
	f := s
	f.mu.Lock()
	f.conns[fc] = struct{}{}
	f.mu.Unlock()
	handed := false
	defer func() {
		f.mu.Lock()
		delete(f.conns, fc)
		f.mu.Unlock()
		if fc.timer != nil {
			fc.timer.Stop()
		}
		if !handed {
			_ = c.Close()
			state(http.StateClosed)
		}
	}()
	br := bufio.NewReaderSize(&fc.rr, 4<<10)
	fc.bw = bufio.NewWriterSize(fc.rw, 4<<10)
	lastMethod := ""
	for first := true; ; first = false {
		fc.rr.start(br)
		var t0 time.Time
		if first {
			// A connection waiting for its first byte is idle to
			// Shutdown; its header deadline runs from the accept.
			t0 = time.Now()
			_ = c.SetReadDeadline(t0.Add(s.t.ReadHeader))
			fc.idle.Store(true)
			if f.shutdown.Load() {
				return
			}
			_, err := br.Peek(1)
			if !fc.idle.CompareAndSwap(true, false) || err != nil {
				return
			}
			state(http.StateActive)
		} else {
			if f.shutdown.Load() {
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(s.t.Idle))
			fc.idle.Store(true)
			if f.shutdown.Load() {
				return
			}
			// Four bytes, as net/http waits for: a shorter rest before
			// the client closes is dropped without an answer.
			_, err := br.Peek(4)
			if !fc.idle.CompareAndSwap(true, false) || err != nil {
				return // closed by Shutdown, gone, or idle too long
			}
			state(http.StateActive)
			// Line ends after a POST's body are tolerated, as net/http
			// tolerates them (RFC 9112, section 2.2).
			if b, _ := br.Peek(4); lastMethod == http.MethodPost {
				n := 0
				for n < len(b) && (b[n] == '\r' || b[n] == '\n') {
					n++
				}
				_, _ = br.Discard(n)
				fc.rr.rec = fc.rr.rec[n:]
			}
			t0 = time.Now()
			_ = c.SetReadDeadline(t0.Add(s.t.ReadHeader))
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			var ne net.Error
			if len(fc.rr.rec) == 0 || errors.As(err, &ne) && ne.Timeout() {
				return // nothing sent, or too slowly: net/http closes too
			}
		}
		if err != nil || !plainRequest(req) {
			// net/http serves the connection from this request on,
			// and answers what it refuses.
			fc.rr.stop()
			_ = c.SetReadDeadline(time.Time{})
			state(http.StateHijacked) // forgotten here; net/http registers its own
			handed = true
			f.handed.Add(1)
			f.hand.give(&prefixConn{Conn: c, prefix: append(fc.rr.rec, fc.rr.pending...)})
			return
		}
		fc.rr.stop()
		lastMethod = req.Method
		f.served.Add(1)
		_ = c.SetReadDeadline(t0.Add(s.t.Read))
		if !fc.serve(ctx, req, br) {
			return
		}
		state(http.StateIdle)
	}
}

// socket returns what the front reads and writes c through: its TCP
// socket with raw system calls (package rawio, which spares the runtime's
// monitor a wake-up a call) when c is a *net.TCPConn or wraps one under
// wrappers with a NetConn method, which must change no bytes (the
// connection cap's does not; TLS is handed on before this); else c. The
// rest (Close, deadlines) stays c's.
func socket(c net.Conn) net.Conn {
	u := c
	for range 8 {
		if tc, ok := u.(*net.TCPConn); ok {
			if rc, err := rawio.New(tc); err == nil {
				return rc
			}
			return c
		}
		n, ok := u.(interface{ NetConn() net.Conn })
		if !ok {
			return c
		}
		u = n.NetConn()
	}
	return c
}

// isTLS reports a TLS connection, under wrappers that give the
// connection they wrap with a NetConn method (as *tls.Conn does its own).
func isTLS(c net.Conn) bool {
	for range 8 {
		if _, ok := c.(*tls.Conn); ok {
			return true
		}
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return false
		}
		c = u.NetConn()
	}
	return false
}

// plainRequest reports a request the front serves itself (see the
// package doc).
func plainRequest(r *http.Request) bool {
	if r.ProtoMajor != 1 || r.ProtoMinor != 1 || len(r.TransferEncoding) != 0 ||
		(r.Method != http.MethodPost && r.Method != http.MethodDelete) ||
		len(r.RequestURI) == 0 || r.RequestURI[0] != '/' {
		return false
	}
	// http.ReadRequest took the Host header (one at most) into r.Host.
	if !plainHost(r.Host) {
		return false
	}
	for k, vs := range r.Header {
		if !tokenName(k) {
			return false
		}
		switch k {
		case "Expect", "Upgrade", "Te", "Trailer", "Http2-Settings":
			return false
		case "Connection":
			for _, v := range vs {
				for _, tok := range strings.Split(v, ",") {
					tok = strings.TrimSpace(tok)
					if !strings.EqualFold(tok, "close") && !strings.EqualFold(tok, "keep-alive") {
						return false
					}
				}
			}
		}
		for _, v := range vs {
			for i := 0; i < len(v); i++ {
				if b := v[i]; b < ' ' && b != '\t' || b == 0x7f {
					return false
				}
			}
		}
	}
	return true
}

// tokenName reports a header name of token characters (RFC 9110,
// section 5.6.2), as net/http requires.
func tokenName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		b := k[i]
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0) {
			return false
		}
	}
	return true
}

// plainHost reports a Host of a name or an address, and a port.
func plainHost(h string) bool {
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		b := h[i]
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
			b == '.' || b == '-' || b == '_' || b == ':' || b == '[' || b == ']') {
			return false
		}
	}
	return true
}

// serve serves one request and reports whether the connection serves the
// next.
func (fc *frontConn) serve(ctx context.Context, req *http.Request, br *bufio.Reader) (keep bool) {
	req.RemoteAddr = fc.c.RemoteAddr().String()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req = req.WithContext(rctx)
	var body *frontBody
	fc.bodyEOF.Store(req.Body == http.NoBody)
	if req.Body != http.NoBody {
		body = &frontBody{ReadCloser: req.Body, fc: fc}
		req.Body = body
	} else {
		_ = fc.c.SetReadDeadline(time.Time{}) // read whole (frontBody)
	}
	w := &frontResponse{fc: fc, req: req, header: http.Header{}, clen: -1}

	fc.mu.Lock()
	fc.running, fc.cancel, fc.gone = true, cancel, false
	if fc.timer == nil {
		fc.timer = time.AfterFunc(watchAfter, fc.watch)
	} else {
		fc.timer.Reset(watchAfter)
	}
	fc.mu.Unlock()

	panicked := fc.run(w, req)

	fc.mu.Lock()
	fc.running = false
	fc.timer.Stop()
	watching := fc.watching
	fc.watching = nil
	gone := fc.gone
	fc.mu.Unlock()
	if watching != nil {
		_ = fc.c.SetReadDeadline(time.Unix(1, 0)) // ends the watcher's read
		<-watching
		_ = fc.c.SetReadDeadline(time.Time{})
	}
	w.done = true
	if panicked || gone {
		return false
	}
	if !fc.bodyEOF.Load() {
		// What the handler left of the body is read and dropped, up to
		// maxDiscard, before the answer's head says whether the
		// connection stays (as net/http does); a longer rest costs it.
		n, err := io.CopyN(io.Discard, body.ReadCloser, maxDiscard+1)
		if n > maxDiscard || err != io.EOF && err != nil {
			w.closeAfter = true
		}
	}
	if err := w.finish(); err != nil {
		return false
	}
	return !req.Close && !w.closeAfter
}

// run calls the handler; a panic is logged as net/http logs it (but
// http.ErrAbortHandler) and costs the connection.
func (fc *frontConn) run(w *frontResponse, req *http.Request) (panicked bool) {
	defer func() {
		if p := recover(); p != nil {
			panicked = true
			if p != http.ErrAbortHandler {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				msg := fmt.Sprintf("http: panic serving %v: %v\n%s", req.RemoteAddr, p, buf)
				if l := fc.s.hs.ErrorLog; l != nil {
					l.Print(msg)
				} else {
					log.Print(msg)
				}
			}
		}
	}()
	fc.s.hs.Handler.ServeHTTP(w, req)
	return false
}

// watch starts reading the connection of a request still running, once
// its body has been read: the read ends with an error when the client
// goes away (which cancels the request), or with a byte of its next
// request (kept for it).
func (fc *frontConn) watch() {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if !fc.running || fc.watching != nil {
		return
	}
	if !fc.bodyEOF.Load() {
		fc.timer.Reset(watchAfter)
		return
	}
	done := make(chan struct{})
	fc.watching = done
	go func() {
		defer close(done)
		var b [1]byte
		n, err := fc.rw.Read(b[:])
		if n > 0 {
			fc.rr.pending = append(fc.rr.pending, b[0])
			return
		}
		// The request ended (serve stopped the read with a deadline in
		// the past, after marking it not running), the client went, or a
		// read deadline the handler set passed while it ran: net/http
		// cancels the request for the last two, and answers it still
		// when only the deadline passed.
		var ne net.Error
		timeout := errors.As(err, &ne) && ne.Timeout()
		fc.mu.Lock()
		if fc.running {
			fc.gone = !timeout
			fc.cancel()
		}
		fc.mu.Unlock()
	}()
}

// frontBody notes when the request's body has been read to its end.
type frontBody struct {
	io.ReadCloser
	fc *frontConn
}

func (b *frontBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.fc.bodyEOF.Load() {
		b.fc.bodyEOF.Store(true)
		// The request has been read: its read deadline no longer
		// applies, as under net/http (which clears it then).
		_ = b.fc.c.SetReadDeadline(time.Time{})
	}
	return n, err
}

// frontResponse is the http.ResponseWriter of a request the front
// serves. An answer is held until the handler returns, flushes or writes
// more than answerBuffer: held whole, it goes out with its Content-Length
// in one write; otherwise chunked, as net/http writes it.
type frontResponse struct {
	fc     *frontConn
	req    *http.Request
	header http.Header

	status      int
	wroteHeader bool
	sent        bool // the head is written
	chunked     bool
	buf         []byte
	clen        int64 // the handler's Content-Length, or -1
	written     int64
	closeAfter  bool
	done        bool
	err         error
}

func (w *frontResponse) Header() http.Header { return w.header }

func (w *frontResponse) WriteHeader(code int) {
	if w.done {
		return
	}
	w.writeHeader(code)
}

func (w *frontResponse) writeHeader(code int) {
	if w.wroteHeader {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		// An informational answer goes at once, with the headers so far.
		bw := w.fc.bw
		w.statusLine(code)
		_ = w.header.Write(bw)
		_, _ = bw.WriteString("\r\n")
		w.setErr(bw.Flush())
		return
	}
	w.status, w.wroteHeader = code, true
	if cl := w.header.Get("Content-Length"); cl != "" {
		if v, err := strconv.ParseInt(cl, 10, 64); err == nil && v >= 0 {
			w.clen = v
		} else {
			w.header.Del("Content-Length")
		}
	}
}

func (w *frontResponse) statusLine(code int) {
	bw := w.fc.bw
	_, _ = bw.WriteString("HTTP/1.1 ")
	_, _ = bw.WriteString(strconv.Itoa(code))
	_ = bw.WriteByte(' ')
	if text := http.StatusText(code); text != "" {
		_, _ = bw.WriteString(text)
	} else {
		_, _ = bw.WriteString("status code " + strconv.Itoa(code))
	}
	_, _ = bw.WriteString("\r\n")
}

// bodyAllowed reports whether the status may carry a body.
func (w *frontResponse) bodyAllowed() bool {
	return w.status != http.StatusNoContent && w.status != http.StatusNotModified && (w.status < 100 || w.status > 199)
}

func (w *frontResponse) Write(p []byte) (int, error) {
	if w.done {
		return 0, errDone
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !w.bodyAllowed() {
		return 0, http.ErrBodyNotAllowed
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.clen >= 0 && w.written+int64(len(p)) > w.clen {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if !w.sent {
		if len(w.buf)+len(p) <= answerBuffer {
			w.buf = append(w.buf, p...)
			return len(p), nil
		}
		w.sendHead(false)
	}
	w.body(p)
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

// body writes p, as a chunk when the answer is chunked.
func (w *frontResponse) body(p []byte) {
	if len(p) == 0 {
		return
	}
	bw := w.fc.bw
	if w.chunked {
		_, _ = bw.WriteString(strconv.FormatInt(int64(len(p)), 16))
		_, _ = bw.WriteString("\r\n")
	}
	_, err := bw.Write(p)
	w.setErr(err)
	if w.chunked {
		_, err = bw.WriteString("\r\n")
		w.setErr(err)
	}
}

func (w *frontResponse) setErr(err error) {
	if err != nil && w.err == nil {
		w.err = err
		w.closeAfter = true
	}
}

// sendHead writes the status line, the headers and what is held. whole
// says the handler has returned: what is held is the whole body.
func (w *frontResponse) sendHead(whole bool) {
	w.sent = true
	h := w.header
	if h.Get("Connection") == "close" || w.req.Close {
		w.closeAfter = true
	}
	if w.bodyAllowed() {
		h.Del("Transfer-Encoding")
		if w.clen < 0 {
			if whole {
				h.Set("Content-Length", strconv.Itoa(len(w.buf)))
			} else {
				w.chunked = true
				h.Set("Transfer-Encoding", "chunked")
			}
		}
		if _, ok := h["Content-Type"]; !ok && len(w.buf) > 0 {
			h.Set("Content-Type", http.DetectContentType(w.buf))
		}
	} else {
		h.Del("Content-Length")
		h.Del("Transfer-Encoding")
	}
	if _, ok := h["Date"]; !ok {
		h.Set("Date", w.fc.s.dateHeader(time.Now()))
	}
	if w.closeAfter {
		h.Set("Connection", "close")
	}
	bw := w.fc.bw
	w.statusLine(w.status)
	w.setErr(h.Write(bw))
	_, _ = bw.WriteString("\r\n")
	buf := w.buf
	w.buf = nil
	w.body(buf)
}

// Flush writes the head and what is held, and sends it (http.Flusher).
func (w *frontResponse) Flush() { _ = w.FlushError() }

// FlushError is Flush with its error (http.ResponseController).
func (w *frontResponse) FlushError() error {
	if w.done {
		return errDone
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.sent {
		w.sendHead(false)
	}
	w.setErr(w.fc.bw.Flush())
	return w.err
}

// SetReadDeadline sets the connection's read deadline
// (http.ResponseController).
func (w *frontResponse) SetReadDeadline(t time.Time) error { return w.fc.c.SetReadDeadline(t) }

// SetWriteDeadline sets the connection's write deadline
// (http.ResponseController).
func (w *frontResponse) SetWriteDeadline(t time.Time) error { return w.fc.c.SetWriteDeadline(t) }

// finish ends the answer once the handler returned.
func (w *frontResponse) finish() error {
	if !w.wroteHeader {
		w.writeHeader(http.StatusOK)
	}
	if !w.sent {
		w.sendHead(true)
	} else if w.chunked {
		_, err := w.fc.bw.WriteString("0\r\n\r\n")
		w.setErr(err)
	}
	if w.clen >= 0 && w.written != w.clen && w.bodyAllowed() {
		w.closeAfter = true // the answer is short of its Content-Length
	}
	w.setErr(w.fc.bw.Flush())
	return w.err
}

// Serve accepts from ln and serves what it accepts: plain requests here,
// the rest through net/http. It returns http.ErrServerClosed after
// Shutdown or Close.
func (s *Server) Serve(ln net.Listener) error {
	f := s
	f.mu.Lock()
	if f.shutdown.Load() {
		f.mu.Unlock()
		_ = ln.Close()
		return http.ErrServerClosed
	}
	f.lns[ln] = struct{}{}
	hand := f.hand
	if hand == nil {
		hand = newHandoff(ln.Addr())
		f.hand = hand
		go func() { _ = s.hs.Serve(hand) }()
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.lns, ln)
		f.mu.Unlock()
	}()
	ctx := context.WithValue(context.Background(), http.ServerContextKey, s.hs)
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if f.shutdown.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && !errors.Is(err, net.ErrClosed) {
				// Out of descriptors, say: wait and accept again, as
				// net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		go s.serveConn(ctx, c)
	}
}

// Shutdown stops the front's listeners, closes its idle connections and
// waits for the others to end, or ctx to (net/http's are the
// http.Server's to shut down).
func (s *Server) Shutdown(ctx context.Context) error {
	f := s
	f.shutdown.Store(true)
	s.closeListeners()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		f.mu.Lock()
		n := 0
		for fc := range f.conns {
			if fc.idle.CompareAndSwap(true, false) {
				_ = fc.c.Close()
			} else {
				n++
			}
		}
		f.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Close stops the front's listeners and closes its connections.
func (s *Server) Close() {
	f := s
	f.shutdown.Store(true)
	s.closeListeners()
	f.mu.Lock()
	for fc := range f.conns {
		_ = fc.c.Close()
	}
	f.mu.Unlock()
}

func (s *Server) closeListeners() {
	f := s
	f.mu.Lock()
	defer f.mu.Unlock()
	for ln := range f.lns {
		_ = ln.Close()
	}
	if f.hand != nil {
		_ = f.hand.Close() // a connection handed from now on is closed
	}
}
