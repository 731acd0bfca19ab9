package store

import (
	"context"
	"io"
	"time"
)

// Server is one persisted MCP server row. It holds exactly what a process
// needs to wake a toolset without a network round trip and nothing secret:
// never a token, a configured header, an auth resolver's output or a
// command's environment.
type Server struct {
	// ID is the caller-chosen primary key (for example "plugin/server").
	ID string
	// Name is the server's configured name.
	Name string
	// Type is the transport type ("stdio", "http", "sse").
	Type string
	// URL is the server's URL for remote servers. It must not carry a
	// password (PutServer refuses userinfo with a password). Stdio servers
	// leave it empty (or store a non-secret identity; see the package doc).
	URL string
	// Catalogue is the last published tool listing as JSON. The store
	// treats it as opaque bytes.
	Catalogue []byte
	// UpdatedAt is when the row was last written. PutServer fills it from
	// the store's clock when zero.
	UpdatedAt time.Time
	// BaselineVersion is bumped by every SaveBaseline that adds an entry
	// and by every ClearBaseline, ReplaceBaseline and successful
	// TrustListing. It is read-only: PutServer ignores it.
	BaselineVersion int64
}

// ServerStore persists server rows and their trust baselines.
type ServerStore interface {
	// PutServer inserts or replaces the row's id, name, type, url and
	// catalogue. It never touches the server's baseline.
	PutServer(ctx context.Context, s Server) error
	// GetServer returns the row or ErrNotFound.
	GetServer(ctx context.Context, id string) (Server, error)
	// ListServers returns every row, ordered by ID.
	ListServers(ctx context.Context) ([]Server, error)
	// DeleteServer deletes the row, its baseline and its drift
	// observations (ErrNotFound if absent).
	DeleteServer(ctx context.Context, id string) error

	// SaveBaseline records entries in the server's baseline. It is
	// insert-only: an existing entry (same Kind and Name) is never
	// replaced, whatever the new value. It returns how many entries were
	// added (the version is bumped when that is not zero), and ErrNotFound
	// if the server row does not exist; ErrInvalid (nothing saved) for
	// entries that fail Baseline.Validate: a Kind not one of the six, a
	// name or value no store can hold.
	SaveBaseline(ctx context.Context, serverID string, entries Baseline) (added int, err error)
	// GetBaseline returns the server's baseline (empty, non-nil, when none
	// is recorded) or ErrNotFound when the server row does not exist.
	GetBaseline(ctx context.Context, serverID string) (Baseline, error)
	// ClearBaseline removes the whole baseline of a server (the first step
	// of a re-trust) and returns how many entries it removed.
	ClearBaseline(ctx context.Context, serverID string) (int64, error)
	// ReplaceBaseline makes entries the server's whole baseline in one
	// transaction (a re-trust: what ClearBaseline then SaveBaseline do,
	// with no moment in which another process sees no baseline), bumps the
	// version once (even when entries equal the old baseline), and returns
	// how many old entries it removed; ErrNotFound and ErrInvalid as
	// SaveBaseline. Observations made under the old version are closed by
	// the bump (see DriftStore).
	ReplaceBaseline(ctx context.Context, serverID string, entries Baseline) (cleared int64, err error)
	// BaselineVersion returns the server's baseline version; a process can
	// poll it cheaply to notice a re-trust made by another process.
	BaselineVersion(ctx context.Context, serverID string) (int64, error)
}

// State is the state of a journal record.
type State string

// Journal record states.
const (
	StateStarted   State = "started"
	StateSucceeded State = "succeeded"
	StateFailed    State = "failed"
	StateInDoubt   State = "in_doubt"
)

// Valid reports whether s is one of the four states.
func (s State) Valid() bool {
	switch s {
	case StateStarted, StateSucceeded, StateFailed, StateInDoubt:
		return true
	}
	return false
}

// RecordKey names one journaled call. RunID and ToolCallID must not be
// empty; Scope may be.
type RecordKey struct {
	Scope      string
	RunID      string
	ToolCallID string
}

// Record is one journaled tool call.
type Record struct {
	RecordKey
	// Fingerprint identifies the call's content (server, tool, args).
	Fingerprint string
	// State is the record's state. Claim only creates started records.
	State State
	// Outcome is the recorded result or error, opaque to the store.
	Outcome []byte
	// Owner is the subject the work belongs to (ListRuns, Purge).
	Owner string
	// Executor names who holds the lease on a started record.
	Executor string
	// LeaseUntil is when the executor's lease ends; at or after it the
	// record may be taken over or marked in doubt.
	LeaseUntil time.Time
	// CreatedAt and UpdatedAt are filled from the store's clock when zero.
	CreatedAt time.Time
	UpdatedAt time.Time
	// ExpiresAt is when Sweep may delete the record; zero means never.
	// Callers keep it at or after LeaseUntil.
	ExpiresAt time.Time
}

// Run summarises the records of one (scope, run ID, owner).
type Run struct {
	Scope     string
	RunID     string
	Owner     string
	Calls     int64 // number of records
	Started   int64
	Succeeded int64
	Failed    int64
	InDoubt   int64
	FirstAt   time.Time // earliest CreatedAt
	LastAt    time.Time // latest UpdatedAt
}

// RunFilter selects runs for ListRuns.
type RunFilter struct {
	// Owner selects the runs of one subject, unless AnyOwner is set.
	Owner string
	// AnyOwner lists the runs of every subject.
	AnyOwner bool
	// Limit caps the number of runs returned; 0 means no cap.
	Limit int
}

// JournalStore persists the effect journal. Every method is one statement
// or one transaction and is atomic across processes sharing the store.
type JournalStore interface {
	// Claim inserts rec as a started record unless a record with its key
	// exists (INSERT ... ON CONFLICT DO NOTHING). It returns claimed=true
	// and the stored record when it inserted, or claimed=false and the
	// record that was already there.
	Claim(ctx context.Context, rec Record) (claimed bool, stored Record, err error)
	// GetRecord returns the record or ErrNotFound.
	GetRecord(ctx context.Context, key RecordKey) (Record, error)
	// Complete moves a started record held by executor to state
	// (succeeded or failed) with outcome. It fails with ErrNotFound,
	// ErrNotStarted (the record is in another state) or ErrLeaseLost (the
	// record is held by another executor).
	Complete(ctx context.Context, key RecordKey, executor string, state State, outcome []byte) error
	// TakeOver gives a started record whose lease has expired at now to
	// newExecutor with a new lease (compare-and-swap). It reports whether
	// it did; ErrNotFound when there is no record.
	TakeOver(ctx context.Context, key RecordKey, newExecutor string, leaseUntil, now time.Time) (bool, error)
	// MarkInDoubt moves a started record whose lease has expired at now to
	// in_doubt (compare-and-swap). It reports whether it did; ErrNotFound
	// when there is no record.
	MarkInDoubt(ctx context.Context, key RecordKey, now time.Time) (bool, error)
	// RenewLease extends the lease of a started record held by executor to
	// until (and ExpiresAt to at least until). Errors as Complete.
	RenewLease(ctx context.Context, key RecordKey, executor string, until time.Time) error
	// ListRuns summarises runs, most recently updated first.
	ListRuns(ctx context.Context, f RunFilter) ([]Run, error)
	// ListRecords returns the records of one run ordered by CreatedAt then
	// ToolCallID.
	ListRecords(ctx context.Context, scope, runID string) ([]Record, error)
	// Purge deletes every journal record and approval whose owner is owner,
	// and the connections, refresh leases, pending connect flows and
	// sessions whose subject is owner (one transaction), and returns how
	// many rows it deleted. An empty owner never reaches the service connections
	// (subject ""): those go only with DeleteConnections.
	Purge(ctx context.Context, owner string) (int64, error)
	// Sweep deletes the records whose ExpiresAt is non-zero and at or
	// before now, and returns how many.
	Sweep(ctx context.Context, now time.Time) (int64, error)
	// OldestStarted returns the CreatedAt of the oldest record in state
	// started, across every scope, run and owner, or the zero time when
	// there is none. It is for monitoring (journal lag), not for
	// correctness; the SQL stores answer it by scanning the journal (no
	// index on state), so callers should cache it.
	OldestStarted(ctx context.Context) (time.Time, error)
}

// CounterStore holds atomic counters (rate limits, call caps) shared by
// every process using the store.
type CounterStore interface {
	// IncrBy adds delta to the counter and returns the new value, in one
	// atomic statement. A counter whose expiry has passed (by the store's
	// clock) restarts from zero first. The counter's expiry becomes the
	// later of its current one and expiresAt (zero means never).
	IncrBy(ctx context.Context, key string, delta int64, expiresAt time.Time) (int64, error)
	// GetCounter returns the counter's value, or 0 when it is absent or
	// expired at now.
	GetCounter(ctx context.Context, key string, now time.Time) (int64, error)
	// SweepCounters deletes counters expired at now and returns how many.
	SweepCounters(ctx context.Context, now time.Time) (int64, error)
}

// ApprovalState is the state of an approval.
type ApprovalState string

// Approval states. An approval is asked for one execution of one call:
//
//	pending ──approve──▶ approved ──UseApproval──▶ used
//	   │                    │
//	   └──deny──▶ denied ◀──┘ (deny before use: a revocation)
//
// Pending, approved and denied approvals are live until their ExpiresAt;
// expired is written when a store notices (CreateApproval for the same
// call retires an expired one) or when the approval was asked under
// another contract of its tool than the call's (SupersedeApproval), and
// is final. Used and expired approvals never authorize anything again.
const (
	ApprovalPending  ApprovalState = "pending"
	ApprovalApproved ApprovalState = "approved"
	ApprovalDenied   ApprovalState = "denied"
	ApprovalUsed     ApprovalState = "used"
	ApprovalExpired  ApprovalState = "expired"
)

// Valid reports whether s is one of the five states.
func (s ApprovalState) Valid() bool {
	switch s {
	case ApprovalPending, ApprovalApproved, ApprovalDenied, ApprovalUsed, ApprovalExpired:
		return true
	}
	return false
}

// Live reports whether an approval in state s still answers for its call
// (pending, approved or denied), expiry aside.
func (s ApprovalState) Live() bool {
	return s == ApprovalPending || s == ApprovalApproved || s == ApprovalDenied
}

// Decision is one operator's decision on an approval.
type Decision struct {
	// Verdict is ApprovalApproved or ApprovalDenied.
	Verdict ApprovalState
	// By names who decided (for example "alice@ops-host").
	By string
	// At is when.
	At time.Time
}

// Approval is a durable request for an operator's decision on one
// execution of one call.
type Approval struct {
	// ID is caller-chosen and unique; it is never reused for another
	// request, even of the same call.
	ID string
	// RecordKey is the call awaiting approval. At most one live approval
	// (pending, approved or denied, not expired) exists per key.
	RecordKey
	Server          string
	Tool            string
	ArgsFingerprint string
	// Contract is the fingerprint (pin.ToolFingerprint) of the tool's
	// trusted contract (its name, title, description, schemas and
	// annotations) when the approval was asked: the operator decides on
	// the call of that tool. "" when it is unknown: the caller knew no
	// contract, or the approval was recorded before contracts were
	// stored. A call whose tool now has another contract is not
	// authorized by it (see SupersedeApproval).
	Contract string
	// Args are the call's arguments as sent (JSON), for the operator to
	// see. Nil for approvals recorded before they were stored.
	Args []byte
	// CallerKey is the idempotency key as the caller sent it, when it
	// differs from RunID:ToolCallID (the gateway derives its keys); empty
	// otherwise.
	CallerKey string
	Reason    string
	Owner     string
	State     ApprovalState
	// CreatedAt is filled from the store's clock when zero.
	CreatedAt time.Time
	// ExpiresAt is when the approval stops answering for its call: a
	// pending one can no longer be decided, an approved one no longer
	// authorizes, and SweepApprovals may delete it. Zero means never.
	ExpiresAt time.Time
	// DecidedAt and DecidedBy are those of the last decision.
	DecidedAt time.Time
	DecidedBy string
	// UsedAt is when the execution it authorized was started.
	UsedAt time.Time
	// Decisions are the decisions taken on the approval, oldest first (one,
	// as a decision is final; a refused attempt is not a decision).
	Decisions []Decision
}

// Expired reports whether a live approval's ExpiresAt has passed at now.
func (a Approval) Expired(now time.Time) bool {
	return !a.ExpiresAt.IsZero() && !a.ExpiresAt.After(now)
}

// ApprovalStore persists approvals.
type ApprovalStore interface {
	// CreateApproval records a pending approval, unless the call
	// (a.RecordKey) has a live approval that has not expired: then it
	// returns that one and created=false. A live approval of the call that
	// has expired is moved to expired first. When maxPending > 0 and
	// a.Owner already has maxPending pending approvals that have not
	// expired, nothing is written and the error wraps ErrTooManyPending.
	// An ID already used is ErrConflict. Expiry and the bound are judged
	// at a.CreatedAt (the store's clock when zero). One transaction:
	// concurrent callers for one call get one approval, and the bound
	// holds across processes.
	CreateApproval(ctx context.Context, a Approval, maxPending int) (stored Approval, created bool, err error)
	// GetApproval returns the approval or ErrNotFound.
	GetApproval(ctx context.Context, id string) (Approval, error)
	// GetApprovalByCall returns the live approval of one call (pending,
	// approved or denied, expired or not) or ErrNotFound.
	GetApprovalByCall(ctx context.Context, key RecordKey) (Approval, error)
	// ListApprovals lists approvals in state (every state when empty),
	// oldest first.
	ListApprovals(ctx context.Context, state ApprovalState) ([]Approval, error)
	// DecideApproval approves or denies a pending approval and records the
	// decision with it (who, when, which). A decision is final. It fails
	// with ErrNotFound, ErrExpired (ExpiresAt is at or before now) or
	// ErrAlreadyDecided (no longer pending).
	DecideApproval(ctx context.Context, id string, approve bool, by string, now time.Time) (Approval, error)
	// UseApproval moves an approved approval that has not expired at now
	// to used (compare-and-swap): the one execution it authorizes. It
	// fails with ErrNotFound, ErrExpired, or ErrNotApproved (pending,
	// denied, or already used: an approval is spent once).
	UseApproval(ctx context.Context, id string, now time.Time) (Approval, error)
	// SupersedeApproval moves a live approval (pending, approved or
	// denied, expired or not) whose Contract is not contract to expired
	// (compare-and-swap): it was asked under another contract of its
	// tool than the one the call now has, and answers for the call no
	// more; CreateApproval for the call then records a new one. It
	// reports whether it moved it: false, with a nil error, when the
	// approval is no longer live or has that contract (a concurrent call
	// superseded or spent it). ErrNotFound when there is no such
	// approval.
	SupersedeApproval(ctx context.Context, id, contract string) (bool, error)
	// SweepApprovals deletes the approvals whose ExpiresAt is non-zero and
	// at or before now, whatever their state, and returns how many.
	SweepApprovals(ctx context.Context, now time.Time) (int64, error)
}

// Store is every kind of storage Gatehouse uses. Consumers should declare
// the smaller interface they need.
type Store interface {
	ServerStore
	JournalStore
	CounterStore
	ApprovalStore
	ExecutorStore
	DriftStore
	AuditStore
	ConnectionStore
	SessionStore
	io.Closer
}

// Durability says what a committed write survives.
type Durability string

// Durability settings.
const (
	// DurabilityProcess survives a crash of the process (the default).
	// SQLite: WAL with synchronous=NORMAL; the last commits can be lost on
	// power loss or an OS crash. PostgreSQL: the server's own
	// synchronous_commit setting (on unless the operator changed it).
	DurabilityProcess Durability = "process"
	// DurabilityPower survives power loss too. SQLite: synchronous=FULL;
	// PostgreSQL: synchronous_commit=on for every connection.
	DurabilityPower Durability = "power"
)

// Options configure an implementation. A nil *Options means defaults.
type Options struct {
	// Durability defaults to DurabilityProcess.
	Durability Durability
	// Now is the clock for timestamps the store fills in and for counter
	// expiry in IncrBy. Nil means time.Now.
	Now func() time.Time
	// BusyTimeout is how long a SQLite writer waits for the lock held by
	// another connection or process. Zero means 10 seconds.
	BusyTimeout time.Duration
	// MaxConns caps the connection pool. Zero means the implementation's
	// default (SQLite 4, PostgreSQL pgxpool's default). SQLite's pool
	// serves reads; its writes have one connection more, of their own.
	MaxConns int
	// GroupCommit says whether concurrent journal Claims and Completes
	// share transactions. The zero value is GroupCommitDefault.
	GroupCommit GroupCommit
	// MustExist opens only a store that exists: a database holding no
	// Gatehouse store (a missing SQLite file or folder, an empty file, a
	// SQLite or PostgreSQL database without Gatehouse's schema_migrations
	// table, memory: through store/dsn) is refused with an error wrapping
	// ErrNoStore, and nothing is created: no file, folder, -wal or -shm
	// file, or table. A store that exists is migrated to this build's
	// schema as always. Gatehouse's operator commands set it (see
	// "Which commands create a store" in docs/gateway.md).
	MustExist bool
}

// GroupCommit says whether a SQL store lets concurrent journal Claims and
// Completes share one transaction: those that arrive while another batch
// is being committed are committed together, in one transaction (one
// commit, one fsync with DurabilityPower). A lone caller is never delayed,
// and each Claim or Complete still returns only after its own write has
// committed (docs/durable.md). The memory store ignores it.
type GroupCommit string

// GroupCommit settings.
const (
	// GroupCommitDefault is each store's default: on for SQLite (one
	// writer at a time, so concurrent calls would otherwise queue for the
	// write lock and pay a commit each) and for PostgreSQL (a batch is one
	// transaction sent in one round trip, where each op alone costs a
	// round trip and a commit).
	GroupCommitDefault GroupCommit = ""
	// GroupCommitOn batches on every SQL store.
	GroupCommitOn GroupCommit = "on"
	// GroupCommitOff gives every Claim and Complete its own transaction.
	GroupCommitOff GroupCommit = "off"
)

// Enabled reports whether g turns group commit on for a store whose
// default is def.
func (g GroupCommit) Enabled(def bool) bool {
	switch g {
	case GroupCommitOn:
		return true
	case GroupCommitOff:
		return false
	}
	return def
}
