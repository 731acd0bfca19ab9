package durable

import (
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Refusal codes (CONTRACTS.md §4). They are the Code of an *Error and the
// "code" of its Result's structured content.
const (
	// CodeRunBusy: another executor holds a live claim on the same key.
	// Retryable: retry the same call with the same key.
	CodeRunBusy = "run_busy"
	// CodeKeyReused: the key was used before for a call with other
	// arguments (or another server or tool).
	CodeKeyReused = "key_reused"
	// CodeRateLimited: the caller is over its rate limit (RetryAfter says
	// when to try again).
	CodeRateLimited = "rate_limited"
	// CodeApprovalRequired: the call waits for an operator's decision on
	// ApprovalID. Retryable: the same call with the same key proceeds once
	// approved.
	CodeApprovalRequired = "approval_required"
	// CodeApprovalDenied: an operator denied the call.
	CodeApprovalDenied = "approval_denied"
	// CodeQuarantined: the tool's contract drifted from its trusted
	// fingerprint.
	CodeQuarantined = "quarantined"
	// CodeToolWithdrawn: the tool is no longer offered.
	CodeToolWithdrawn = "tool_withdrawn"
	// CodeInDoubt: the call was sent (or may have been) and its outcome is
	// unknown; it is never re-sent automatically.
	CodeInDoubt = "in_doubt"
	// CodeDenied: a guard denied the call.
	CodeDenied = "denied"
	// CodeCallLimit: the run reached its cap of calls for the tool.
	CodeCallLimit = "call_limit"
)

// Codes lists every refusal code, in the order of CONTRACTS.md §4.
func Codes() []string {
	return []string{CodeRunBusy, CodeKeyReused, CodeRateLimited, CodeApprovalRequired, CodeApprovalDenied,
		CodeQuarantined, CodeToolWithdrawn, CodeInDoubt, CodeDenied, CodeCallLimit}
}

// MsgRunBusy is the message of a run_busy refusal.
const MsgRunBusy = "retry the same call with the same key; it has not been run twice"

// Error is a structured refusal: the journal, a guard or the gateway
// refused the call (the tool itself did not answer). Result turns it into
// the tool result of CONTRACTS.md §4. Match it with errors.As or AsError.
type Error struct {
	// Code is one of the Code* constants.
	Code string
	// Retryable says whether the same call with the same key may succeed
	// later.
	Retryable bool
	// Message is a sentence for the caller (and the model).
	Message string
	// ApprovalID names the pending approval (approval_required,
	// approval_denied).
	ApprovalID string
	// RetryAfter is a hint for when to retry (rate_limited, run_busy);
	// zero means none.
	RetryAfter time.Duration
	// Err is an underlying cause, if any. It never reaches Result.
	Err error
}

// Error implements error: "[code] message".
func (e *Error) Error() string {
	msg := "[" + e.Code + "]"
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
// errors.Is(err, &durable.Error{Code: durable.CodeInDoubt}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Result returns the refusal as a tool result (CONTRACTS.md §4): IsError
// true, one text content "[code] message", and structured content
// {"code", "retryable"} plus "approvalId" and "retryAfterMs" when set. The
// underlying Err is left out: it may hold details the caller must not see.
func (e *Error) Result() *mcp.CallToolResult {
	text := "[" + e.Code + "]"
	if e.Message != "" {
		text += " " + e.Message
	}
	sc := map[string]any{"code": e.Code, "retryable": e.Retryable}
	if e.ApprovalID != "" {
		sc["approvalId"] = e.ApprovalID
	}
	if e.RetryAfter > 0 {
		ms := e.RetryAfter.Milliseconds()
		if ms == 0 {
			ms = 1
		}
		sc["retryAfterMs"] = ms
	}
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: sc,
	}
}

// AsError returns the *Error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// RecordedError is a failed call's error as the journal recorded it. The
// first call returns the effect's own error; every replay returns a
// RecordedError whose Error() is exactly the original text. When the
// original was a JSON-RPC error response, Unwrap returns an equivalent
// *jsonrpc.Error.
type RecordedError struct {
	// Message is the original error's text.
	Message string
	// RPC is the server's JSON-RPC error, when the failure was one.
	RPC *jsonrpc.Error
}

// Error returns the original text.
func (e *RecordedError) Error() string { return e.Message }

// Unwrap returns the JSON-RPC error, if any.
func (e *RecordedError) Unwrap() error {
	if e.RPC == nil {
		return nil
	}
	return e.RPC
}

// ErrNotRecorded is wrapped by the error Do returns when the effect ran but
// its outcome could not be recorded: the result is returned alongside it,
// and the record stays started (so a later call with the key is in doubt).
var ErrNotRecorded = errors.New("durable: the effect ran but its outcome was not recorded")

// errFailed marks an effect error as a known outcome; see Failed.
type failedError struct{ err error }

func (f *failedError) Error() string { return f.err.Error() }
func (f *failedError) Unwrap() error { return f.err }

// Failed marks err as a known outcome of an effect: the effect did not run,
// or ran and failed, and repeating the call will get the same answer. Do
// records it as failed and replays its text. An effect error that is not
// marked (and is not a JSON-RPC error response from the server) leaves the
// outcome unknown: see the package documentation.
func Failed(err error) error {
	if err == nil {
		return nil
	}
	return &failedError{err: err}
}

func inDoubt(key string, detail string) *Error {
	msg := fmt.Sprintf("call %s was sent but its outcome is unknown; it will not be sent again automatically", key)
	if detail != "" {
		msg += " (" + detail + ")"
	}
	return &Error{Code: CodeInDoubt, Message: msg}
}
