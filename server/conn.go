package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/server/internal/front"
)

// Defaults of [HTTPLimits] (its fields say them).
const (
	// defaultReadHeaderTimeout bounds reading a request's headers.
	defaultReadHeaderTimeout = 10 * time.Second
	// defaultReadTimeout bounds reading a whole request, headers and body.
	defaultReadTimeout = 30 * time.Second
	// defaultWriteTimeout bounds each write of an answer.
	defaultWriteTimeout = 30 * time.Second
	// defaultConnIdleTimeout closes a keep-alive connection idle this long.
	defaultConnIdleTimeout = 2 * time.Minute
	// defaultUnauthenticatedIdleTimeout closes sooner an idle connection
	// none of whose requests was authenticated.
	defaultUnauthenticatedIdleTimeout = 10 * time.Second
	// DefaultMaxConns caps the connections open at once.
	DefaultMaxConns = 16384
)

// HTTPLimits bound what one client may hold of an HTTP server made by
// [NewHTTPServer]: the time it takes to send a request, the time a write
// may wait for it to read, its idle connections, and the connections open
// at once. Zero fields mean their defaults.
//
// No limit applies to how long an answer lasts: an SSE stream (a long
// tools/call, the standalone GET stream) stays open as long as it has
// something to say. Each write of it is bounded instead, and the request's
// read deadline is lifted once its body has been read (net/http would
// otherwise cancel the request when it passed).
type HTTPLimits struct {
	// ReadHeaderTimeout bounds reading a request's headers (default 10s,
	// and never more than ReadTimeout). A connection that sends nothing
	// is closed after it.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, headers and body
	// (default 30s): a client that sends its body slowly, or never
	// finishes it, loses its connection.
	ReadTimeout time.Duration
	// WriteTimeout bounds each write of an answer (default 30s): a client
	// that stops reading for this long loses its connection. A stream that
	// keeps writing is never cut.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long between
	// requests (default 2m).
	IdleTimeout time.Duration
	// UnauthenticatedIdleTimeout closes an idle connection sooner when
	// none of its requests was authenticated: none reached the handler
	// behind [HTTPOptions.Verifier] (default 10s, and never more than
	// IdleTimeout).
	UnauthenticatedIdleTimeout time.Duration
	// MaxConns caps the connections open at once (default 16384: a
	// stateful session holds one for its standalone SSE stream, and the
	// gateway is sized for 10,000 idle sessions). Beyond
	// it, Serve accepts no more until one closes: the others wait in the
	// kernel's backlog, while the open connections keep being served.
	// A process with several listeners splits its file-descriptor limit
	// among their caps (`gatehouse serve` does).
	MaxConns int
}

// ErrInvalidLimits reports HTTPLimits NewHTTPServer cannot use.
var ErrInvalidLimits = errors.New("server: invalid HTTP limits")

// resolve returns l with the defaults filled in.
func (l HTTPLimits) resolve() (HTTPLimits, error) {
	for name, d := range map[string]time.Duration{"ReadHeaderTimeout": l.ReadHeaderTimeout, "ReadTimeout": l.ReadTimeout,
		"WriteTimeout": l.WriteTimeout, "IdleTimeout": l.IdleTimeout, "UnauthenticatedIdleTimeout": l.UnauthenticatedIdleTimeout} {
		if d < 0 {
			return l, fmt.Errorf("%w: %s %v is negative", ErrInvalidLimits, name, d)
		}
	}
	if l.MaxConns < 0 {
		return l, fmt.Errorf("%w: MaxConns %d is negative", ErrInvalidLimits, l.MaxConns)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&l.ReadTimeout, defaultReadTimeout)
	def(&l.ReadHeaderTimeout, min(defaultReadHeaderTimeout, l.ReadTimeout))
	def(&l.WriteTimeout, defaultWriteTimeout)
	def(&l.IdleTimeout, defaultConnIdleTimeout)
	def(&l.UnauthenticatedIdleTimeout, min(defaultUnauthenticatedIdleTimeout, l.IdleTimeout))
	l.ReadHeaderTimeout = min(l.ReadHeaderTimeout, l.ReadTimeout)
	l.UnauthenticatedIdleTimeout = min(l.UnauthenticatedIdleTimeout, l.IdleTimeout)
	if l.MaxConns == 0 {
		l.MaxConns = DefaultMaxConns
	}
	return l, nil
}

// HTTPServer is an http.Server with [HTTPLimits] applied. Serve it with
// its Serve method (which applies MaxConns; the embedded server's
// ListenAndServe would not), stop it with Shutdown or Close.
type HTTPServer struct {
	*http.Server
	limits HTTPLimits
	conns  conns
	front  *front.Server
}

// NewHTTPServer returns a server of h with limits (nil means defaults).
// [Server.Handler]'s authenticated requests mark their connection, so
// that it is kept open for IdleTimeout rather than
// UnauthenticatedIdleTimeout.
func NewHTTPServer(h http.Handler, limits *HTTPLimits) (*HTTPServer, error) {
	var l HTTPLimits
	if limits != nil {
		l = *limits
	}
	l, err := l.resolve()
	if err != nil {
		return nil, err
	}
	s := &HTTPServer{limits: l, conns: conns{m: map[net.Conn]*connInfo{}, idle: l.UnauthenticatedIdleTimeout}}
	s.Server = &http.Server{
		Handler:           deadlines(h, l.WriteTimeout),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		// WriteTimeout stays off: it would cut a stream at a fixed time
		// after its request. Each write is bounded instead (deadlines).
		IdleTimeout: l.IdleTimeout,
		ConnContext: s.conns.context,
		ConnState:   s.conns.state,
	}
	s.front = front.New(s.Server, front.Timeouts{ReadHeader: l.ReadHeaderTimeout, Read: l.ReadTimeout, Idle: l.IdleTimeout})
	return s, nil
}

// Serve accepts connections on ln, at most MaxConns open at once, and
// serves them until the server is shut down or closed. The plain
// requests of an MCP client are served by the server's own HTTP/1.1 loop,
// everything else by the embedded http.Server (package server/internal/front);
// both apply the same handler, limits and hooks.
func (s *HTTPServer) Serve(ln net.Listener) error {
	return s.front.Serve(newLimitListener(ln, s.limits.MaxConns))
}

// Shutdown stops accepting, closes idle connections and waits for the
// others to finish their requests, or ctx to end (http.Server.Shutdown).
func (s *HTTPServer) Shutdown(ctx context.Context) error {
	err := s.front.Shutdown(ctx)
	if err2 := s.Server.Shutdown(ctx); err == nil {
		err = err2
	}
	return err
}

// Close stops accepting and closes every connection at once
// (http.Server.Close).
func (s *HTTPServer) Close() error {
	s.front.Close()
	return s.Server.Close()
}

// OpenConns returns the number of connections open.
func (s *HTTPServer) OpenConns() int {
	s.conns.mu.Lock()
	defer s.conns.mu.Unlock()
	return len(s.conns.m)
}

// deadlines applies per-request deadlines: the read deadline (ReadTimeout,
// set by net/http) is lifted once the body has been read, and each write
// gets writeTimeout from the moment it is made.
func deadlines(h http.Handler, writeTimeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g := &guarded{rc: *http.NewResponseController(w)} // one allocation a request
		if r.Body == nil || r.Body == http.NoBody {
			_ = g.rc.SetReadDeadline(time.Time{})
		} else {
			g.body = liftOnEOF{ReadCloser: r.Body, rc: &g.rc}
			r.Body = &g.body
		}
		g.w = deadlineWriter{ResponseWriter: w, rc: &g.rc, d: writeTimeout}
		h.ServeHTTP(&g.w, r)
		g.w.extend() // net/http flushes what is buffered after the handler
	})
}

// guarded is what deadlines wraps a request in.
type guarded struct {
	rc   http.ResponseController
	w    deadlineWriter
	body liftOnEOF
}

// liftOnEOF lifts the connection's read deadline when the body has been
// read to its end: the answer may then take as long as it needs, and
// net/http's read in the background (which notices a client that goes
// away) must not end the request when the deadline passes.
type liftOnEOF struct {
	io.ReadCloser
	rc     *http.ResponseController
	lifted bool
}

func (b *liftOnEOF) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.lifted {
		b.lifted = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// deadlineWriter sets the connection's write deadline before each write
// and flush.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (w *deadlineWriter) extend() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.d)) }

// Write writes p within the write timeout.
func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.extend()
	return w.ResponseWriter.Write(p)
}

// Flush flushes within the write timeout (http.Flusher).
func (w *deadlineWriter) Flush() { _ = w.FlushError() }

// FlushError flushes within the write timeout (http.ResponseController).
func (w *deadlineWriter) FlushError() error {
	w.extend()
	return w.rc.Flush()
}

// Unwrap returns the underlying writer (http.ResponseController).
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// conns tracks the open connections: whether a request of theirs was
// authenticated, and the timer that closes an idle one that was not.
type conns struct {
	idle time.Duration

	mu sync.Mutex
	m  map[net.Conn]*connInfo
}

type connInfo struct {
	conn   net.Conn
	authed atomic.Bool
	timer  *time.Timer // closes the idle unauthenticated connection
}

type connKey struct{}

// context registers c (http.Server.ConnContext).
func (cs *conns) context(ctx context.Context, c net.Conn) context.Context {
	ci := &connInfo{conn: c}
	cs.mu.Lock()
	cs.m[c] = ci
	cs.mu.Unlock()
	return context.WithValue(ctx, connKey{}, ci)
}

// state follows c's state (http.Server.ConnState).
func (cs *conns) state(c net.Conn, st http.ConnState) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	ci := cs.m[c]
	if ci == nil {
		return
	}
	if ci.timer != nil {
		ci.timer.Stop()
		ci.timer = nil
	}
	switch st {
	case http.StateIdle:
		if !ci.authed.Load() {
			ci.timer = time.AfterFunc(cs.idle, func() { _ = c.Close() })
		}
	case http.StateClosed, http.StateHijacked:
		delete(cs.m, c)
	}
}

// markAuthenticated records that a request of the connection serving ctx
// was authenticated (a no-op outside an HTTPServer).
func markAuthenticated(ctx context.Context) {
	if ci, ok := ctx.Value(connKey{}).(*connInfo); ok && !ci.authed.Load() {
		ci.authed.Store(true)
	}
}

// limitListener accepts at most max connections open at once.
type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func newLimitListener(ln net.Listener, max int) *limitListener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, max), done: make(chan struct{})}
}

// Accept waits for a free slot, then for a connection.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

// Close closes the listener; an Accept waiting for a slot returns.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn frees its slot once, when it is closed.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// NetConn returns the connection under the cap's wrapper (as
// *tls.Conn's NetConn does).
func (c *limitConn) NetConn() net.Conn { return c.Conn }

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
