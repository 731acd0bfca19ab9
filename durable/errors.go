package durable

import (
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/gatehouse-dev/gatehouse/refusal"
)

// msgRunBusy is the message of a run_busy refusal.
const msgRunBusy = "retry the same call with the same key; it has not been run twice"

// RecordedError is a failed call's error as the journal recorded it. The
// first call returns the effect's own error; every replay returns a
// RecordedError whose Error() is exactly the original text. When the
// original was a JSON-RPC error response, Unwrap returns an equivalent
// *jsonrpc.Error; when it was a refusal (Failed(&refusal.Error{...}): the
// call was refused before anything was sent), Unwrap returns the same
// refusal, so refusal.As finds it in a replay as in the first answer.
type RecordedError struct {
	// Message is the original error's text.
	Message string
	// RPC is the server's JSON-RPC error, when the failure was one.
	RPC *jsonrpc.Error
	// Refusal is the refusal, when the failure was one (its code, message
	// and retryable flag; not its cause).
	Refusal *refusal.Error
}

// Error returns the original text.
func (e *RecordedError) Error() string { return e.Message }

// Unwrap returns the refusal or the JSON-RPC error, if any.
func (e *RecordedError) Unwrap() error {
	switch {
	case e.Refusal != nil:
		return e.Refusal
	case e.RPC != nil:
		return e.RPC
	}
	return nil
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

func inDoubt(key string, detail string) *refusal.Error {
	msg := fmt.Sprintf("call %s was sent but its outcome is unknown; it will not be sent again automatically", key)
	if detail != "" {
		msg += " (" + detail + ")"
	}
	return &refusal.Error{Code: refusal.InDoubt, Message: msg}
}
