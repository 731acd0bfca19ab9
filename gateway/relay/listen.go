package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// This file holds the relay's resource subscriptions on the shared
// upstream sessions, for both revisions of the protocol.
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
// server took first is undone by the old one's teardown (measured: 239
// subscriptions of 300 lost, unsubscribing and subscribing at once over
// an in-memory pair). So on such a session the relay
//   - answers a subscribe once the server acknowledged it
//     (notifications/subscriptions/acknowledged, which names the URIs it
//     took), not when the go-sdk returned; and
//   - opens a URI's stream again only listenSettle after it cancelled the
//     last one on that session (stdio, stateful HTTP), so that the old
//     stream's teardown is done first.

// listenAck bounds the wait for a server's acknowledgement of a new
// subscriptions/listen stream. The go-sdk drops a server's refusal of the
// stream (an error answer to a request nobody awaits), so a refused
// subscription is only seen as one that was never acknowledged.
const listenAck = 5 * time.Second

// listenSettle is how long after cancelling a URI's stream on a session
// the relay waits before it opens one for that URI again.
const listenSettle = time.Second

// listens is what the relay asked of one 2026-07-28 shared session.
type listens struct {
	u *toolset.Upstream
	// uris are the URIs whose streams are open (asked for and not
	// cancelled); each channel is closed when the server acknowledged it.
	uris map[string]chan struct{}
	// ended is when each URI's last stream was cancelled (kept for
	// listenSettle).
	ended map[string]time.Time
}

// usesListen reports whether s subscribes by subscriptions/listen streams
// (a session negotiated at 2026-07-28 or later).
func usesListen(s *mcp.ClientSession) bool {
	ir := s.InitializeResult()
	return ir != nil && ir.ProtocolVersion >= "2026-07-28"
}

// upSubscribe subscribes u's shared session s to uri and returns once the
// server holds the subscription (with await; without, once it is asked
// for: resubscribe renews subscriptions whose subscribers were answered
// long ago).
func (r *Relay) upSubscribe(ctx context.Context, u *toolset.Upstream, s *mcp.ClientSession, uri string, await bool) error {
	if !usesListen(s) {
		return s.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	}
	if ir := s.InitializeResult(); ir.Capabilities == nil || ir.Capabilities.Resources == nil || !ir.Capabilities.Resources.Subscribe {
		return fmt.Errorf("resources/subscribe: server %q does not offer resource subscriptions", u.Name())
	}
	acked, open, wait := r.openListen(u, s, uri)
	if !open {
		// A stream is open (or opening) already: the go-sdk would not
		// open another. Wait for its acknowledgement, if not yet in.
		if !await {
			return nil
		}
		err := r.awaitAck(ctx, u, uri, acked)
		if errors.Is(err, errNoAck) {
			// Never acknowledged: the next subscribe opens a new one.
			_ = r.upUnsubscribe(ctx, s, uri)
		}
		return err
	}
	if wait > 0 && !(u.Type() == "streamable-http" && s.ID() == "") {
		// (A stateless HTTP server makes a session of each request: one
		// stream's teardown cannot touch another's subscription.)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			r.forgetListen(s, uri, acked)
			return ctx.Err()
		}
	}
	if err := s.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		r.forgetListen(s, uri, acked)
		return err
	}
	if !await {
		return nil
	}
	if err := r.awaitAck(ctx, u, uri, acked); err != nil {
		// Not held: cancel the stream rather than leave it open for no
		// one (a late acknowledgement then finds no entry).
		_ = r.upUnsubscribe(context.WithoutCancel(ctx), s, uri)
		return err
	}
	return nil
}

// upUnsubscribe ends the shared session s's subscription to uri.
func (r *Relay) upUnsubscribe(ctx context.Context, s *mcp.ClientSession, uri string) error {
	err := s.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	if usesListen(s) {
		r.mu.Lock()
		if l := r.listens[s]; l != nil {
			delete(l.uris, uri)
			l.ended[uri] = time.Now()
		}
		r.mu.Unlock()
	}
	return err
}

// openListen registers uri's stream on s, unless one is open: it returns
// the channel closed at the stream's acknowledgement, whether the caller
// is to open the stream, and how long it must wait first (listenSettle).
func (r *Relay) openListen(u *toolset.Upstream, s *mcp.ClientSession, uri string) (acked chan struct{}, open bool, wait time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.listens[s]
	if l == nil {
		l = &listens{u: u, uris: map[string]chan struct{}{}, ended: map[string]time.Time{}}
		r.listens[s] = l
	}
	if ch, ok := l.uris[uri]; ok {
		return ch, false, 0
	}
	now := time.Now()
	for k, at := range l.ended {
		if now.Sub(at) >= listenSettle {
			delete(l.ended, k)
		}
	}
	if at, ok := l.ended[uri]; ok {
		wait = listenSettle - now.Sub(at)
	}
	acked = make(chan struct{})
	l.uris[uri] = acked
	return acked, true, wait
}

// forgetListen takes back a registration of openListen whose stream was
// not opened.
func (r *Relay) forgetListen(s *mcp.ClientSession, uri string, acked chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := r.listens[s]; l != nil && l.uris[uri] == acked {
		delete(l.uris, uri)
	}
}

// awaitAck waits for a stream's acknowledgement.
func (r *Relay) awaitAck(ctx context.Context, u *toolset.Upstream, uri string, acked chan struct{}) error {
	t := time.NewTimer(listenAck)
	defer t.Stop()
	select {
	case <-acked:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("resources/subscribe: server %q did not acknowledge the subscription to %s within %v (a server that refuses one sends no acknowledgement): %w", u.Name(), uri, listenAck, errNoAck)
	}
}

// errNoAck is wrapped by awaitAck's error when the wait ran out.
var errNoAck = errors.New("no acknowledgement")

// acknowledged marks the URIs a server took on a stream of s as held
// (the sharedMiddleware sees notifications/subscriptions/acknowledged).
func (r *Relay) acknowledged(s *mcp.ClientSession, p *mcp.SubscriptionsAcknowledgedParams) {
	if p == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.listens[s]
	if l == nil {
		return
	}
	for _, uri := range p.Notifications.ResourceSubscriptions {
		if ch := l.uris[uri]; ch != nil {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
	}
}

// forgetSessions drops what the relay knew of u's former shared sessions
// (SessionHooks.Reconnected: their streams ended with them).
func (r *Relay) forgetSessions(u *toolset.Upstream) {
	live := u.Live()
	r.mu.Lock()
	defer r.mu.Unlock()
	for s, l := range r.listens {
		if l.u == u && s != live {
			delete(r.listens, s)
		}
	}
}
