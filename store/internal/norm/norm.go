// Package norm holds the rules every store implementation applies the same
// way: time representation, argument validation and the errors they report.
//
//	func (m *Store) Claim(ctx context.Context, rec store.Record) (bool, store.Record, error) {
//		rec, err := norm.Claim(rec, m.now()) // validated (store.ErrInvalid), times as stored: ms, UTC
//		if err != nil {
//			return false, store.Record{}, err
//		}
//		...
//		if norm.Expired(norm.MS(r.LeaseUntil), norm.MS(now)) { ... } // a deadline passes at the instant it names
//	}
//
// The memory store calls these functions before it writes; so does the
// SQL store (package sqlstore), for SQLite and PostgreSQL alike, so the
// three agree on what is refused and on what reads back.
package norm

import (
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// MS converts t to unix milliseconds; the zero time is 0.
func MS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// Time converts unix milliseconds to a UTC time; 0 is the zero time.
func Time(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// Round returns t as it reads back from storage (UTC, milliseconds).
func Round(t time.Time) time.Time { return Time(MS(t)) }

// Expired reports whether a deadline (unix ms, 0 = never) has passed at now:
// a deadline expires at the instant it names.
func Expired(deadlineMS, nowMS int64) bool { return deadlineMS != 0 && deadlineMS <= nowMS }

// Bytes normalises stored bytes: empty reads back as nil.
func Bytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", store.ErrInvalid, fmt.Sprintf(format, args...))
}

// Server validates a server row.
func Server(s store.Server) error {
	if s.ID == "" {
		return invalid("server ID is empty")
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil {
			return invalid("server %q: URL does not parse", s.ID)
		}
		if _, has := u.User.Password(); has {
			return invalid("server %q: URL carries a password; the store never persists secrets", s.ID)
		}
	}
	return nil
}

// Key validates a journal key.
func Key(k store.RecordKey) error {
	if k.RunID == "" || k.ToolCallID == "" {
		return invalid("record key needs a run ID and a tool call ID (got %q/%q)", k.RunID, k.ToolCallID)
	}
	return nil
}

// Claim validates and completes a record for Claim.
func Claim(rec store.Record, now time.Time) (store.Record, error) {
	if err := Key(rec.RecordKey); err != nil {
		return rec, err
	}
	if rec.State != "" && rec.State != store.StateStarted {
		return rec, invalid("Claim creates started records, not %q", rec.State)
	}
	if rec.Executor == "" {
		return rec, invalid("Claim needs an executor")
	}
	rec.State = store.StateStarted
	if rec.CreatedAt.IsZero() {
		rec.CreatedAt = now
	}
	if rec.UpdatedAt.IsZero() {
		rec.UpdatedAt = rec.CreatedAt
	}
	rec.CreatedAt = Round(rec.CreatedAt)
	rec.UpdatedAt = Round(rec.UpdatedAt)
	rec.LeaseUntil = Round(rec.LeaseUntil)
	rec.ExpiresAt = Round(rec.ExpiresAt)
	rec.Outcome = Bytes(rec.Outcome)
	return rec, nil
}

// Completion validates the target state of Complete.
func Completion(state store.State) error {
	if state != store.StateSucceeded && state != store.StateFailed {
		return invalid("Complete moves a record to succeeded or failed, not %q", state)
	}
	return nil
}

// Approval validates and completes an approval for CreateApproval.
func Approval(a store.Approval, maxPending int, now time.Time) (store.Approval, error) {
	if a.ID == "" {
		return a, invalid("approval ID is empty")
	}
	if err := Key(a.RecordKey); err != nil {
		return a, err
	}
	if a.State != "" && a.State != store.ApprovalPending {
		return a, invalid("approvals are created pending, not %q", a.State)
	}
	if maxPending < 0 {
		return a, invalid("the bound on pending approvals is negative (%d)", maxPending)
	}
	if len(a.Args) > 0 && !json.Valid(a.Args) {
		return a, invalid("approval %q: arguments are not JSON", a.ID)
	}
	a.State = store.ApprovalPending
	if a.CreatedAt.IsZero() {
		a.CreatedAt = now
	}
	a.CreatedAt = Round(a.CreatedAt)
	a.ExpiresAt = Round(a.ExpiresAt)
	if !a.ExpiresAt.IsZero() && !a.ExpiresAt.After(a.CreatedAt) {
		return a, invalid("approval %q expires (%v) before it is created (%v)", a.ID, a.ExpiresAt, a.CreatedAt)
	}
	a.Args = Bytes(a.Args)
	a.DecidedAt = time.Time{}
	a.DecidedBy = ""
	a.UsedAt = time.Time{}
	a.Decisions = nil
	return a, nil
}

// Decider validates who decides an approval.
func Decider(by string) error {
	if by == "" {
		return invalid("a decision needs a decider")
	}
	return nil
}

// ApprovalFilter validates a ListApprovals filter.
func ApprovalFilter(s store.ApprovalState) error {
	if s != "" && !s.Valid() {
		return invalid("approval state %q", s)
	}
	return nil
}

// Decided returns the state DecideApproval writes.
func Decided(approve bool) store.ApprovalState {
	if approve {
		return store.ApprovalApproved
	}
	return store.ApprovalDenied
}

// NotStarted builds the error for a record that is not started.
func NotStarted(k store.RecordKey, st store.State) error {
	return fmt.Errorf("%w: %s/%s/%s is %s", store.ErrNotStarted, k.Scope, k.RunID, k.ToolCallID, st)
}

// LeaseLost builds the error for a record held by another executor.
func LeaseLost(k store.RecordKey, holder string) error {
	return fmt.Errorf("%w: %s/%s/%s is held by %q", store.ErrLeaseLost, k.Scope, k.RunID, k.ToolCallID, holder)
}

// NotFound builds a not-found error naming what was missing.
func NotFound(what string, args ...any) error {
	return fmt.Errorf("%w: %s", store.ErrNotFound, fmt.Sprintf(what, args...))
}

// AlreadyDecided builds the error for a decided approval.
func AlreadyDecided(id string, st store.ApprovalState) error {
	return fmt.Errorf("%w: approval %q is %s", store.ErrAlreadyDecided, id, st)
}

// ApprovalExpired builds the error for an approval whose ExpiresAt has passed.
func ApprovalExpired(id string, at time.Time) error {
	return fmt.Errorf("%w: approval %q expired at %s", store.ErrExpired, id, at.UTC().Format(time.RFC3339))
}

// NotApproved builds the error for an approval that cannot be used.
func NotApproved(id string, st store.ApprovalState) error {
	return fmt.Errorf("%w: approval %q is %s", store.ErrNotApproved, id, st)
}

// TooManyPending builds the error for a subject at its bound; next is when
// its first pending approval expires (unix ms, 0 = never).
func TooManyPending(owner string, max int, next int64) error {
	return &store.PendingLimitError{Owner: owner, Max: max, NextExpiry: Time(next)}
}

// WhyNotDecided explains why DecideApproval changed nothing on a, read
// after the compare-and-swap failed.
func WhyNotDecided(a store.Approval, now time.Time) error {
	if a.State.Live() && a.Expired(now) {
		return ApprovalExpired(a.ID, a.ExpiresAt)
	}
	return AlreadyDecided(a.ID, a.State)
}

// WhyNotUsed explains why UseApproval changed nothing on a.
func WhyNotUsed(a store.Approval, now time.Time) error {
	if a.State.Live() && a.Expired(now) {
		return ApprovalExpired(a.ID, a.ExpiresAt)
	}
	return NotApproved(a.ID, a.State)
}

// Decidable reports whether DecideApproval may move an approval in state
// st: only a pending one (a decision is final).
func Decidable(st store.ApprovalState) bool { return st == store.ApprovalPending }

// Observation validates o for ObserveListing (store.Observation.Validate)
// and completes it as it is stored: SeenAt from now when zero, LastSeenAt
// equal to SeenAt, both rounded; ID and TrustedAt zero; Entries copied
// (empty, non-nil, when nil) and Changes normalised (Bytes).
func Observation(o store.Observation, now time.Time) (store.Observation, error) {
	if err := o.Validate(); err != nil {
		return o, err
	}
	if o.SeenAt.IsZero() {
		o.SeenAt = now
	}
	o.SeenAt = Round(o.SeenAt)
	o.LastSeenAt = o.SeenAt
	o.ID = 0
	o.TrustedAt = time.Time{}
	o.Entries = o.Entries.Clone()
	o.Changes = Bytes(o.Changes)
	return o, nil
}

// TrustArgs validates TrustListing's arguments.
func TrustArgs(serverID, listing string) error {
	if serverID == "" {
		return invalid("TrustListing needs a server ID")
	}
	if listing == "" {
		return invalid("TrustListing of server %q needs the fingerprint of the listing to trust", serverID)
	}
	return nil
}

// Stale builds TrustListing's error when listing is not the server's latest
// open observation; latest is that observation (ID 0 when there is none),
// returned without its entries.
func Stale(serverID, listing string, latest store.Observation) error {
	latest.Entries = nil
	return &store.StaleListingError{ServerID: serverID, Listing: listing, Latest: latest}
}

// ObservationNotFound builds GetObservation's not-found error.
func ObservationNotFound(id int64) error { return NotFound("observation %d", id) }
