package store

import (
	"context"
	"time"
)

// Connection is one stored authorization toward an upstream server: the
// token set a subject (or the gateway itself) holds for it, sealed by the
// vault (package internal/vault). The store never sees plaintext: Sealed
// is opaque bytes, bound by the vault to (Server, Subject).
type Connection struct {
	// Server names the upstream server; it must not be empty.
	Server string
	// Subject is whose connection it is; "" is the service connection of
	// a server configured with `auth: service`.
	Subject string
	// Sealed is the encrypted token set; it must not be empty.
	Sealed []byte
	// KeyID names the key that sealed it.
	KeyID string
	// Account is the upstream account the token set is for, as the
	// gateway learned it when the connection was made through a connect
	// flow (the upstream ID token's sub, else its userinfo's); '' when
	// unknown (service connections, older rows). It is plaintext, for
	// `gatehouse connections list`. PutConnection with an empty Account
	// keeps the stored one (a token refresh does not know it); SwapConnection
	// never changes it.
	Account string
	// CreatedAt is when the connection was first stored (kept by later
	// puts); UpdatedAt when it was last written. Both are filled from the
	// store's clock when zero and stored to the millisecond.
	CreatedAt, UpdatedAt time.Time
}

// ConnectFlow is a pending /connect/SERVER browser flow: single use, until
// ExpiresAt. The SQL stores keep only the SHA-256 of the ID, so a copy of
// the store does not hand out live flows.
type ConnectFlow struct {
	// ID is random and URL-safe; it must not be empty.
	ID string
	// Server and Subject are what the flow connects (Server not empty).
	Server, Subject string
	// Sealed is the sealed flow state (PKCE verifier, state, redirect).
	Sealed []byte
	// ExpiresAt is when the flow stops being takeable; it must not be
	// zero.
	ExpiresAt time.Time
}

// ConnectionStore persists connections, their refresh leases and pending
// connect flows. Every method is one statement or one transaction and is
// atomic across processes sharing the store.
type ConnectionStore interface {
	// PutConnection inserts or replaces the connection of (c.Server,
	// c.Subject). A replaced row keeps its CreatedAt, and its Account when
	// c.Account is empty. ErrInvalid for an empty Server or Sealed.
	PutConnection(ctx context.Context, c Connection) error
	// SwapConnection replaces the connection of (c.Server, c.Subject) only
	// if its Sealed still equals old (compare-and-swap; Rekey uses it so a
	// concurrent refresh is never overwritten) and reports whether it did.
	SwapConnection(ctx context.Context, c Connection, old []byte) (bool, error)
	// Connection returns the connection of (server, subject) and true, or
	// false when there is none.
	Connection(ctx context.Context, server, subject string) (Connection, bool, error)
	// Connections lists the connections of subject, or of every subject
	// (the service connections included) when subject is "", ordered by
	// Server then Subject.
	Connections(ctx context.Context, subject string) ([]Connection, error)
	// DeleteConnections deletes the connection of (server, subject), or
	// every connection of subject when server is "" (subject "" is the
	// service subject here, not every subject), with their refresh
	// leases, and returns how many connections it deleted.
	DeleteConnections(ctx context.Context, server, subject string) (int, error)
	// LeaseRefresh takes (or renews) the refresh lease of (server,
	// subject) for holder until `until`; false when another holder's lease
	// is still valid by the store's clock. Atomic across replicas (one
	// conditional upsert). A holder releases its lease by renewing it to a
	// time not after now. A lease needs no connection row.
	LeaseRefresh(ctx context.Context, server, subject, holder string, until time.Time) (bool, error)
	// PutConnectFlow records a pending flow. ErrInvalid for an empty ID
	// or Server or a zero ExpiresAt; ErrConflict when the ID is taken.
	PutConnectFlow(ctx context.Context, f ConnectFlow) error
	// TakeConnectFlow returns and consumes the flow atomically: a second
	// Take of the same ID, an expired one (ExpiresAt at or before now;
	// consumed all the same), or an unknown one returns false. Single use
	// across replicas.
	TakeConnectFlow(ctx context.Context, id string, now time.Time) (ConnectFlow, bool, error)
	// SweepConnectFlows deletes the flows expired at now and returns how
	// many.
	SweepConnectFlows(ctx context.Context, now time.Time) (int64, error)
}
