package server

import (
	"context"
	"log/slog"
	"strings"
)

// sdkLogger is the logger the go-sdk's server is given: l, except that the
// go-sdk's warning about a notification it could not deliver to one
// session ("calling notifications/...: ...") is Debug. The go-sdk writes
// one per session and notification: a caller that has not opened, or has
// closed, its stream for notifications (a client that disconnected and
// whose session has not expired yet, or one that only posts) is warned
// about at every tools/list_changed, resources/updated or log message
// until its session ends. That concerns the caller, not the operator, and
// it says nothing new after the first. Every other record is l's.
func sdkLogger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return nil
	}
	return slog.New(undelivered{l.Handler()})
}

// undelivered is sdkLogger's handler.
type undelivered struct{ slog.Handler }

// undeliveredPrefix starts the go-sdk's message for a notification it
// could not deliver to a session.
const undeliveredPrefix = "calling notifications/"

func (h undelivered) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn && strings.HasPrefix(r.Message, undeliveredPrefix) {
		if !h.Handler.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r.Level = slog.LevelDebug
	}
	return h.Handler.Handle(ctx, r)
}

func (h undelivered) WithAttrs(as []slog.Attr) slog.Handler {
	return undelivered{h.Handler.WithAttrs(as)}
}

func (h undelivered) WithGroup(name string) slog.Handler {
	return undelivered{h.Handler.WithGroup(name)}
}
