package gateway

//lint:file-ignore SA1019 client capabilities are read as the go-sdk reads them, roots (deprecated by SEP-2577, still in 2026-07-28) included.

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/wire"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// The latest front is the byte front of requests at 2026-07-28, which
// have no session (SEP-2575): it reads the commonest one, a tools/call,
// from the bytes of the HTTP request, hands it to the same pipeline as the
// go-sdk's front with the caller the go-sdk's stateless handler would give
// it (relay.PerRequest: a new one per request, taking input for the
// capabilities its _meta announces), and writes the answer as that
// handler would: the result with resultType and the gateway's serverInfo
// in its _meta, one SSE event (or one JSON body with http.jsonResponse),
// and an error that SEP-2575 maps to a status (method not found, invalid
// params) as a JSON body with that status.
//
// It makes every check the go-sdk's handler makes before it serves such a
// request, and whatever fails one, or anything it is not sure of, goes to
// the go-sdk unchanged (the body is handed back), which answers it:
// another revision, method or header (Mcp-Session-Id, Mcp-Param-*), a
// missing or mismatched Mcp-Method or Mcp-Name, a batch, a notification,
// a _meta whose revision is not the header's, without client
// capabilities, with a log level or another reserved key, client info or
// capabilities not written as the go-sdk writes them, an escaped key or
// string, a progress token, a multi round-trip retry (inputResponses,
// requestState), a tool that is not served or has parameters bound to
// headers, the describe tool, and a request the go-sdk's DNS-rebinding
// check would refuse.
type latestFront struct {
	g *Gateway
	// serverInfo is the gateway's Implementation as JSON, the value the
	// go-sdk puts in each result's _meta at 2026-07-28.
	serverInfo []byte
	// complete and inputRequired are empty results whose resultType the
	// go-sdk's decoding set (the field is unexported: the go-sdk's to
	// set), decoded once and copied for each answer: the go-sdk's decoder
	// takes a 32 KiB buffer for every value it decodes, however small.
	complete, inputRequired mcp.CallToolResult
	templateErr             error

	mu sync.Mutex
	// caps are the capabilities read from a _meta's client capabilities
	// and info (by their bytes; nil: not as the go-sdk writes them). A
	// client sends the same ones with each request.
	caps map[string]*mcp.ClientCapabilities
}

// latestRevision is the revision the latest front serves.
const latestRevision = "2026-07-28"

// maxCapsCache bounds latestFront.caps (it starts over when full).
const maxCapsCache = 256

func newLatestFront(g *Gateway) *latestFront {
	info, _ := json.Marshal(g.impl)
	p := &latestFront{g: g, serverInfo: info, caps: map[string]*mcp.ClientCapabilities{}}
	if err := json.Unmarshal([]byte(`{"resultType":"complete"}`), &p.complete); err != nil {
		p.templateErr = err
	} else if err := json.Unmarshal([]byte(`{"resultType":"input_required"}`), &p.inputRequired); err != nil {
		p.templateErr = err
	}
	return p
}

// handler wraps the go-sdk's stateless handler (server.HTTPOptions.Inner).
func (p *latestFront) handler(next http.Handler) http.Handler {
	return bytesFirst(next, p.eligible, p.serve)
}

// eligible checks the headers: a POST at 2026-07-28, JSON in, both answer
// types accepted, Mcp-Method tools/call and one Mcp-Name, no other MCP
// header, no Last-Event-ID.
func (p *latestFront) eligible(r *http.Request) bool {
	h := r.Header
	if r.Method != http.MethodPost || len(h["Mcp-Protocol-Version"]) != 1 || h["Mcp-Protocol-Version"][0] != latestRevision {
		return false
	}
	if len(h["Mcp-Method"]) != 1 || h["Mcp-Method"][0] != "tools/call" || len(h["Mcp-Name"]) != 1 || h["Mcp-Name"][0] == "" {
		return false
	}
	for k := range h {
		if strings.HasPrefix(k, "Mcp-") && k != "Mcp-Protocol-Version" && k != "Mcp-Method" && k != "Mcp-Name" {
			return false
		}
	}
	if len(h.Values("Last-Event-Id")) > 0 {
		return false
	}
	ct := h.Get("Content-Type")
	if ct != "application/json" && !strings.HasPrefix(ct, "application/json;") {
		return false
	}
	if !acceptsBoth(h.Values("Accept")) {
		return false
	}
	return !rebinding(r)
}

// serve answers the request and reports true, or reports false (having
// written nothing) when it must go to the go-sdk.
func (p *latestFront) serve(w http.ResponseWriter, r *http.Request, body []byte) bool {
	g := p.g
	method, id, params, ok := wire.ParseEnvelope(body)
	if !ok || method != "tools/call" || id == nil {
		return false
	}
	c, ok := wire.ParseCall(params)
	if !ok || c.RawMeta == nil || c.Name != r.Header["Mcp-Name"][0] {
		return false
	}
	m, ok := wire.ParseRequestMeta(c.RawMeta)
	if !ok || m.ProtocolVersion != latestRevision || m.ClientCapabilities == nil {
		return false
	}
	t, served := g.served.tool(c.Name)
	if !served || c.Name == toolset.DescribeToolName || headerBound(t.InputSchema) {
		return false
	}
	caps := p.capabilities(m.ClientCapabilities, m.ClientInfo)
	if caps == nil {
		return false
	}

	caller, release := g.relay.PerRequest(latestRevision, caps)
	defer release()
	sse := !g.cfg.HTTP.JSONResponse
	out := g.pipe.call(r.Context(), &callRequest{
		tool: c.Name, args: c.Args, metaJSON: c.Meta, key: c.Key, runID: c.RunID, badRunID: c.RunID != "" && !validRunID(c.RunID),
		info:   server.RequestInfo{TokenInfo: auth.TokenInfoFromContext(r.Context()), ClientCapabilities: caps},
		caller: caller, endStream: sse, front: "bytes", hdr: r.Header,
	})
	p.write(w, id, out)
	return true
}

// headerBound reports a schema with a parameter bound to an Mcp-Param-*
// header (x-mcp-header), which the go-sdk checks against the request's
// headers.
func headerBound(schema any) bool {
	switch v := schema.(type) {
	case map[string]any:
		for k, x := range v {
			if k == "x-mcp-header" || headerBound(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if headerBound(x) {
				return true
			}
		}
	}
	return false
}

// capsV2 reads client capabilities as the go-sdk reads them from a _meta
// (its clientCapabilitiesV2: roots is a pointer).
type capsV2 struct {
	mcp.ClientCapabilities
	Roots *mcp.RootCapabilities `json:"roots,omitempty"`
}

// capabilities returns the capabilities a _meta's client capabilities and
// info (nil: absent) announce, or nil when either is not written as the
// go-sdk writes it (compact, its keys in its order, nothing it does not
// know): read otherwise, they might not read as the go-sdk reads them.
func (p *latestFront) capabilities(raw, info []byte) *mcp.ClientCapabilities {
	key := string(raw) + "\x00" + string(info)
	p.mu.Lock()
	caps, seen := p.caps[key]
	p.mu.Unlock()
	if seen {
		return caps
	}
	caps = readCapabilities(raw, info)
	p.mu.Lock()
	if len(p.caps) >= maxCapsCache {
		clear(p.caps)
	}
	p.caps[key] = caps
	p.mu.Unlock()
	return caps
}

func readCapabilities(raw, info []byte) *mcp.ClientCapabilities {
	if info != nil {
		var impl mcp.Implementation
		if json.Unmarshal(info, &impl) != nil {
			return nil
		}
		if again, err := json.Marshal(&impl); err != nil || !bytes.Equal(again, info) {
			return nil
		}
	}
	var v2 capsV2
	if json.Unmarshal(raw, &v2) != nil {
		return nil
	}
	if again, err := json.Marshal(&v2); err != nil || !bytes.Equal(again, raw) {
		return nil
	}
	caps := v2.ClientCapabilities
	caps.RootsV2 = v2.Roots
	if caps.RootsV2 != nil {
		caps.Roots = *caps.RootsV2
	}
	return &caps
}

// write answers the call as the go-sdk's stateless handler would at
// 2026-07-28.
func (p *latestFront) write(w http.ResponseWriter, id []byte, out callOutcome) {
	var msg []byte
	var rpcErr error
	switch {
	case out.noAnswer:
		// The go-sdk front's answer: at 2026-07-28 the go-sdk does not end
		// the stream, and writes the handler's error.
		rpcErr = errNoAnswer
	case out.err != nil:
		rpcErr = out.err
	case out.raw != nil:
		if res, ok := wire.LatestResult(out.raw, p.serverInfo); ok {
			msg = wire.AppendResult(make([]byte, 0, len(res)+len(id)+64), id, res)
			break
		}
		res, err := reply{raw: out.raw}.decoded()
		if err != nil {
			rpcErr = err
			break
		}
		msg, rpcErr = p.encode(id, res)
	default:
		msg, rpcErr = p.encode(id, out.result)
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	sse := !p.g.cfg.HTTP.JSONResponse
	if sse {
		h.Set("Connection", "keep-alive")
	}
	if rpcErr != nil {
		msg = wire.EncodeAnswer(id, nil, rpcErr)
		if status := errorStatus(rpcErr); status != 0 {
			// SEP-2575: a bare JSON body with the error's status.
			h.Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write(msg)
			return
		}
	}
	if !sse {
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(msg)
		return
	}
	ev := make([]byte, 0, len(msg)+len("event: message\ndata: \n\n"))
	ev = append(ev, "event: message\ndata: "...)
	ev = append(append(ev, msg...), "\n\n"...)
	h.Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(ev)
}

// errorStatus is the HTTP status the go-sdk gives a JSON-RPC error at
// 2026-07-28 (0: the answer's usual one).
func errorStatus(err error) int {
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) {
		return 0
	}
	switch rpc.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return 0
}

// encode returns the response to id with res as the go-sdk's server
// writes a tools/call result at 2026-07-28 (callTool, then handle): its
// resultType (input_required with input requests, else complete; both
// with content is an internal error), never "content": null unless input
// is required, and the gateway's serverInfo in its _meta unless there is
// one.
func (p *latestFront) encode(id []byte, res *mcp.CallToolResult) ([]byte, error) {
	if res == nil {
		return wire.EncodeAnswer(id, nil, nil), nil
	}
	needsInput := res.InputRequests != nil
	if needsInput && (len(res.Content) > 0 || res.StructuredContent != nil) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "server bug: result has both content and inputRequests"}
	}
	// The resultType is the go-sdk's to set: it reads it.
	if p.templateErr != nil {
		return nil, p.templateErr
	}
	out := p.complete
	if needsInput {
		out = p.inputRequired
	}
	out.Content, out.StructuredContent, out.IsError = res.Content, res.StructuredContent, res.IsError
	out.InputRequests, out.RequestState = res.InputRequests, res.RequestState
	if out.Content == nil && !needsInput {
		out.Content = []mcp.Content{}
	}
	out.Meta = res.Meta
	if _, has := out.Meta[mcp.MetaKeyServerInfo]; !has {
		m := make(mcp.Meta, len(res.Meta)+1)
		for k, v := range res.Meta {
			m[k] = v
		}
		m[mcp.MetaKeyServerInfo] = json.RawMessage(p.serverInfo)
		out.Meta = m
	}
	b, err := json.Marshal(&out)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	return wire.AppendResult(make([]byte, 0, len(b)+len(id)+32), id, b), nil
}
