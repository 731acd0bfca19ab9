// Package refusal is what Gatehouse answers instead of running a tool call:
// a code from one closed set, a sentence, and the tool result that carries
// both to the caller (docs/reference/refusals.md).
//
//	err := &refusal.Error{Code: refusal.RateLimited, Retryable: true,
//		RetryAfter: 2 * time.Second, Message: "too many calls; retry in 2s"}
//	res := err.Result() // isError, "[rate_limited] too many calls...", structuredContent.code
//
//	if r, ok := refusal.As(err); ok && r.Code == refusal.InDoubt { ... }
//
// Every package that refuses a call (the journal, the guards, the hardened
// server, the gateway) uses these codes and this shape; no other package
// declares a refusal code, and nothing recognises a refusal by its text.
// The package imports nothing of Gatehouse's: everyone may import it.
package refusal

import (
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Code names why a call was refused. The values are fixed by
// docs/reference/refusals.md: they are the "code" of a refusal's structured content, the "[code]"
// its text begins with, and the outcome label of the gateway's metrics.
type Code string

// The refusal codes, in the order of docs/reference/refusals.md.
const (
	// RunBusy: another executor holds a live claim on the same key.
	// Retryable: retry the same call with the same key.
	RunBusy Code = "run_busy"
	// KeyReused: the key was used before for a call with other arguments
	// (or another server, tool or owner).
	KeyReused Code = "key_reused"
	// RateLimited: the caller is over its rate limit (RetryAfter says when
	// to try again).
	RateLimited Code = "rate_limited"
	// ApprovalRequired: the call waits for an operator's decision on
	// ApprovalID. Retryable: the same call with the same key proceeds once
	// approved.
	ApprovalRequired Code = "approval_required"
	// ApprovalDenied: an operator denied the call.
	ApprovalDenied Code = "approval_denied"
	// Quarantined: the tool's contract drifted from its trusted fingerprint.
	Quarantined Code = "quarantined"
	// ToolWithdrawn: the tool is no longer offered.
	ToolWithdrawn Code = "tool_withdrawn"
	// InDoubt: the call was sent (or may have been) and its outcome is
	// unknown; it is never re-sent automatically.
	InDoubt Code = "in_doubt"
	// Denied: a guard denied the call.
	Denied Code = "denied"
	// CallLimit: the run reached its cap of calls for the tool.
	CallLimit Code = "call_limit"
	// Unavailable: the tool's upstream server is down (waiting for its
	// restart backoff) or the gateway is shutting down. Retryable, with
	// RetryAfter.
	Unavailable Code = "unavailable"
	// AuthRequired: an upstream needs the caller's own account connected.
	AuthRequired Code = "auth_required"
)

// Codes lists every refusal code, in the order of docs/reference/refusals.md.
func Codes() []Code {
	return []Code{RunBusy, KeyReused, RateLimited, ApprovalRequired, ApprovalDenied,
		Quarantined, ToolWithdrawn, InDoubt, Denied, CallLimit, Unavailable, AuthRequired}
}

// Known reports whether c is one of Codes.
func (c Code) Known() bool {
	for _, k := range Codes() {
		if c == k {
			return true
		}
	}
	return false
}

// Error is a structured refusal: the journal, a guard or the gateway
// refused the call (the tool itself did not answer). Result turns it into
// the tool result of docs/reference/refusals.md. Find it in an error chain with As.
type Error struct {
	// Code is one of the codes above.
	Code Code
	// Retryable says whether the same call with the same key may succeed
	// later.
	Retryable bool
	// Message is a sentence for the caller (and the model). It never
	// carries argument values or text an upstream server controls.
	Message string
	// ApprovalID names the pending approval (approval_required,
	// approval_denied).
	ApprovalID string
	// RetryAfter is a hint for when to retry (rate_limited, run_busy,
	// unavailable); zero means none.
	RetryAfter time.Duration
	// ConnectURL is where the caller connects its own account to the
	// upstream (auth_required): a URL on the gateway, bound to the caller
	// and good for one use.
	ConnectURL string
	// Err is an underlying cause, if any. It never reaches Result.
	Err error
}

// Error implements error: "[code] message", then ": cause" when there is
// one.
func (e *Error) Error() string {
	msg := "[" + string(e.Code) + "]"
	if e.Message != "" {
		msg += " " + e.Message
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same Code, so
// errors.Is(err, &refusal.Error{Code: refusal.InDoubt}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Text is the refusal's text content: "[code] message".
func (e *Error) Text() string {
	text := "[" + string(e.Code) + "]"
	if e.Message != "" {
		text += " " + e.Message
	}
	return text
}

// Result returns the refusal as a tool result (docs/reference/refusals.md): IsError
// true, one text content Text(), and structured content {"code",
// "retryable"} plus "approvalId", "retryAfterMs" and "connectURL" when set. The
// underlying Err is left out: it may hold details the caller must not see.
func (e *Error) Result() *mcp.CallToolResult {
	sc := map[string]any{"code": string(e.Code), "retryable": e.Retryable}
	if e.ApprovalID != "" {
		sc["approvalId"] = e.ApprovalID
	}
	if e.RetryAfter > 0 {
		sc["retryAfterMs"] = max(e.RetryAfter.Milliseconds(), 1)
	}
	if e.ConnectURL != "" {
		sc["connectURL"] = e.ConnectURL
	}
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: e.Text()}},
		StructuredContent: sc,
	}
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}
