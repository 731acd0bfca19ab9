package server

//lint:file-ignore SA1019 a session's log level (deprecated by SEP-2577, still in 2025-11-25) is part of what a replica follows.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/store"
)

// The caller's standalone stream (its HTTP GET) is held by one replica at
// a time, and that replica owns what the stream carries:
//
//   - Subscriptions. A resources/subscribe is served where it arrives and
//     recorded in the session's row (replicated.Subscriptions); the replica
//     holding the stream makes every subscription of the row on its own
//     copy of the session (follow: a resources/subscribe of Gatehouse's
//     own, so a gateway subscribes upstream there), when the stream opens
//     and whenever the row changes. So the updates the caller hears come
//     from that replica, once, and a subscription outlives the replica
//     that served it: when the holder goes, the caller opens its stream on
//     another replica, which makes the row's subscriptions again. Another
//     replica's copy drops the updates it hears (it has no stream).
//   - Notifications that only the replica producing them can produce (a
//     log message or progress not tied to a request it serves: an upstream
//     session of the caller's own logs there). A replica that does not
//     hold the stream sends them to the holder through the Messenger
//     (passOn); one larger than store.MaxMessage is dropped (logged at
//     debug level). Resource updates and list changes are not sent: the
//     holder hears the same upstream and sends its own.
//
// With a Messenger, the row also names the holder (replicated.Stream): a
// replica that records a change of the row tells the holder at once
// (kindChanged) and, for a subscription, waits for it to be followed
// (kindAck, at most ackWait), so that the caller's subscribe is answered
// when its stream will carry the updates. Without one (SQLite), the holder
// follows the row when the stream opens and at its next check.

// Kinds of busMessage beside a caller's message.
const (
	kindNote    = "note"    // a notification for the caller's standalone stream
	kindChanged = "changed" // the session's row changed: the holder follows it
	kindAck     = "ack"     // the holder followed the row (Nonce)
	kindStream  = "stream"  // From took the stream (Holds) or let it go
	kindLevel   = "level"   // From set the session's log level (Body)
	kindAsk     = "ask"     // a request for the caller's stream (sessionask.go)
	kindReply   = "reply"   // the caller's answer to a kindAsk (Nonce)
	kindAsking  = "asking"  // the holder is still asking the caller (Nonce)
)

// ackWait bounds how long a subscribe waits for the holder of the
// caller's stream to follow it; noteTimeout the passing on of a
// notification.
const (
	ackWait     = 2 * time.Second
	noteTimeout = 5 * time.Second
)

// maxStoredSubs and maxStoredURI bound what a session's row records of
// its subscriptions: one beyond them holds on the replica that served it
// only (logged).
const (
	maxStoredSubs = 256
	maxStoredURI  = 2048
)

// storedState is savedSession with the initialize parameters as stored,
// so that changing the rest rewrites them byte for byte.
type storedState struct {
	Initialize json.RawMessage `json:"initialize"`
	Protocol   string          `json:"protocol"`
	replicated
}

// swapTries bounds update's read-change-swap rounds.
const swapTries = 8

// update changes the replicated part of session id's row: it reads the
// row, applies change, and swaps the result in, again when another write
// came first. It returns the part as stored and whether change changed it
// (false too when the session is not live).
func (x *sharedSessions) update(ctx context.Context, id string, change func(*replicated) bool) (replicated, bool, error) {
	ctx = context.WithoutCancel(ctx)
	for range swapTries {
		now := x.now()
		row, ok, err := x.st.Session(ctx, id, now)
		if err != nil {
			return replicated{}, false, err
		}
		if !ok || row.Closed {
			return replicated{}, false, nil
		}
		var st storedState
		if err := json.Unmarshal(row.State, &st); err != nil {
			return replicated{}, false, fmt.Errorf("server: the session's stored state: %w", err)
		}
		if !change(&st.replicated) {
			return st.replicated, false, nil
		}
		b, err := json.Marshal(st)
		if err != nil {
			return replicated{}, false, err
		}
		swapped, err := x.st.SwapSession(ctx, id, row.State, b, now)
		if err != nil {
			return replicated{}, false, err
		}
		if swapped {
			return st.replicated, true, nil
		}
	}
	return replicated{}, false, fmt.Errorf("server: the session's row changed under %d attempts to change it", swapTries)
}

// stream serves the caller's standalone stream (a GET) of session id here:
// for as long as it lasts, this replica holds it, with the row's
// subscriptions. They are made as the go-sdk opens the stream, before its
// first byte (openWriter): the go-sdk writes nothing on the stream until
// it is open, so an update of one of them waits for it rather than being
// lost, and the caller sees its stream open once they are made.
func (x *sharedSessions) stream(w http.ResponseWriter, r *http.Request, id string, h *heldSession, next http.Handler) {
	if _, ok := accepts(r.Header.Values("Accept")); !ok || r.Header.Get("Last-Event-ID") != "" {
		next.ServeHTTP(w, r) // refused, or not the standalone stream
		return
	}
	tok := auth.TokenInfoFromContext(r.Context())
	ow := &openWriter{ResponseWriter: w, open: func() {
		h.mu.Lock()
		h.streamTok = tok
		h.mu.Unlock()
		h.streams.Add(1)
		x.took(r.Context(), id, h, tok)
	}}
	next.ServeHTTP(ow, r)
	if ow.opened {
		x.letGo(r.Context(), id, h)
	}
}

// openWriter runs open when a 200 is written, before it passes on: the
// go-sdk writes it when it opens the standalone stream.
type openWriter struct {
	http.ResponseWriter
	open   func()
	opened bool // open ran
	wrote  bool // the status is written
}

func (o *openWriter) WriteHeader(code int) {
	if !o.wrote {
		o.wrote = true
		if code == http.StatusOK {
			o.opened = true
			o.open()
		}
	}
	o.ResponseWriter.WriteHeader(code)
}

func (o *openWriter) Write(p []byte) (int, error) {
	if !o.wrote {
		o.WriteHeader(http.StatusOK)
	}
	return o.ResponseWriter.Write(p)
}

func (o *openWriter) Flush() {
	if f, ok := o.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the writer below.
func (o *openWriter) Unwrap() http.ResponseWriter { return o.ResponseWriter }

// took records this replica as the holder of session id's stream (with a
// Messenger) and makes the row's subscriptions here.
func (x *sharedSessions) took(ctx context.Context, id string, h *heldSession, tok *auth.TokenInfo) {
	if x.bus != nil {
		h.streamMu.Lock()
		_, changed, err := x.update(ctx, id, func(r *replicated) bool {
			if r.Stream == x.tag {
				return false
			}
			r.Stream = x.tag
			return true
		})
		h.mu.Lock()
		h.saved.Stream = x.tag
		h.mu.Unlock()
		if err != nil {
			x.log.Warn("server: the holder of the caller's stream was not stored: other replicas' notifications may not reach it", "err", err)
		}
		if changed {
			x.announce(ctx, id, true)
		}
		h.streamMu.Unlock()
	}
	x.follow(ctx, id, h, tok)
}

// letGo ends a stream of session id here; the last one takes this
// replica's name off the row.
func (x *sharedSessions) letGo(ctx context.Context, id string, h *heldSession) {
	h.streamMu.Lock()
	defer h.streamMu.Unlock()
	if h.streams.Add(-1) > 0 || x.bus == nil {
		return
	}
	_, changed, err := x.update(ctx, id, func(r *replicated) bool {
		if r.Stream != x.tag {
			return false // another replica took it since
		}
		r.Stream = ""
		return true
	})
	if err != nil {
		x.log.Debug("server: the end of the caller's stream was not stored", "err", err)
	}
	if changed {
		x.announce(ctx, id, false)
	}
}

// announce tells every replica that this one took session id's stream
// (holds) or let it go, so that their copies know where to send what only
// they produce.
func (x *sharedSessions) announce(ctx context.Context, id string, holds bool) {
	msg, _ := json.Marshal(busMessage{Session: id, Kind: kindStream, From: x.tag, Holds: holds})
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), noteTimeout)
	defer cancel()
	if err := x.bus.Send(ctx, busAll, msg); err != nil {
		x.log.Debug("server: the holder of a caller's stream was not announced", "err", err)
	}
}

// announceLevel tells every replica that the caller of session id set
// its log level to level here (and in the row).
func (x *sharedSessions) announceLevel(ctx context.Context, id string, level mcp.LoggingLevel) {
	body, _ := json.Marshal(level)
	msg, _ := json.Marshal(busMessage{Session: id, Kind: kindLevel, From: x.tag, Body: body})
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), noteTimeout)
	defer cancel()
	if err := x.bus.Send(ctx, busAll, msg); err != nil {
		x.log.Debug("server: a log level was not announced: other replicas take it at their next check", "err", err)
	}
}

// levelChanged is another replica's announcement of session id's new log
// level. The replica holding the caller's stream follows the row (its
// subscriptions may have moved too); one holding a copy of the session
// without the stream replays the level into it, as its next check would,
// with the session's user's verified identity (as a message another
// replica passes on).
func (x *sharedSessions) levelChanged(m busMessage) {
	h := x.lookup(m.Session)
	if h == nil || m.From == x.tag {
		return
	}
	var level mcp.LoggingLevel
	if json.Unmarshal(m.Body, &level) != nil || level == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), noteTimeout)
	defer cancel()
	if h.streams.Load() > 0 {
		h.mu.Lock()
		tok := h.streamTok
		h.mu.Unlock()
		x.follow(ctx, m.Session, h, tok)
		return
	}
	h.mu.Lock()
	same := h.saved.LogLevel == level
	h.saved.LogLevel = level
	proto := h.saved.Protocol
	h.mu.Unlock()
	if same {
		return
	}
	x.replayAs(ctx, m.Session, proto, h.userID, nil, "logging/setLevel", map[string]any{"level": level})
}

// streamMoved is another replica's announcement about session id's stream.
func (x *sharedSessions) streamMoved(m busMessage) {
	h := x.lookup(m.Session)
	if h == nil || m.From == x.tag {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case m.Holds:
		h.saved.Stream = m.From
	case h.saved.Stream == m.From:
		h.saved.Stream = ""
	}
}

// follow makes the row's subscriptions and log level those of session id
// here (h holds its stream): a resources/subscribe of Gatehouse's own for
// each one the row has that is not made here, a resources/unsubscribe for
// each one made here that the row no longer has, with the credentials of
// tok (the stream's request's).
func (x *sharedSessions) follow(ctx context.Context, id string, h *heldSession, tok *auth.TokenInfo) {
	h.following.Lock()
	defer h.following.Unlock()
	row, ok, err := x.st.Session(ctx, id, x.now())
	if err != nil {
		x.log.Warn("server: reading the session's subscriptions from the store", "err", err)
		return
	}
	var saved savedSession
	if !ok || row.Closed || json.Unmarshal(row.State, &saved) != nil {
		return
	}
	h.mu.Lock()
	h.saved.Subscriptions = saved.Subscriptions
	if saved.Stream != "" {
		h.saved.Stream = saved.Stream
	}
	level := saved.LogLevel != "" && saved.LogLevel != h.saved.LogLevel
	if level {
		h.saved.LogLevel = saved.LogLevel
	}
	proto := h.saved.Protocol
	var add, drop []string
	for _, uri := range saved.Subscriptions {
		if _, tried := h.subs[uri]; !tried {
			add = append(add, uri)
		}
	}
	for uri, made := range h.subs {
		if made && !slices.Contains(saved.Subscriptions, uri) {
			drop = append(drop, uri)
		}
	}
	h.mu.Unlock()
	if level {
		x.replay(ctx, id, proto, tok, "logging/setLevel", map[string]any{"level": saved.LogLevel})
	}
	for _, uri := range add {
		x.replay(ctx, id, proto, tok, "resources/subscribe", &mcp.SubscribeParams{URI: uri})
		h.mu.Lock()
		if _, made := h.subs[uri]; !made {
			h.subs[uri] = false // refused here: not tried again on this copy
			x.log.Debug("server: a subscription of the session could not be made on the replica holding its stream")
		}
		h.mu.Unlock()
	}
	for _, uri := range drop {
		x.replay(ctx, id, proto, tok, "resources/unsubscribe", &mcp.UnsubscribeParams{URI: uri})
	}
}

// subscribedTo reports whether the session here is subscribed to exactly
// uris (h.mu held).
func (h *heldSession) subscribedTo(uris []string) bool {
	n := 0
	for _, made := range h.subs {
		if made {
			n++
		}
	}
	if n != len(uris) {
		return false
	}
	for _, uri := range uris {
		if !h.subs[uri] {
			return false
		}
	}
	return true
}

// subscribed records a resources/subscribe (on) or resources/unsubscribe
// the go-sdk just served on a session here: in the session's row, for the
// replica holding the caller's stream, which it then tells and, for a
// subscribe, waits for. A replay of Gatehouse's own (follow) is recorded
// here only.
func (x *sharedSessions) subscribed(ctx context.Context, req mcp.Request, on bool) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss == nil {
		return
	}
	h := x.lookup(ss.ID())
	if h == nil || h.ss != ss {
		return
	}
	var uri string
	switch p := req.GetParams().(type) {
	case *mcp.SubscribeParams:
		uri = p.URI
	case *mcp.UnsubscribeParams:
		uri = p.URI
	}
	if uri == "" {
		return
	}
	mark := func() {
		h.mu.Lock()
		if on {
			h.subs[uri] = true
		} else {
			delete(h.subs, uri)
		}
		h.mu.Unlock()
	}
	if ex := req.GetExtra(); ex != nil && ex.Header.Get(replayHeader) != "" {
		mark()
		return
	}
	h.following.Lock()
	mark()
	var full bool
	rep, changed, err := x.update(ctx, ss.ID(), func(r *replicated) bool {
		i := slices.Index(r.Subscriptions, uri)
		switch {
		case on && i < 0:
			if full = len(r.Subscriptions) >= maxStoredSubs || len(uri) > maxStoredURI; full {
				return false
			}
			r.Subscriptions = append(r.Subscriptions, uri)
			return true
		case !on && i >= 0:
			r.Subscriptions = slices.Delete(r.Subscriptions, i, i+1)
			return true
		}
		return false
	})
	if changed {
		h.mu.Lock()
		h.saved.Subscriptions = rep.Subscriptions
		h.mu.Unlock()
	}
	h.following.Unlock()
	switch {
	case err != nil:
		x.log.Warn("server: the session's subscription was not stored: it holds on this replica only", "err", err)
		return
	case full:
		x.log.Warn("server: the session has too many subscriptions (or too long a URI) to store: this one holds on this replica only", "max", maxStoredSubs)
		return
	}
	if changed && x.bus != nil && rep.Stream != "" && rep.Stream != x.tag {
		x.tell(ctx, rep.Stream, ss.ID(), true)
	}
}

// tell tells holder, the replica holding session id's stream, that the
// session's row changed, and when wait is set waits until it followed the
// change (at most ackWait).
func (x *sharedSessions) tell(ctx context.Context, holder, id string, wait bool) {
	m := busMessage{Session: id, Kind: kindChanged, From: x.tag}
	var done <-chan []byte
	if wait {
		var forget func()
		m.Nonce, done, forget = x.await()
		defer forget()
	}
	msg, _ := json.Marshal(m)
	if err := x.bus.Send(context.WithoutCancel(ctx), busBox(holder), msg); err != nil {
		x.log.Warn("server: the replica holding the caller's stream was not told of a change: it follows it at its next check", "err", err)
		return
	}
	if !wait {
		return
	}
	t := time.NewTimer(ackWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		x.log.Debug("server: the replica holding the caller's stream did not answer; it follows the change at its next check")
	case <-ctx.Done():
	}
}

// changed follows a change of session id's row another replica made, when
// this replica holds the caller's stream, and answers the sender.
func (x *sharedSessions) changed(m busMessage) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if h := x.lookup(m.Session); h != nil && h.streams.Load() > 0 {
		h.mu.Lock()
		tok := h.streamTok
		h.mu.Unlock()
		x.follow(ctx, m.Session, h, tok)
	}
	if m.Nonce == "" || m.From == "" || x.bus == nil {
		return
	}
	msg, _ := json.Marshal(busMessage{Session: m.Session, Kind: kindAck, Nonce: m.Nonce})
	if err := x.bus.Send(ctx, busBox(m.From), msg); err != nil {
		x.log.Debug("server: a change followed was not acknowledged", "err", err)
	}
}

// await registers a wait for another replica's answer: its nonce, the
// channel the answer (kindAck's or kindReply's Body) comes on, and the
// function that ends the wait.
func (x *sharedSessions) await() (nonce string, answer <-chan []byte, forget func()) {
	nonce = newTag()
	ch := make(chan []byte, 1)
	x.mu.Lock()
	x.waits[nonce] = ch
	x.mu.Unlock()
	return nonce, ch, func() {
		x.mu.Lock()
		delete(x.waits, nonce)
		x.mu.Unlock()
	}
}

// answered hands another replica's answer to the wait for nonce, if any.
func (x *sharedSessions) answered(nonce string, body []byte) {
	x.mu.Lock()
	ch := x.waits[nonce]
	x.mu.Unlock()
	if ch != nil {
		select {
		case ch <- body:
		default: // answered already
		}
	}
}

// noteKey marks the context of a notification a replica writes on the
// stream it holds for another replica: it is not passed on again.
type noteKey struct{}

// sending is the innermost sending middleware of the HTTP server's
// sessions: a notification this replica could not write because another
// one holds the caller's stream is passed on to that one (passOn), and a
// request is asked of it (askHolder).
func (s *Server) sending(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			if x := s.shared.Load(); x != nil && x.bus != nil {
				if x.passOn(ctx, method, req) {
					return res, nil
				}
				if r, asked, aerr := x.askHolder(ctx, method, req, err); asked {
					return r, aerr
				}
			}
		}
		return res, err
	}
}

// passOn sends a log message or a progress notification the go-sdk could
// not write on session ss here (no stream for it: the caller's standalone
// stream is held by another replica) to the replica that holds the stream,
// and reports whether it did. Resource updates and list changes are not
// sent: that replica hears them too and sends its own.
func (x *sharedSessions) passOn(ctx context.Context, method string, req mcp.Request) bool {
	if method != "notifications/message" && method != "notifications/progress" || ctx.Value(noteKey{}) != nil {
		return false
	}
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss == nil {
		return false
	}
	h := x.lookup(ss.ID())
	if h == nil || h.ss != ss || h.streams.Load() > 0 {
		return false
	}
	h.mu.Lock()
	holder := h.saved.Stream
	h.mu.Unlock()
	if holder == "" || holder == x.tag {
		return false // no replica is known to hold the stream
	}
	params, err := json.Marshal(req.GetParams())
	if err != nil {
		return false
	}
	body := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":%q,"params":%s}`, method, params)
	msg, _ := json.Marshal(busMessage{Session: ss.ID(), Kind: kindNote, Body: body})
	if len(msg) > store.MaxMessage {
		x.notesDropped.Add(1)
		x.log.Debug("server: a notification for the caller's stream, held by another replica, is too large to pass on; dropped",
			"method", method, "bytes", len(msg), "max", store.MaxMessage)
		return false
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), noteTimeout)
	defer cancel()
	if err := x.bus.Send(sctx, busBox(holder), msg); err != nil {
		x.log.Debug("server: a notification for the caller's stream was not passed on", "err", err)
		return false
	}
	x.notes.Add(1)
	return true
}

// deliverNote writes a notification another replica passed on on the
// caller's standalone stream, when this replica holds it.
func (x *sharedSessions) deliverNote(m busMessage) {
	h := x.lookup(m.Session)
	if h == nil || h.streams.Load() == 0 {
		x.log.Debug("server: a notification passed on for a stream this replica does not hold; dropped")
		return
	}
	var n struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(m.Body, &n) != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), noteKey{}, true), noteTimeout)
	defer cancel()
	switch n.Method {
	case "notifications/message":
		var p mcp.LoggingMessageParams
		if json.Unmarshal(n.Params, &p) != nil {
			return
		}
		h.mu.Lock()
		behind, tok := !logs(h.saved.LogLevel, p.Level), h.streamTok
		h.mu.Unlock()
		if behind {
			// The sender let it through: the level here may be behind
			// the row's.
			x.follow(ctx, m.Session, h, tok)
		}
		_ = h.ss.Log(ctx, &p)
	case "notifications/progress":
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(n.Params, &p) != nil {
			return
		}
		_ = h.ss.NotifyProgress(ctx, &p)
	}
}

// logs reports whether a session at level sends a message at msg (the
// go-sdk's filter: nothing before a level is set).
func logs(level, msg mcp.LoggingLevel) bool {
	rank := func(l mcp.LoggingLevel) int {
		return slices.Index([]mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}, l)
	}
	return level != "" && rank(msg) >= rank(level)
}
