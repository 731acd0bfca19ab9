package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/wire"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// The byte front reads the commonest request, a tools/call from a stateful
// HTTP session that needs nothing routed back to it, from the bytes of the
// HTTP request without the go-sdk's server (package internal/wire), hands
// it to the same pipeline as the go-sdk's front, and writes the answer as
// the go-sdk would: the upstream's result bytes when the byte sender
// carried the call, else the encoded result, with the go-sdk's headers and
// status.
//
// Whatever it is not sure of goes to the go-sdk unchanged (the body is
// handed back): another method, a batch, an escaped key or string, an
// unknown field, a progress token, a tool that is not served or the
// describe tool, a session it has not seen list or call tools, one with
// upstream sessions of its own, a token that is not the session's user, a
// protocol header that is not the session's, Mcp-Method style headers, a
// request the go-sdk's DNS-rebinding check would refuse, or a session the
// go-sdk has not seen for half its idle timeout (so its timer never closes
// a busy session).
type byteFront struct {
	g    *Gateway
	idle time.Duration // the go-sdk's session idle timeout (0: none)

	mu       sync.Mutex
	inflight map[rawKey]context.CancelFunc // calls by session and ID
}

type rawKey struct{ session, id string }

func newByteFront(g *Gateway, idle time.Duration) *byteFront {
	return &byteFront{g: g, idle: idle, inflight: map[rawKey]context.CancelFunc{}}
}

// handler wraps the go-sdk's handler (server.HTTPOptions.Inner).
func (p *byteFront) handler(next http.Handler) http.Handler {
	return bytesFirst(next, p.eligible, p.serve)
}

// bytesFirst is a byte front's handler in front of next, the go-sdk's: a
// request whose headers eligible accepts is read whole and offered to
// serve; one it is not sure of (serve reports false, having written
// nothing) or whose body cannot be read goes to next with its body as it
// came (a read error is next's to report).
func bytesFirst(next http.Handler, eligible func(*http.Request) bool, serve func(http.ResponseWriter, *http.Request, []byte) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !eligible(r) {
			next.ServeHTTP(w, r)
			return
		}
		body, err := readBody(r)
		if err != nil {
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
			next.ServeHTTP(w, r)
			return
		}
		if !serve(w, r, body) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
		}
	})
}

// readBody reads a request body, in one allocation when its length is
// known (limitBody has bounded it).
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength <= 0 || r.ContentLength > 64<<20 {
		return io.ReadAll(r.Body)
	}
	buf := make([]byte, r.ContentLength+1) // +1: the read that sees EOF
	n, err := io.ReadFull(r.Body, buf)
	switch err {
	case io.ErrUnexpectedEOF: // shorter than announced: what there is
		return buf[:n], nil
	case nil: // longer than announced: the rest too
		rest, err := io.ReadAll(r.Body)
		return append(buf, rest...), err
	}
	return buf[:n], err
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// eligible checks the headers: a POST on a session, JSON in, both answer
// types accepted, no header the go-sdk would check against the body.
func (p *byteFront) eligible(r *http.Request) bool {
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") == "" {
		return false
	}
	for k := range r.Header {
		if strings.HasPrefix(k, "Mcp-") && k != "Mcp-Session-Id" && k != "Mcp-Protocol-Version" {
			return false
		}
	}
	if len(r.Header.Values("Last-Event-Id")) > 0 {
		return false
	}
	ct := r.Header.Get("Content-Type")
	if ct != "application/json" && !strings.HasPrefix(ct, "application/json;") {
		return false
	}
	if !acceptsBoth(r.Header.Values("Accept")) {
		return false
	}
	return !rebinding(r)
}

// acceptsBoth is the go-sdk's Accept check for POSTs.
func acceptsBoth(values []string) bool {
	var jsonOK, streamOK bool
	for _, v := range values {
		for raw := range strings.SplitSeq(v, ",") {
			base, _, _ := strings.Cut(raw, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// rebinding reports a request the go-sdk's DNS-rebinding protection
// refuses: arriving on a loopback address with a Host that is not one.
func rebinding(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && local != nil && loopback(local.String()) && !loopback(r.Host)
}

func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// serve answers the request and reports true, or reports false (having
// written nothing) when it must go to the go-sdk.
func (p *byteFront) serve(w http.ResponseWriter, r *http.Request, body []byte) bool {
	g := p.g
	sid := r.Header.Get("Mcp-Session-Id")
	d, ok := g.relay.Direct(sid)
	if !ok || r.Header.Get("Mcp-Protocol-Version") != d.ProtocolVersion || (p.idle > 0 && time.Since(d.LastSeen) > p.idle/2) {
		return false
	}
	tok := auth.TokenInfoFromContext(r.Context())
	if d.UserID != "" && (tok == nil || tok.UserID != d.UserID) {
		return false // the go-sdk answers 403
	}
	method, id, params, ok := wire.ParseEnvelope(body)
	if !ok {
		return false
	}
	if method == "notifications/cancelled" {
		return p.cancel(w, sid, params)
	}
	if method != "tools/call" || id == nil {
		return false
	}
	c, ok := wire.ParseCall(params)
	if !ok {
		return false
	}
	if _, served := g.served.tool(c.Name); !served || c.Name == toolset.DescribeToolName {
		return false
	}
	key := rawKey{sid, string(id)}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	p.mu.Lock()
	if _, dup := p.inflight[key]; dup {
		p.mu.Unlock()
		wire.WriteRPCError(w, http.StatusBadRequest, id, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("duplicate in-flight request ID %s", wire.Unquote(id))})
		return true
	}
	p.inflight[key] = cancel
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.inflight, key)
		p.mu.Unlock()
	}()

	sse := !g.cfg.HTTP.JSONResponse
	out := g.pipe.call(ctx, &callRequest{
		tool: c.Name, args: c.Args, metaJSON: c.Meta, key: c.Key, runID: c.RunID, badRunID: c.RunID != "" && !validRunID(c.RunID), session: sid,
		info: server.RequestInfo{TokenInfo: tok, ClientCapabilities: d.ClientCapabilities}, caller: d.Caller, endStream: sse, front: "bytes", hdr: r.Header,
	})
	if out.noAnswer {
		p.endStream(w)
		return true
	}
	p.write(w, id, out)
	return true
}

// cancel handles notifications/cancelled for a call in flight here; any
// other goes to the go-sdk.
func (p *byteFront) cancel(w http.ResponseWriter, sid string, params []byte) bool {
	requestID, ok := wire.CancelledID(params)
	if !ok {
		return false
	}
	p.mu.Lock()
	cancel := p.inflight[rawKey{sid, string(requestID)}]
	p.mu.Unlock()
	if cancel == nil {
		return false
	}
	cancel()
	w.WriteHeader(http.StatusAccepted)
	return true
}

// write answers the call as the go-sdk would: one SSE event, or one JSON
// body with http.jsonResponse.
func (p *byteFront) write(w http.ResponseWriter, id []byte, out callOutcome) {
	sse := !p.g.cfg.HTTP.JSONResponse
	// One buffer, one Write: the message, framed as an SSE event unless
	// the answers are plain JSON.
	var msg []byte
	if out.raw != nil {
		msg = make([]byte, 0, len(out.raw)+len(id)+64)
		if sse {
			msg = append(msg, "event: message\ndata: "...)
		}
		msg = wire.AppendResult(msg, id, out.raw)
	} else {
		enc := wire.EncodeAnswer(id, out.result, out.err)
		if sse {
			msg = append([]byte("event: message\ndata: "), enc...)
		} else {
			msg = enc
		}
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	if !sse {
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(msg)
		return
	}
	msg = append(msg, "\n\n"...)
	h.Set("Content-Type", "text/event-stream")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	// Not flushed: the handler returns at once and net/http writes the
	// whole answer in one piece.
	_, _ = w.Write(msg)
}

// endStream ends the caller's SSE stream without a message.
func (p *byteFront) endStream(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "text/event-stream")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
}
