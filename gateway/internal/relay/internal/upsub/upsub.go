// Package upsub subscribes a relay's upstream sessions (the shared ones,
// and the callers' own: Target.Own) to resource updates, at either
// revision of MCP, so that a subscription holds when its subscribe
// returns.
//
//	b := upsub.New(upsub.Options{})
//	err := b.Subscribe(ctx, sess, upsub.Target{Server: "github"}, uri, true)
//	...
//	err = b.Unsubscribe(ctx, sess, uri)
//
// and, in the receiving middleware of the sessions' client:
//
//	if method == "notifications/subscriptions/acknowledged" {
//		b.Acknowledged(sess, params)
//	}
//
// On 2025-11-25 a subscription is a request (resources/subscribe, then
// resources/unsubscribe) that the server answers once it holds: nothing
// more is needed.
//
// On 2026-07-28 the go-sdk (v1.8.0) subscribes by opening a
// subscriptions/listen stream in the background and returns before the
// server has seen it; it unsubscribes by cancelling that stream, also in
// the background. A go-sdk server tears a cancelled stream down whenever
// it gets to it, and the teardown removes the session's subscription to
// the URI, not that stream's: a new stream for the same URI that the
// server took first is undone by the old one's teardown (TestResubscribe
// counts how many). So on such a session a Book
//
//   - returns from Subscribe once the server acknowledged the stream
//     (notifications/subscriptions/acknowledged, which names the URIs it
//     took), not when the go-sdk returned; and
//   - opens a URI's stream again only Options.Settle after it cancelled
//     the last one on that session, where the server keeps one session
//     for them all (stdio, stateful HTTP), so that the old stream's
//     teardown is done first.
package upsub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of Options.
const (
	DefaultAckWait = 5 * time.Second
	DefaultSettle  = time.Second
)

// Options configure a Book.
type Options struct {
	// AckWait bounds the wait for a server's acknowledgement of a new
	// stream (DefaultAckWait when 0). The go-sdk drops a server's refusal
	// of a stream (an error answer to a request nobody awaits), so a
	// refused subscription is only seen as one never acknowledged.
	AckWait time.Duration
	// Settle is how long after cancelling a URI's stream on a session a
	// Book waits before it opens one for that URI again (DefaultSettle
	// when 0).
	Settle time.Duration
}

// Target is the server a session belongs to.
type Target struct {
	// Server is its name (for errors, and Forget).
	Server string
	// HTTP: it is spoken to over streamable HTTP.
	HTTP bool
	// Own: the session is one caller's own, not the server's shared one.
	// Forget leaves it alone; Drop forgets it when it closes.
	Own bool
}

// ErrNoPush answers a subscribe when the upstream cannot deliver resource
// updates: a stateless streamable HTTP server spoken to over 2025-11-25
// has no session and so no stream to send them on.
var ErrNoPush = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
	Message: "resources/subscribe: the upstream server is stateless and was negotiated at 2025-11-25, so it cannot send resource updates (set upstreamProtocol: auto to use 2026-07-28 subscriptions)"}

// ErrNoAck is wrapped by Subscribe's error when the server did not
// acknowledge the stream within Options.AckWait.
var ErrNoAck = errors.New("no acknowledgement")

// A Book holds the subscriptions of shared upstream sessions. Its methods
// may be called concurrently; a caller orders the subscribes and
// unsubscribes of one URI itself.
type Book struct {
	o  Options
	mu sync.Mutex
	m  map[*mcp.ClientSession]*streams
}

// streams is what a Book asked of one 2026-07-28 session.
type streams struct {
	server string
	own    bool // Target.Own
	// open are the URIs whose streams are open (asked for and not
	// cancelled); each channel is closed when the server acknowledged it.
	open map[string]chan struct{}
	// ended is when each URI's last stream was cancelled (kept for
	// Options.Settle).
	ended map[string]time.Time
}

// New returns an empty Book.
func New(o Options) *Book {
	if o.AckWait <= 0 {
		o.AckWait = DefaultAckWait
	}
	if o.Settle <= 0 {
		o.Settle = DefaultSettle
	}
	return &Book{o: o, m: map[*mcp.ClientSession]*streams{}}
}

// usesListen reports whether s subscribes by subscriptions/listen streams
// (a session negotiated at 2026-07-28 or later).
func usesListen(s *mcp.ClientSession) bool {
	ir := s.InitializeResult()
	return ir != nil && ir.ProtocolVersion >= "2026-07-28"
}

// Subscribe subscribes s, a session of t, to uri, and returns once the
// server holds the subscription (with await; without, once it is asked
// for: subscriptions renewed on a new session were answered long ago).
func (b *Book) Subscribe(ctx context.Context, s *mcp.ClientSession, t Target, uri string, await bool) error {
	stateless := t.HTTP && s.ID() == ""
	if !usesListen(s) {
		if stateless {
			return ErrNoPush
		}
		return s.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	}
	if ir := s.InitializeResult(); ir.Capabilities == nil || ir.Capabilities.Resources == nil || !ir.Capabilities.Resources.Subscribe {
		return fmt.Errorf("resources/subscribe: server %q does not offer resource subscriptions", t.Server)
	}
	acked, opening, wait := b.openStream(t, s, uri)
	if !opening {
		// A stream is open (or opening) already: the go-sdk would not
		// open another. Wait for its acknowledgement, if not yet in.
		if !await {
			return nil
		}
		err := b.awaitAck(ctx, t.Server, uri, acked)
		if errors.Is(err, ErrNoAck) {
			// Never acknowledged: the next subscribe opens a new one.
			_ = b.Unsubscribe(ctx, s, uri)
		}
		return err
	}
	if wait > 0 && !stateless {
		// (A stateless HTTP server makes a session of each request: one
		// stream's teardown cannot touch another's subscription.)
		tm := time.NewTimer(wait)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			b.forget(s, uri, acked)
			return ctx.Err()
		}
	}
	if err := s.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		b.forget(s, uri, acked)
		return err
	}
	if !await {
		return nil
	}
	if err := b.awaitAck(ctx, t.Server, uri, acked); err != nil {
		// Not held: cancel the stream rather than leave it open for no
		// one (a late acknowledgement then finds no entry).
		_ = b.Unsubscribe(context.WithoutCancel(ctx), s, uri)
		return err
	}
	return nil
}

// Unsubscribe ends s's subscription to uri.
func (b *Book) Unsubscribe(ctx context.Context, s *mcp.ClientSession, uri string) error {
	err := s.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	if usesListen(s) {
		b.mu.Lock()
		if l := b.m[s]; l != nil {
			delete(l.open, uri)
			l.ended[uri] = time.Now()
		}
		b.mu.Unlock()
	}
	return err
}

// openStream registers uri's stream on s, unless one is open: it returns
// the channel closed at the stream's acknowledgement, whether the caller
// is to open the stream, and how long it must wait first (Settle).
func (b *Book) openStream(t Target, s *mcp.ClientSession, uri string) (acked chan struct{}, opening bool, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.m[s]
	if l == nil {
		l = &streams{server: t.Server, own: t.Own, open: map[string]chan struct{}{}, ended: map[string]time.Time{}}
		b.m[s] = l
	}
	if ch, ok := l.open[uri]; ok {
		return ch, false, 0
	}
	now := time.Now()
	for k, at := range l.ended {
		if now.Sub(at) >= b.o.Settle {
			delete(l.ended, k)
		}
	}
	if at, ok := l.ended[uri]; ok {
		wait = b.o.Settle - now.Sub(at)
	}
	acked = make(chan struct{})
	l.open[uri] = acked
	return acked, true, wait
}

// forget takes back a registration of openStream whose stream was not
// opened.
func (b *Book) forget(s *mcp.ClientSession, uri string, acked chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if l := b.m[s]; l != nil && l.open[uri] == acked {
		delete(l.open, uri)
	}
}

// awaitAck waits for a stream's acknowledgement.
func (b *Book) awaitAck(ctx context.Context, server, uri string, acked chan struct{}) error {
	t := time.NewTimer(b.o.AckWait)
	defer t.Stop()
	select {
	case <-acked:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("resources/subscribe: server %q did not acknowledge the subscription to %s within %v (a server that refuses one sends no acknowledgement): %w", server, uri, b.o.AckWait, ErrNoAck)
	}
}

// Acknowledged marks the URIs a server took on a stream of s as held. Call
// it with every notifications/subscriptions/acknowledged a session gets.
func (b *Book) Acknowledged(s *mcp.ClientSession, p *mcp.SubscriptionsAcknowledgedParams) {
	if p == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.m[s]
	if l == nil {
		return
	}
	for _, uri := range p.Notifications.ResourceSubscriptions {
		if ch := l.open[uri]; ch != nil {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
	}
}

// Forget drops what b knew of server's shared sessions but live (their
// streams ended with them: call it when a server's shared session was
// replaced). Sessions subscribed with Target.Own are kept.
func (b *Book) Forget(server string, live *mcp.ClientSession) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s, l := range b.m {
		if l.server == server && s != live && !l.own {
			delete(b.m, s)
		}
	}
}

// Drop forgets what b knew of s (call it when s is closed).
func (b *Book) Drop(s *mcp.ClientSession) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, s)
}
