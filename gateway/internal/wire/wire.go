// Package wire reads and writes the few JSON-RPC messages the gateway's
// byte path answers itself, as bytes.
//
//	method, id, params, ok := wire.ParseEnvelope(body)
//	if ok && method == "tools/call" {
//		call, ok := wire.ParseCall(params) // strict: anything unsure is !ok
//		...
//		out := wire.AppendResult(nil, id, upstreamResult)
//	}
//
// Reading is strict on purpose: a message is accepted only when the
// go-sdk's server would read it exactly the same way (the same method, ID,
// name, arguments and _meta), and anything else (a batch, an unknown,
// escaped or repeated key, an escaped string, a number the go-sdk cannot
// decode) is refused, so that the caller hands it to the go-sdk unchanged.
// FuzzParse checks the agreement against the go-sdk's own decoding.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/jsonscan"
)

// _meta keys a caller sends that the gateway consumes (and never
// forwards), and the prefix of the keys the protocol reserves.
const (
	MetaIdempotencyKey = "idempotencyKey"
	MetaRunID          = "runId"
	MetaProgressToken  = "progressToken"
	ReservedMetaPrefix = "io.modelcontextprotocol/"
)

// Call is what the byte path reads of a tools/call.
type Call struct {
	// Name is the tool name.
	Name string
	// Args is the arguments object as sent, or nil.
	Args []byte
	// Meta is the _meta to forward: the caller's without the keys the
	// gateway consumes or the protocol reserves, or nil.
	Meta []byte
	// RunID is _meta.runId, Key is _meta.idempotencyKey ("" when absent).
	RunID, Key string
	// RawMeta is the _meta object as sent, or nil (RequestMeta reads its
	// reserved keys).
	RawMeta []byte
}

// The reserved _meta keys of a request at 2026-07-28 (SEP-2575): the
// revision, and the client's identity and capabilities that a session's
// initialize used to carry.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
)

// RequestMeta is what a request at 2026-07-28 says of its client in its
// _meta.
type RequestMeta struct {
	// ProtocolVersion is the revision ("" when absent).
	ProtocolVersion string
	// ClientInfo and ClientCapabilities are their values as sent, or nil
	// when absent.
	ClientInfo, ClientCapabilities []byte
}

// ParseRequestMeta reads the reserved keys of a request's _meta (an
// object). ok=false for a reserved key other than the three of
// RequestMeta (a log level, say), one repeated or escaped, a revision that
// is not a plain string, or anything that is not one valid object: the
// go-sdk's server reads those.
func ParseRequestMeta(meta []byte) (RequestMeta, bool) {
	var m RequestMeta
	if len(meta) == 0 || meta[0] != '{' {
		return m, false
	}
	var seenVersion bool
	whole := true
	ok := jsonscan.Object(meta, func(k []byte, escaped bool, val []byte) bool {
		if escaped {
			whole = false
			return false
		}
		if !bytes.HasPrefix(k, []byte(ReservedMetaPrefix)) {
			return true
		}
		switch string(k) {
		case MetaProtocolVersion:
			s, plain := plainString(val)
			if !plain || seenVersion {
				whole = false
				return false
			}
			m.ProtocolVersion, seenVersion = s, true
		case MetaClientInfo:
			if m.ClientInfo != nil {
				whole = false
				return false
			}
			m.ClientInfo = val
		case MetaClientCapabilities:
			if m.ClientCapabilities != nil {
				whole = false
				return false
			}
			m.ClientCapabilities = val
		default:
			whole = false
			return false
		}
		return true
	})
	if !ok || !whole {
		return RequestMeta{}, false
	}
	return m, true
}

// ParseEnvelope reads a single JSON-RPC message that may be a tools/call or
// a notifications/cancelled: "jsonrpc":"2.0", a method, an optional id (an
// integer or a string without escapes) and params (an object). ok=false
// for anything else (another method, a batch, another field, a duplicate
// or escaped key).
func ParseEnvelope(body []byte) (method string, id, params []byte, ok bool) {
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

// ParseCall reads tools/call params: name, arguments (an object), _meta
// (an object whose idempotencyKey and runId, if any, are non-empty plain
// strings, without a progress token, and whose numbers the go-sdk can
// decode).
func ParseCall(params []byte) (Call, bool) {
	var c Call
	var v [3][]byte // name, arguments, _meta
	if !exactFields(params, []string{"name", "arguments", "_meta"}, v[:]) {
		return c, false
	}
	var ok bool
	if c.Name, ok = plainString(v[0]); !ok || c.Name == "" {
		return c, false
	}
	if c.Args = v[1]; c.Args != nil && c.Args[0] != '{' {
		return c, false
	}
	if v[2] != nil {
		if c.Meta, c.RunID, c.Key, ok = forwardMeta(v[2]); !ok {
			return c, false
		}
		c.RawMeta = v[2]
	}
	return c, true
}

// CancelledID returns the requestId of notifications/cancelled params.
func CancelledID(params []byte) ([]byte, bool) {
	var requestID []byte
	if !jsonscan.Object(params, func(key []byte, escaped bool, val []byte) bool {
		if !escaped && string(key) == "requestId" {
			requestID = val
		}
		return true
	}) || requestID == nil {
		return nil, false
	}
	return requestID, true
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

// forwardMeta reads a caller's _meta: the object without the keys the
// gateway consumes or the protocol reserves, and its runId and
// idempotencyKey. ok=false (the go-sdk path) when it holds a progress
// token, a runId or idempotencyKey that is not a non-empty plain string, a
// number the go-sdk cannot decode into a float64, or is not an object.
func forwardMeta(meta []byte) (out []byte, runID, key string, ok bool) {
	if meta[0] != '{' || !jsonscan.NumbersFit(meta) {
		return nil, "", "", false
	}
	whole := true
	ok = jsonscan.Object(meta, func(k []byte, escaped bool, val []byte) bool {
		switch {
		case escaped, string(k) == MetaProgressToken:
			whole = false
			return false
		case string(k) == MetaRunID || string(k) == MetaIdempotencyKey:
			s, plain := plainString(val)
			if !plain || s == "" {
				whole = false
				return false
			}
			if string(k) == MetaRunID {
				runID = s
			} else {
				key = s
			}
			return true
		case bytes.HasPrefix(k, []byte(ReservedMetaPrefix)):
			return true
		}
		if out == nil {
			out = append(make([]byte, 0, len(meta)), '{')
		} else {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, k...)
		out = append(out, `":`...)
		out = append(out, val...)
		return true
	})
	if !ok || !whole {
		return nil, "", "", false
	}
	if out != nil {
		out = append(out, '}')
	}
	return out, runID, key, true
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
// without escapes or an integer without exponent or fraction (and not -0,
// which it echoes as 0).
func plainID(v []byte) bool {
	if _, ok := plainString(v); ok {
		return true
	}
	if string(v) == "-0" {
		return false
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

// IsError reports whether a tools/call result object says "isError": true.
func IsError(result []byte) bool {
	isErr := false
	jsonscan.Object(result, func(key []byte, escaped bool, val []byte) bool {
		if !escaped && string(key) == "isError" {
			isErr = string(val) == "true"
			return false
		}
		return true
	})
	return isErr
}

// AppendResult appends the JSON-RPC response with id and the result
// object's bytes to dst, on one line: a result written over several lines
// (pretty-printed: JSON's whitespace may hold line breaks, its strings
// never do) is compacted, so that the message fits one SSE data line. The
// result must be valid JSON.
func AppendResult(dst, id, result []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"result":`...)
	if bytes.IndexByte(result, '\n') >= 0 || bytes.IndexByte(result, '\r') >= 0 {
		buf := bytes.NewBuffer(dst)
		if json.Compact(buf, result) == nil {
			return append(buf.Bytes(), '}')
		}
		dst = buf.Bytes()[:len(dst)] // not valid JSON: as it is
	}
	dst = append(dst, result...)
	return append(dst, '}')
}

// EncodeAnswer encodes the response with id to a result value or an error
// as the go-sdk does (an error that is no *jsonrpc.Error is an internal
// error with its text).
func EncodeAnswer(id []byte, res *mcp.CallToolResult, err error) []byte {
	rid, _ := makeID(id)
	resp := &jsonrpc.Response{ID: rid}
	if err != nil {
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) {
			rpc = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		resp.Error = rpc
	} else {
		if res != nil && res.Content == nil {
			// As the go-sdk's server: never "content": null.
			cp := *res
			cp.Content = []mcp.Content{}
			res = &cp
		}
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

// WriteRPCError writes a JSON-RPC error with an HTTP status, as the go-sdk
// does for requests it refuses before serving them.
func WriteRPCError(w http.ResponseWriter, status int, id []byte, e *jsonrpc.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(EncodeAnswer(id, nil, e))
}

// Unquote returns a plain ID's text for a message ("7", or the string
// without its quotes).
func Unquote(id []byte) string { return strings.Trim(string(id), `"`) }

// LatestResult returns an upstream's tools/call result object as the
// go-sdk's server writes it to a request at 2026-07-28, without decoding
// it, when the bytes are exactly what the go-sdk would write again: an
// object of content, an array of text items ({"type":"text","text":S}
// with S as Go's encoder writes strings), then optionally "isError":true,
// without whitespace. The go-sdk writes serverInfo (its Implementation as
// JSON) in a _meta first and resultType last. ok=false for any other
// result (structured content, other items, _meta, another order or
// spelling): decode it, and encode the value.
func LatestResult(raw, serverInfo []byte) ([]byte, bool) {
	const open = `{"content":[`
	if !bytes.HasPrefix(raw, []byte(open)) {
		return nil, false
	}
	rest := raw[len(open):]
	for first := true; ; first = false {
		if len(rest) > 0 && rest[0] == ']' {
			rest = rest[1:]
			break
		}
		if !first {
			if len(rest) == 0 || rest[0] != ',' {
				return nil, false
			}
			rest = rest[1:]
		}
		const item = `{"type":"text","text":"`
		if !bytes.HasPrefix(rest, []byte(item)) {
			return nil, false
		}
		n, ok := goString(rest[len(item):])
		if !ok {
			return nil, false
		}
		rest = rest[len(item)+n:]
		if len(rest) == 0 || rest[0] != '}' {
			return nil, false
		}
		rest = rest[1:]
	}
	if string(rest) != "}" && string(rest) != `,"isError":true}` {
		return nil, false
	}
	const head = `{"_meta":{"` + mcp.MetaKeyServerInfo + `":`
	const tail = `,"resultType":"complete"}`
	out := make([]byte, 0, len(head)+len(serverInfo)+2+len(raw)+len(tail))
	out = append(out, head...)
	out = append(out, serverInfo...)
	out = append(out, "},"...)
	out = append(out, raw[1:len(raw)-1]...)
	return append(out, tail...), true
}

// goString reads the rest of a JSON string (after its opening quote) and
// returns its length with the closing quote, when Go's encoder (escaping
// HTML) writes its value the same way: valid UTF-8, escapes only \", \\,
// \n, \r, \t and \u003c, \u003e, \u0026, \u2028, \u2029, and none of
// the characters those stand for unescaped.
func goString(b []byte) (int, bool) {
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(b) {
				return 0, false
			}
			switch b[i+1] {
			case '"', '\\', 'n', 'r', 't':
				i += 2
				continue
			case 'u':
				if i+6 > len(b) {
					return 0, false
				}
				switch string(b[i+2 : i+6]) {
				case "003c", "003e", "0026", "2028", "2029":
					i += 6
					continue
				}
			}
			return 0, false
		case c < 0x20, c == '<', c == '>', c == '&':
			return 0, false
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
				return 0, false
			}
			i += size
		}
	}
	return 0, false
}
