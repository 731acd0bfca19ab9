package durable

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/jsonscan"
)

// RawResult is a tool call's result as the server sent it: the bytes of
// its result object, not decoded. The zero value is no result.
type RawResult struct {
	// JSON is the result object's bytes (a JSON object, as received: the
	// journal stores them as they are).
	JSON json.RawMessage
	// IsError is the result's "isError", as the effect read it from JSON.
	// The journal trusts it to choose the record's state (failed when
	// true) and does not read JSON for it.
	IsError bool
}

// RawEffect performs the real call like an Effect, and may answer the
// server's result as bytes: when raw.JSON is not nil (and err is nil), the
// journal records raw.JSON as the result, as it is, and res is ignored;
// otherwise res and err mean what an Effect's answer means. Bytes that are
// not one JSON object are recorded as a failure (see the package doc).
type RawEffect func(ctx context.Context, idempotencyKey string) (res *mcp.CallToolResult, raw RawResult, err error)

// answer is an effect's answer inside the journal: a result value (res),
// the result's bytes (raw.JSON), or neither.
type answer struct {
	res *mcp.CallToolResult
	raw RawResult
}

// empty reports whether the answer holds no result.
func (a answer) empty() bool { return a.res == nil && a.raw.JSON == nil }

// result is the answer as a value for an audit entry (Audit.Entry): the
// value, or for bytes a result carrying only IsError (its Content is
// empty: the bytes are not decoded for it).
func (a answer) result() *mcp.CallToolResult {
	if a.raw.JSON != nil {
		return &mcp.CallToolResult{IsError: a.raw.IsError}
	}
	return a.res
}

// anyEffect is the effect of one call: an Effect (plain) or a RawEffect
// (raw), whichever is set.
type anyEffect struct {
	plain Effect
	raw   RawEffect
}

func (e anyEffect) missing() bool { return e.plain == nil && e.raw == nil }

func (e anyEffect) call(ctx context.Context, ikey string) (answer, error) {
	if e.raw != nil {
		res, raw, err := e.raw(ctx, ikey)
		if err == nil && raw.JSON != nil {
			return answer{raw: raw}, nil
		}
		return answer{res: res}, err
	}
	res, err := e.plain(ctx, ikey)
	return answer{res: res}, err
}

// Errors recorded for result bytes that are no result: the server
// answered, so the call is failed (never in doubt, never sent again).
var (
	errRawInvalid   = errors.New("durable: the result could not be recorded: the server's result is not valid JSON")
	errRawNotObject = errors.New("durable: the result could not be recorded: the server's result is not a JSON object")
)

// rawObject checks that b is one JSON object (surrounding whitespace
// allowed).
func rawObject(b []byte) error {
	if !jsonscan.Valid(b) { // agrees with encoding/json.Valid, ~11x faster, no allocation
		return errRawInvalid
	}
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			if c == '{' {
				return nil
			}
			break
		}
	}
	return errRawNotObject
}
