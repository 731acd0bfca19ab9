package server

//lint:file-ignore SA1019 sampling and roots (deprecated by SEP-2577, still in 2025-11-25) are requests a replica sends its caller.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/jsonscan"
)

// Across replicas, what must reach one replica gets there through the
// store's Messenger (PostgreSQL LISTEN/NOTIFY), when the session store is
// one:
//
//   - A request a replica's session sends its caller (sampling,
//     elicitation, roots) leaves with an ID that names the replica:
//     "gh-TAG-N" for the go-sdk's N (which counts from 1 per session on
//     every replica, so two replicas would both send 1). The caller's
//     answer may come to any replica: one that is not TAG sends it to TAG's
//     box, whose replica puts it into the session with the ID N.
//   - A caller's notifications/cancelled is served where it arrives and
//     sent to every replica (the call it cancels runs on one of them).

// busBox is the box of the replica tagged tag; busAll every replica's.
func busBox(tag string) string { return "sess-" + tag }

const busAll = "sess-all"

// busMessage is what one replica sends another about a session: a
// message of the caller's for it (Kind ""), or one of sessionstream.go's.
type busMessage struct {
	Session string          `json:"session"`
	Body    json.RawMessage `json:"body,omitempty"`
	Kind    string          `json:"kind,omitempty"`
	// From is the sender's tag and Nonce names the message, for a
	// kindChanged the sender waits to hear followed (kindAck).
	From  string `json:"from,omitempty"`
	Nonce string `json:"nonce,omitempty"`
	// Holds: in a kindStream, From took the stream (else it let it go).
	Holds bool `json:"holds,omitempty"`
}

// newTag is a replica's tag: random, so that no two processes share one.
func newTag() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// listen starts the replica's listeners; they end with ctx.
func (x *sharedSessions) listen(ctx context.Context) error {
	for _, box := range []string{busBox(x.tag), busAll} {
		if err := x.bus.Listen(ctx, box, x.deliver); err != nil {
			return err
		}
	}
	return nil
}

// deliver puts a message another replica sent into the session, if this
// process holds it, as a request of the session's caller.
func (x *sharedSessions) deliver(raw []byte) {
	var m busMessage
	if json.Unmarshal(raw, &m) != nil || m.Session == "" {
		return
	}
	switch m.Kind {
	case kindNote:
		x.deliverNote(m)
		return
	case kindChanged:
		x.changed(m)
		return
	case kindAck:
		x.answered(m.Nonce, nil)
		return
	case kindStream:
		x.streamMoved(m)
		return
	case kindLevel:
		x.levelChanged(m)
		return
	case kindAsk:
		go x.askHere(m) // the caller may take minutes; the listener goes on
		return
	case kindReply:
		x.answered(m.Nonce, m.Body)
		return
	case kindAsking:
		x.beat(m.Nonce)
		return
	}
	h := x.lookup(m.Session)
	if h == nil {
		return
	}
	h.mu.Lock()
	proto := h.saved.Protocol
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The message comes from the replica that verified the caller's token.
	x.inject(ctx, m.Session, proto, h.userID, nil, false, m.Body)
}

// route looks at a caller's POST on session id before it is served: an
// answer to a request another replica sent goes to that replica (and the
// caller gets 202 here), an answer to one of this replica's gets the
// go-sdk's ID back, and a cancellation goes to every replica too. It
// reports whether it answered the request.
func (x *sharedSessions) route(w http.ResponseWriter, r *http.Request, id string) bool {
	if r.Body == nil {
		return false
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return false // the go-sdk answers the bad body
	}
	if bytes.Contains(body, []byte(`"gh-`)) {
		if tag, n, ok := taggedAnswer(body); ok {
			body = withID(body, n)
			if tag == x.tag {
				r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
				return false
			}
			msg, _ := json.Marshal(busMessage{Session: id, Body: body})
			if err := x.bus.Send(r.Context(), busBox(tag), msg); err != nil {
				x.log.Error("server: an answer for another replica was not sent", "err", err)
				http.Error(w, "the answer could not be passed on", http.StatusServiceUnavailable)
				return true
			}
			x.forwarded.Add(1)
			w.WriteHeader(http.StatusAccepted)
			return true
		}
	}
	if bytes.Contains(body, []byte(`"notifications/cancelled"`)) && method(body) == "notifications/cancelled" {
		msg, _ := json.Marshal(busMessage{Session: id, Body: body})
		if err := x.bus.Send(r.Context(), busAll, msg); err != nil {
			x.log.Warn("server: a cancellation was not sent to the other replicas", "err", err)
		}
	}
	return false
}

// method returns a message's method, or "".
func method(body []byte) string {
	var m string
	jsonscan.Object(body, func(key []byte, escaped bool, val []byte) bool {
		if !escaped && string(key) == "method" {
			_ = json.Unmarshal(val, &m)
			return false
		}
		return true
	})
	return m
}

// taggedAnswer reports whether body is a caller's answer (a response: an
// ID, no method) to a request a replica sent, and returns the replica's
// tag and the go-sdk's ID.
func taggedAnswer(body []byte) (tag string, n int64, ok bool) {
	var id []byte
	isRequest, ids := false, 0
	if !jsonscan.Object(body, func(key []byte, escaped bool, val []byte) bool {
		switch {
		case escaped:
		case string(key) == "id":
			id = val
			ids++
		case string(key) == "method":
			isRequest = true
		}
		return true
	}) || isRequest || ids != 1 {
		// Two IDs: which one counts is the reader's choice; it is not
		// ours to guess (the go-sdk drops it, as an unknown answer).
		return "", 0, false
	}
	var s string
	if json.Unmarshal(id, &s) != nil {
		return "", 0, false
	}
	rest, found := strings.CutPrefix(s, "gh-")
	if !found {
		return "", 0, false
	}
	tag, num, found := strings.Cut(rest, "-")
	if !found || tag == "" {
		return "", 0, false
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != num {
		return "", 0, false
	}
	return tag, n, true
}

// withID returns body, a JSON object, with its top-level "id" set to n.
func withID(body []byte, n int64) []byte {
	var out []byte
	jsonscan.Object(body, func(key []byte, escaped bool, val []byte) bool {
		if !escaped && string(key) == "id" {
			start := cap(body) - cap(val) // val is a sub-slice of body
			out = append(out, body[:start]...)
			out = strconv.AppendInt(out, n, 10)
			out = append(out, body[start+len(val):]...)
			return false
		}
		return true
	})
	if out == nil {
		return body
	}
	return out
}

// tagWriter passes the go-sdk's event stream on with the ID of each
// request to the caller rewritten to name this replica (gh-TAG-N). A JSON
// answer (not an event stream) carries no request and passes as it is.
type tagWriter struct {
	http.ResponseWriter
	tag     string
	checked bool // the Content-Type was looked at
	stream  bool
	line    []byte // a line begun, not yet written
}

func (t *tagWriter) WriteHeader(code int) {
	t.check()
	t.ResponseWriter.WriteHeader(code)
}

func (t *tagWriter) check() {
	if !t.checked {
		t.checked = true
		t.stream = strings.HasPrefix(t.Header().Get("Content-Type"), "text/event-stream")
	}
}

func (t *tagWriter) Write(p []byte) (int, error) {
	t.check()
	if !t.stream {
		return t.ResponseWriter.Write(p)
	}
	n := len(p)
	var out []byte
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.line = append(t.line, p...)
			break
		}
		line := p[:i+1]
		p = p[i+1:]
		if len(t.line) > 0 {
			line = append(t.line, line...)
			t.line = t.line[:0]
		}
		out = append(out, t.rewrite(line)...)
	}
	if len(out) > 0 {
		if _, err := t.ResponseWriter.Write(out); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// rewrite returns an SSE line with a request's integer ID tagged.
func (t *tagWriter) rewrite(line []byte) []byte {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok || !bytes.Contains(data, []byte(`"method"`)) {
		return line
	}
	body := bytes.TrimSpace(data)
	var id []byte
	isRequest := false
	jsonscan.Object(body, func(key []byte, escaped bool, val []byte) bool {
		switch {
		case escaped:
		case string(key) == "id":
			id = val
		case string(key) == "method":
			isRequest = true
		}
		return true
	})
	n, err := strconv.ParseInt(string(id), 10, 64)
	if !isRequest || err != nil {
		return line
	}
	start := cap(body) - cap(id)
	out := append([]byte("data: "), body[:start]...)
	out = append(out, `"gh-`+t.tag+`-`+strconv.FormatInt(n, 10)+`"`...)
	out = append(out, body[start+len(id):]...)
	return append(out, '\n')
}

func (t *tagWriter) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the writer below.
func (t *tagWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// asks reports whether the session's caller takes requests from the
// server (sampling, elicitation, roots): only then can an answer of its
// come to the wrong replica.
func (h *heldSession) asks() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	ip := h.saved.Initialize
	if ip == nil || ip.Capabilities == nil {
		return false
	}
	c := ip.Capabilities
	return c.Sampling != nil || c.Elicitation != nil || c.RootsV2 != nil || c.Roots.ListChanged
}
