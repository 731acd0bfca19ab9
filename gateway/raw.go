package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/internal/jsonscan"
	"github.com/gatehouse-dev/gatehouse/internal/projection"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// The raw path serves the commonest request, a tools/call without a work
// key from a stateful HTTP session to a tool of a streamable HTTP upstream,
// without the go-sdk's server and client: it reads the few fields the
// gateway decides on (id, name, _meta), applies the same identity, rate
// limit, authorization, firewall, health and quarantine checks as the
// go-sdk path, sends the caller's arguments upstream as bytes on the shared
// upstream session, and answers with the upstream's result as bytes. The
// answer's bytes, headers and status are those the go-sdk path writes.
//
// Whatever it is not sure of goes to the go-sdk unchanged (the body is
// handed back): another method, a batch, an escaped key or string, an
// unknown field, a progress token or idempotency key, the describe tool,
// an upstream over stdio or SSE, a session it has not seen list or call
// tools, one with upstream sessions of its own, a token that is not the
// session's user, a protocol header that is not the session's, Mcp-Method
// style headers, a request the go-sdk's DNS-rebinding check would refuse,
// or a session the go-sdk has not seen for half its idle timeout (so its
// timer never closes a busy session).
type rawPath struct {
	g    *Gateway
	idle time.Duration // the go-sdk's session idle timeout (0: none)

	mu       sync.Mutex
	inflight map[rawKey]context.CancelFunc // raw calls by session and ID
}

type rawKey struct{ session, id string }

func newRawPath(g *Gateway, idle time.Duration) *rawPath {
	return &rawPath{g: g, idle: idle, inflight: map[rawKey]context.CancelFunc{}}
}

// handler wraps the go-sdk's handler (server.HTTPOptions.Inner).
func (p *rawPath) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.eligible(r) {
			next.ServeHTTP(w, r)
			return
		}
		body, err := readBody(r)
		if err != nil {
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
			next.ServeHTTP(w, r)
			return
		}
		if !p.serve(w, r, body) {
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
func (p *rawPath) eligible(r *http.Request) bool {
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

// rawRequest is what the raw path reads of a tools/call.
type rawRequest struct {
	id    []byte // an integer or a string without escapes, as sent
	name  string
	args  []byte // the arguments object, or nil
	meta  []byte // _meta to forward (an object without the keys the gateway consumes), or nil
	runID string // _meta.runId
}

// serve answers the request and reports true, or reports false (having
// written nothing) when it must go to the go-sdk.
func (p *rawPath) serve(w http.ResponseWriter, r *http.Request, body []byte) bool {
	g := p.g
	sid := r.Header.Get("Mcp-Session-Id")
	d, ok := g.fwd.Direct(sid)
	if !ok || r.Header.Get("Mcp-Protocol-Version") != d.ProtocolVersion || (p.idle > 0 && time.Since(d.LastSeen) > p.idle/2) {
		return false
	}
	tok := auth.TokenInfoFromContext(r.Context())
	if d.UserID != "" && (tok == nil || tok.UserID != d.UserID) {
		return false // the go-sdk answers 403
	}
	method, id, params, ok := parseEnvelope(body)
	if !ok {
		return false
	}
	if method == "notifications/cancelled" {
		return p.cancel(w, sid, params)
	}
	if method != "tools/call" || id == nil {
		return false
	}
	req, ok := parseCall(params)
	if !ok {
		return false
	}
	req.id = id
	info, served := g.tool(req.name)
	if !served || req.name == projection.DescribeToolName || info.State == toolset.Quarantined || !g.ts.RawReady(req.name) {
		return false
	}
	key := rawKey{sid, string(id)}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	p.mu.Lock()
	if _, dup := p.inflight[key]; dup {
		p.mu.Unlock()
		writeRPCError(w, http.StatusBadRequest, id, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("duplicate in-flight request ID %s", strings.Trim(string(id), `"`))})
		return true
	}
	p.inflight[key] = cancel
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.inflight, key)
		p.mu.Unlock()
	}()

	start := time.Now()
	rec := &callRecord{}
	var subject server.Subject
	result, res, err := func() (json.RawMessage, *mcp.CallToolResult, error) {
		var admitted *mcp.CallToolResult
		var err error
		subject, admitted, err = g.srv.AdmitCall(ctx, server.RequestInfo{TokenInfo: tok}, req.name)
		if admitted != nil || err != nil {
			return nil, admitted, err
		}
		return g.rawCall(ctx, rec, subject, sid, req, d.Caller)
	}()
	switch {
	case result != nil:
		rec.outcome = rawOutcome(result)
		p.write(w, id, result, nil, nil)
	case errors.Is(err, errNoAnswer):
		p.endStream(w)
		err = nil
	default:
		p.write(w, id, nil, res, err)
	}
	g.finishCall(string(subject), req.name, outcomeOf(rec, res, err), false, r.Context().Err() != nil, time.Since(start))
	return true
}

// cancel handles notifications/cancelled for a raw call in flight; any
// other goes to the go-sdk.
func (p *rawPath) cancel(w http.ResponseWriter, sid string, params []byte) bool {
	var requestID []byte
	if !jsonscan.Object(params, func(key []byte, escaped bool, val []byte) bool {
		if !escaped && string(key) == "requestId" {
			requestID = val
		}
		return true
	}) || requestID == nil {
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

// rawCall is call for the raw path: the same checks in the same order,
// the upstream's result as bytes.
func (g *Gateway) rawCall(ctx context.Context, rec *callRecord, subject server.Subject, sid string, req rawRequest, caller *toolset.Caller) (json.RawMessage, *mcp.CallToolResult, error) {
	name := req.name
	if !g.calls.enter() {
		rec.outcome = string(refusal.Unavailable)
		return nil, refuse(refusal.Unavailable, true, time.Second, "the gateway is shutting down; retry the same call"), nil
	}
	defer g.calls.leave()
	info, refused := g.servedTool(rec, name)
	if refused == nil {
		refused = g.serverDown(rec, info)
	}
	if refused != nil {
		return nil, refused, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(g.stopCtx, cancel)()
	if g.cfg.Firewall.MaxCallsPerRun > 0 {
		ctx = context.WithValue(ctx, runKey{}, runOf(subject, req.runID, sid))
	}
	var result json.RawMessage
	effect := func(ctx context.Context, _ string) (*mcp.CallToolResult, error) {
		r, err := g.ts.CallRaw(ctx, name, req.args, req.meta)
		if errors.Is(err, toolset.ErrNoRawPath) {
			// The session went between the check and the call: the
			// go-sdk's client takes it (nothing was sent).
			var args any
			if req.args != nil {
				args = json.RawMessage(req.args)
			}
			var meta map[string]any
			if req.meta != nil {
				_ = json.Unmarshal(req.meta, &meta)
			}
			res, err := g.ts.Call(ctx, name, args, toolset.CallInfo{Meta: meta, Caller: caller})
			g.observeUpstream(info.Server, err, ctx.Err() != nil)
			if err != nil {
				if de, ok := toolsetRefusal(err); ok {
					return nil, durable.Failed(de)
				}
			}
			return res, err
		}
		g.observeUpstream(info.Server, err, ctx.Err() != nil)
		if err == nil {
			result = r
			return nil, nil
		}
		if de, ok := toolsetRefusal(err); ok {
			return nil, durable.Failed(de)
		}
		return nil, err
	}
	res, err := g.unkeyed(ctx, subject, name, info, req.args, effect)
	if err == nil && res == nil && result != nil {
		return result, nil, nil
	}
	if errors.Is(err, toolset.ErrStreamEnded) && !g.cfg.HTTP.JSONResponse {
		rec.outcome = outcomeNoAnswer
		return nil, nil, errNoAnswer
	}
	res, err = g.answer(rec, info.Server, name, res, err)
	return nil, res, err
}

// outcomeNoAnswer is the outcome of a call whose upstream ended its
// response stream without answering (toolset.ErrStreamEnded).
const outcomeNoAnswer = "no_answer"

// errNoAnswer tells serve to end the caller's stream as the upstream ended
// its own: without an answer (the caller would see the same talking to
// the upstream directly).
var errNoAnswer = errors.New("gateway: the upstream ended the stream without answering")

// runOf is gatewayRun for the raw path.
func runOf(subject server.Subject, runID, sid string) string {
	if runID == "" {
		runID = "session:" + sid
	}
	return string(subject) + "\x00" + runID
}

// rawOutcome is "tool_error" for a result with isError true, else "ok".
func rawOutcome(result []byte) string {
	out := "ok"
	jsonscan.Object(result, func(key []byte, escaped bool, val []byte) bool {
		if !escaped && string(key) == "isError" {
			if string(val) == "true" {
				out = "tool_error"
			}
			return false
		}
		return true
	})
	return out
}

// write answers the call as the go-sdk would: one SSE event, or one JSON
// body with http.jsonResponse.
func (p *rawPath) write(w http.ResponseWriter, id, result []byte, res *mcp.CallToolResult, err error) {
	sse := !p.g.cfg.HTTP.JSONResponse
	// One buffer, one Write: the message, framed as an SSE event unless
	// the answers are plain JSON.
	var out []byte
	if result != nil {
		out = make([]byte, 0, len(result)+len(id)+64)
		if sse {
			out = append(out, "event: message\ndata: "...)
		}
		out = append(out, `{"jsonrpc":"2.0","id":`...)
		out = append(out, id...)
		out = append(out, `,"result":`...)
		out = append(out, result...)
		out = append(out, '}')
	} else {
		msg := encodeAnswer(id, res, err)
		if sse {
			out = append([]byte("event: message\ndata: "), msg...)
		} else {
			out = msg
		}
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	if !sse {
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(out)
		return
	}
	out = append(out, "\n\n"...)
	h.Set("Content-Type", "text/event-stream")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	// Not flushed: the handler returns at once and net/http writes the
	// whole answer in one piece.
	_, _ = w.Write(out)
}

// endStream ends the caller's SSE stream without a message.
func (p *rawPath) endStream(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "text/event-stream")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
}

// encodeAnswer encodes a result value or an error as the go-sdk does.
func encodeAnswer(id []byte, res *mcp.CallToolResult, err error) []byte {
	rid, _ := makeID(id)
	resp := &jsonrpc.Response{ID: rid}
	if err != nil {
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) {
			rpc = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		resp.Error = rpc
	} else {
		b, merr := json.Marshal(res)
		if merr != nil {
			resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: merr.Error()}
		} else {
			resp.Result = b
		}
	}
	msg, _ := jsonrpc.EncodeMessage(resp)
	return msg
}

func makeID(raw []byte) (jsonrpc.ID, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return jsonrpc.ID{}, err
	}
	if f, ok := v.(float64); ok {
		return jsonrpc.MakeID(f)
	}
	return jsonrpc.MakeID(v)
}

// writeRPCError writes a JSON-RPC error with an HTTP status, as the go-sdk
// does for requests it refuses before serving them.
func writeRPCError(w http.ResponseWriter, status int, id []byte, e *jsonrpc.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(encodeAnswer(id, nil, e))
}

// parseEnvelope reads a single JSON-RPC message: "jsonrpc":"2.0", a
// method, an optional id (an integer or a string without escapes) and
// params (an object). ok=false for anything else (a batch, another field,
// a duplicate or escaped key).
func parseEnvelope(body []byte) (method string, id, params []byte, ok bool) {
	if !bytes.Contains(body, []byte(`"tools/call"`)) && !bytes.Contains(body, []byte(`"notifications/cancelled"`)) {
		return "", nil, nil, false
	}
	var v [4][]byte // jsonrpc, id, method, params
	if !exactFields(body, []string{"jsonrpc", "id", "method", "params"}, v[:]) {
		return "", nil, nil, false
	}
	id, params = v[1], v[3]
	if string(v[0]) != `"2.0"` || len(params) == 0 || params[0] != '{' {
		return "", nil, nil, false
	}
	method, ok = plainString(v[2])
	if !ok || (id != nil && !plainID(id)) {
		return "", nil, nil, false
	}
	return method, id, params, true
}

// parseCall reads tools/call params: name, arguments (an object), _meta.
func parseCall(params []byte) (rawRequest, bool) {
	var req rawRequest
	var v [3][]byte // name, arguments, _meta
	if !exactFields(params, []string{"name", "arguments", "_meta"}, v[:]) {
		return req, false
	}
	var ok bool
	if req.name, ok = plainString(v[0]); !ok || req.name == "" {
		return req, false
	}
	if req.args = v[1]; req.args != nil && req.args[0] != '{' {
		return req, false
	}
	if v[2] != nil {
		if req.meta, req.runID, ok = forwardMetaRaw(v[2]); !ok {
			return req, false
		}
	}
	return req, true
}

// exactFields reads the members of the JSON object obj into vals, by the
// index of their key in names. ok=false when obj is not one valid object,
// or a key is escaped, not in names, or repeated.
func exactFields(obj []byte, names []string, vals [][]byte) bool {
	whole := true // every member was one of names, once
	ok := jsonscan.Object(obj, func(key []byte, escaped bool, val []byte) bool {
		i := -1
		if !escaped {
			for j, n := range names {
				if string(key) == n {
					i = j
					break
				}
			}
		}
		if i < 0 || vals[i] != nil {
			whole = false
			return false
		}
		vals[i] = val
		return true
	})
	return ok && whole
}

// forwardMetaRaw is forwardMeta on bytes: the caller's _meta without
// reserved keys and runId (returned). ok=false (the go-sdk path) when it
// holds a progress token or an idempotency key, or is not an object.
func forwardMetaRaw(meta []byte) (out []byte, runID string, ok bool) {
	if meta[0] != '{' {
		return nil, "", false
	}
	whole := true
	ok = jsonscan.Object(meta, func(key []byte, escaped bool, val []byte) bool {
		k := string(key)
		switch {
		case escaped, k == metaProgressToken, k == metaIdempotencyKey:
			whole = false
			return false
		case k == metaRunID:
			var isString bool
			if runID, isString = plainString(val); !isString {
				whole = false
				return false
			}
			return true
		case strings.HasPrefix(k, reservedMetaPrefix):
			return true
		}
		if out == nil {
			out = append(make([]byte, 0, len(meta)), '{')
		} else {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, key...)
		out = append(out, `":`...)
		out = append(out, val...)
		return true
	})
	if !ok || !whole {
		return nil, "", false
	}
	if out != nil {
		out = append(out, '}')
	}
	return out, runID, true
}

// plainString decodes a JSON string without escapes (and in valid UTF-8,
// which decoders would otherwise replace).
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' || bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
		return "", false
	}
	return string(v[1 : len(v)-1]), true
}

// plainID reports an ID the go-sdk would echo byte for byte: a string
// without escapes or an integer without exponent or fraction.
func plainID(v []byte) bool {
	if _, ok := plainString(v); ok {
		return true
	}
	digits := v
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
