package store

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Implementations wrap them with %w and context; test with
// errors.Is.
var (
	// ErrNotFound: the row does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrInvalid: an argument is invalid (an empty key, an unknown state,
	// a URL carrying a password, ...).
	ErrInvalid = errors.New("store: invalid argument")
	// ErrConflict: a caller-chosen unique ID is already used by another row.
	ErrConflict = errors.New("store: conflict")
	// ErrNotStarted: a journal record is not in the started state.
	ErrNotStarted = errors.New("store: record is not started")
	// ErrLeaseLost: a journal record is held by another executor.
	ErrLeaseLost = errors.New("store: lease held by another executor")
	// ErrAlreadyDecided: an approval is no longer pending.
	ErrAlreadyDecided = errors.New("store: approval already decided")
	// ErrExpired: an approval's ExpiresAt has passed.
	ErrExpired = errors.New("store: approval expired")
	// ErrNotApproved: an approval is not approved (pending, denied, or
	// already used).
	ErrNotApproved = errors.New("store: approval is not approved")
	// ErrTooManyPending: the subject has as many pending approvals as the
	// bound allows.
	ErrTooManyPending = errors.New("store: too many pending approvals")
	// ErrSchemaTooNew: the database was migrated by a newer build. Nothing
	// was changed.
	ErrSchemaTooNew = errors.New("store: database schema is newer than this build")
	// ErrInvalidDSN: the DSN cannot be parsed. The more specific errors
	// below are wrapped together with it.
	ErrInvalidDSN = errors.New("store: invalid DSN")
	// ErrEmptyDSN: the DSN is empty.
	ErrEmptyDSN = errors.New("store: empty DSN")
	// ErrUnknownScheme: the DSN's scheme is not sqlite, postgres,
	// postgresql or memory.
	ErrUnknownScheme = errors.New("store: unknown DSN scheme")
	// ErrMissingPath: a sqlite DSN has no path.
	ErrMissingPath = errors.New("store: sqlite DSN has no path")
	// ErrUnavailable: the database could not be opened or reached.
	ErrUnavailable = errors.New("store: database unavailable")
	// ErrCorrupt: stored data cannot be read as what it should hold (an
	// audit block edited behind the store's back). Audit verification
	// reports it as a break of the chain read.
	ErrCorrupt = errors.New("store: stored data is corrupt")
	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("store: closed")
	// ErrNoStore: Options.MustExist is set and the database holds no
	// Gatehouse store (a missing or empty SQLite file, a database
	// without Gatehouse's schema_migrations table, memory:). Nothing was
	// created or changed.
	ErrNoStore = errors.New("store: no Gatehouse store")
)

// PendingLimitError is CreateApproval's error when the subject already has
// as many pending approvals as the bound allows. It wraps
// ErrTooManyPending.
type PendingLimitError struct {
	// Owner is the subject.
	Owner string
	// Max is the bound.
	Max int
	// NextExpiry is when the first of the subject's pending approvals
	// expires: a place is free by then at the latest. Zero when none
	// expires.
	NextExpiry time.Time
}

func (e *PendingLimitError) Error() string {
	return fmt.Sprintf("%v: subject %q has %d pending approvals, the most allowed", ErrTooManyPending, e.Owner, e.Max)
}

// Unwrap returns ErrTooManyPending.
func (e *PendingLimitError) Unwrap() error { return ErrTooManyPending }

// ErrStaleListing: the listing to trust is not the server's latest open
// observation. Nothing was changed.
var ErrStaleListing = errors.New("store: listing is not the server's latest observation")

// StaleListingError is TrustListing's error when the listing asked for is
// not the server's latest open observation. It wraps ErrStaleListing.
type StaleListingError struct {
	// ServerID is the server, Listing the fingerprint asked for.
	ServerID, Listing string
	// Latest is the server's latest open observation (its Entries nil);
	// zero (ID 0) when the server has none.
	Latest Observation
}

func (e *StaleListingError) Error() string {
	if e.Latest.ID == 0 {
		return fmt.Sprintf("store: server %q has no open observation; listing %s is not one to trust", e.ServerID, e.Listing)
	}
	return fmt.Sprintf("store: listing %s is not the latest observation of server %q (that is %s, seen by %s at %s)",
		e.Listing, e.ServerID, e.Latest.Listing, e.Latest.SeenBy, e.Latest.SeenAt.UTC().Format(time.RFC3339))
}

func (e *StaleListingError) Unwrap() error { return ErrStaleListing }
