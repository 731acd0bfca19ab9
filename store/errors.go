package store

import "errors"

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
	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("store: closed")
)
