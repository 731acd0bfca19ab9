package store

import (
	"context"
	"time"
)

// Session is one caller's stateful streamable HTTP session as every
// replica sharing the store sees it: what a replica that did not open it
// needs to go on serving it. The SQL stores keep only the SHA-256 of the
// ID, so a copy of the store names no live session.
type Session struct {
	// ID is the session's Mcp-Session-Id; it must not be empty.
	ID string
	// Subject is whose session it is (the caller's subject when it
	// opened it); UserID is the verified token's user it was opened with
	// ("" without authentication). A request with another user's token is
	// not the session's on any replica.
	Subject, UserID string
	// State is what rebuilding the session takes (its initialize
	// parameters, negotiated revision, log level, resource subscriptions),
	// opaque to the store.
	State []byte
	// ExpiresAt is when the session ends unless touched before; it must
	// not be zero. Stored to the millisecond.
	ExpiresAt time.Time
	// Closed reports a session ended (an HTTP DELETE): no replica serves
	// or rebuilds it again. Its row stays until it expires.
	Closed bool
}

// SessionStore persists callers' sessions. Every method is one statement
// and atomic across processes sharing the store.
type SessionStore interface {
	// PutSession inserts the session, or replaces the Subject, UserID,
	// State and ExpiresAt of a live one. A closed session stays closed:
	// PutSession on it changes nothing and returns ErrConflict. ErrInvalid
	// for an empty ID or a zero ExpiresAt.
	PutSession(ctx context.Context, s Session) error
	// Session returns the session and true, or false when there is none
	// or it expired at now. A closed session is returned with Closed set.
	Session(ctx context.Context, id string, now time.Time) (Session, bool, error)
	// TouchSession moves a live session's ExpiresAt to until (never
	// earlier than it is) and reports true; false when the session is
	// unknown, closed, or expired at now (it is not revived).
	TouchSession(ctx context.Context, id string, now, until time.Time) (bool, error)
	// SwapSession replaces the State of the live session id with state
	// when its State is old (as Session returned it: nil matches a session
	// stored without one) and reports whether it did; false when another
	// write changed the State first, or when the session is unknown,
	// closed, or expired at now. It is how one replica changes a part of a
	// session's state (its log level, its subscriptions) without undoing
	// another replica's change to another part: read, change, swap, and
	// read again on false. ExpiresAt is left as it is.
	SwapSession(ctx context.Context, id string, old, state []byte, now time.Time) (bool, error)
	// CloseSession marks the session closed and reports whether it was
	// live (false: unknown, already closed, or expired at now).
	CloseSession(ctx context.Context, id string, now time.Time) (bool, error)
	// CountSessions returns how many live sessions (neither closed nor
	// expired at now) subject has.
	CountSessions(ctx context.Context, subject string, now time.Time) (int, error)
	// SweepSessions deletes the sessions, closed or not, expired at now
	// and returns how many.
	SweepSessions(ctx context.Context, now time.Time) (int64, error)
}
