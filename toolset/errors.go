package toolset

import (
	"errors"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/toolset/internal/transport"
)

// Error codes carried by *Error.
const (
	// CodeUnknownTool: the name is not in the tool map.
	CodeUnknownTool = "unknown_tool"
	// CodeConnectionFailed: the server could not be (re)connected.
	CodeConnectionFailed = "connection_failed"
	// CodeAuthFailed: the Auth resolver returned an error.
	CodeAuthFailed = "auth_failed"
	// CodeInvalidArguments: the arguments are not a JSON object.
	CodeInvalidArguments = "invalid_arguments"
	// CodeCallFailed: the call failed at the protocol level (a JSON-RPC error
	// from the server, or the caller's context ended). A tool that reports an
	// error does so in its result (IsError), not through this code.
	CodeCallFailed = "call_failed"
	// CodeBadAnswer: the server answered the call with something that is
	// not taken: an HTTP error status, a body or event that is no JSON-RPC
	// message, no result, an answer past MaxAnswer. The call failed and may
	// have run (a journal keeps it in doubt); the connection is sound and
	// the session lives on. Err is an *AnswerError.
	CodeBadAnswer = "bad_answer"
	// CodeClosed: the toolset was closed.
	CodeClosed = "closed"
	// CodeQuarantined: the tool's contract changed after it was trusted
	// (see the pin package); calls are refused until an operator re-trusts
	// the server (Retrust, `gatehouse trust`). It is refusal.Quarantined.
	CodeQuarantined = string(refusal.Quarantined)
	// CodeToolWithdrawn: the tool was in the tool map (or the trusted
	// baseline) but its server no longer publishes it. It is
	// refusal.ToolWithdrawn.
	CodeToolWithdrawn = string(refusal.ToolWithdrawn)
	// CodeUnknownServer: Retrust was given a name that is no configured
	// server (or one that names several; the message says so).
	CodeUnknownServer = "unknown_server"
	// CodeStoreFailed: the trust store failed (Retrust, WatchTrust).
	CodeStoreFailed = "store_failed"
)

// Error is the error Call (and the other methods) return. Branch on it with
// errors.Is against the sentinels (ErrUnknownTool, ...) or errors.As.
type Error struct {
	// Code is one of the Code* constants.
	Code string
	// Server is the configured server name, when known.
	Server string
	// Tool is the projected tool name, when known.
	Tool string
	// Err is the underlying error, if any.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	msg := "toolset: " + e.Code
	if e.Tool != "" {
		msg += fmt.Sprintf(" (tool %q", e.Tool)
		if e.Server != "" {
			msg += fmt.Sprintf(", server %q", e.Server)
		}
		msg += ")"
	} else if e.Server != "" {
		msg += fmt.Sprintf(" (server %q)", e.Server)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Reason returns a sentence a person (or a model) can act on, without the
// "toolset:" prefix: the underlying error's text for quarantined and
// tool_withdrawn refusals, Error() otherwise. It never carries text a
// server controls beyond sanitized names.
func (e *Error) Reason() string {
	if (e.Code == CodeQuarantined || e.Code == CodeToolWithdrawn) && e.Err != nil {
		return e.Err.Error()
	}
	return e.Error()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Refusal returns the refusal a caller of a gateway gets for this error
// when it is one: a quarantined or withdrawn tool, refused before anything
// was sent, with Reason as its message.
func (e *Error) Refusal() (*refusal.Error, bool) {
	switch e.Code {
	case CodeQuarantined, CodeToolWithdrawn:
		return &refusal.Error{Code: refusal.Code(e.Code), Message: e.Reason()}, true
	}
	return nil, false
}

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, ErrUnknownTool) works whatever the server and tool.
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) || t == nil {
		return false
	}
	return t.Code == e.Code && t.Server == "" && t.Tool == "" && t.Err == nil
}

// Sentinels for errors.Is.
var (
	ErrUnknownTool      = &Error{Code: CodeUnknownTool}
	ErrConnectionFailed = &Error{Code: CodeConnectionFailed}
	ErrAuthFailed       = &Error{Code: CodeAuthFailed}
	ErrInvalidArguments = &Error{Code: CodeInvalidArguments}
	ErrCallFailed       = &Error{Code: CodeCallFailed}
	ErrBadAnswer        = &Error{Code: CodeBadAnswer}
	ErrClosed           = &Error{Code: CodeClosed}
	ErrQuarantined      = &Error{Code: CodeQuarantined}
	ErrToolWithdrawn    = &Error{Code: CodeToolWithdrawn}
	ErrUnknownServer    = &Error{Code: CodeUnknownServer}
	ErrStoreFailed      = &Error{Code: CodeStoreFailed}
)

// ErrInvalidOptions is wrapped by Open's error for a wiring mistake, its
// message naming it: Options.Auth or Options.AllowedHostsFunc without
// Options.Session, both AllowedHosts and AllowedHostsFunc, a server's
// Filter with both Allow and Block.
var ErrInvalidOptions = errors.New("toolset: invalid options")

// AnswerError is why a server's answer to a call was not taken: the Err of
// an *Error with CodeBadAnswer. It is no *jsonrpc.Error on purpose: the
// server did not answer an error, and a journal must not record the call
// as failed for sure.
type AnswerError struct {
	// Message says what was wrong, in the words the caller of a gateway
	// gets (as a JSON-RPC internal error).
	Message string
}

// Error implements error.
func (e *AnswerError) Error() string { return e.Message }

// Reasons an answer is not taken (BadAnswer).
const (
	ReasonNotJSONRPC   = transport.ReasonNotJSONRPC
	ReasonContentType  = transport.ReasonContentType
	ReasonNoResult     = transport.ReasonNoResult
	ReasonNotTheAnswer = transport.ReasonNotTheAnswer
)

// ReasonStatus is the reason for an answer with HTTP status code.
func ReasonStatus(code int) string { return transport.ReasonStatus(code) }

// BadAnswer returns the error of a call whose answer was not taken for
// reason (a Reason constant, ReasonStatus): an *Error with CodeBadAnswer
// and the same message whichever client read the answer (the go-sdk's
// client gets it from the toolset's HTTP client, see AsBadAnswer; a
// relay that reads an upstream's bytes itself makes it here).
func BadAnswer(reason string) *Error {
	return &Error{Code: CodeBadAnswer, Err: &AnswerError{Message: transport.BadAnswerText(reason)}}
}

// AnswerTooLarge is BadAnswer for an answer past MaxAnswer (its message is
// ErrAnswerTooLarge's).
func AnswerTooLarge() *Error {
	return &Error{Code: CodeBadAnswer, Err: &AnswerError{Message: ErrAnswerTooLarge.Message}}
}

// AsBadAnswer returns the *Error with CodeBadAnswer that err, the error of
// a go-sdk client of the toolset's for a call, stands for: the JSON-RPC
// error the toolset's HTTP client put in place of an answer it did not
// take (an HTTP error status, no JSON-RPC message, past MaxAnswer).
func AsBadAnswer(err error) (*Error, bool) {
	msg, ok := transport.IsBadAnswer(err)
	if !ok {
		return nil, false
	}
	return &Error{Code: CodeBadAnswer, Err: &AnswerError{Message: msg}}, true
}
