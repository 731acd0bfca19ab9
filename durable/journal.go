package durable

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/executor"
	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/internal/rawresult"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
)

// Defaults of JournalOptions.
const (
	DefaultLease = 30 * time.Second
	DefaultTTL   = 24 * time.Hour
)

// recordTimeout bounds the write that records an outcome after the caller's
// context ended: the effect happened, so recording it matters more than
// honouring the cancellation.
const recordTimeout = 10 * time.Second

// JournalOptions configure a Journal. A nil *JournalOptions means defaults.
type JournalOptions struct {
	// Scope namespaces every key of this journal (for example a gateway's
	// subject prefix or an application name). It may be empty.
	Scope string
	// Executor names this journal in the records it claims. Two journals
	// must never share one. Set, it is the caller's to register (a
	// gateway registers its own: see Executors). Empty, the journal has an
	// executor of its own when its store can tell a restart (StoreDSN),
	// and a random name otherwise.
	Executor string
	// StoreDSN names the store the journal is on (the DSN it was opened
	// with: postgres://..., sqlite:PATH), for the journal's own executor:
	// when Executor is empty and the store is a store.ExecutorStore, the
	// journal takes an instance of that store on this host (a lock file
	// next to a SQLite file, or in the user's cache directory for
	// PostgreSQL), registers it before its first claim and stops it at
	// Close. A restart of the program then takes the dead one's instance,
	// and its calls left started are in doubt (or re-sent, when
	// repeatable) at once instead of run_busy for the rest of their lease.
	// A SQLite store's file is found without it; a memory store has none.
	StoreDSN string
	// Lease is how long a claim stays live without renewal; a long effect
	// renews it every Lease/3. Default 30 s.
	Lease time.Duration
	// TTL is how long a record is kept before Sweep deletes it. Default
	// 24 h; it may not be shorter than Lease.
	TTL time.Duration
	// Repeatable reports whether a call to server's tool may be sent again
	// when its outcome is unknown (the operator's config says the tool is
	// idempotent or dedups on _meta.idempotencyKey). Tool annotations must
	// never decide this. Nil means no tool is repeatable.
	Repeatable func(server, tool string) bool
	// Approvals stores approvals for Guarded. Nil: a guard's
	// require_approval is refused as denied.
	Approvals store.ApprovalStore
	// ApprovalTTL is how long an approval answers for its call: a pending
	// one can be decided, an approved one authorizes its one execution.
	// Zero means DefaultApprovalTTL (24 h).
	ApprovalTTL time.Duration
	// MaxPendingApprovals bounds the pending approvals of one subject
	// (Call.Owner); a call past it is refused as rate_limited. Zero means
	// DefaultMaxPendingApprovals (100); negative means no bound.
	MaxPendingApprovals int
	// Executors, when set, is where the processes that claim records
	// register and heartbeat (a gateway registers its Executor there). A
	// call that finds a record started by another registered executor that
	// is dead (it restarted, stopped, or stopped heartbeating) does not wait
	// for the record's lease: the record is in doubt at once, or taken over
	// once for a repeatable tool. Records of executors it does not know keep
	// the lease rules. Nil: the store itself when the journal has an
	// executor of its own (StoreDSN), otherwise leases alone decide.
	Executors store.ExecutorStore
	// Clock is the time source for leases and expiry. Nil means time.Now.
	Clock func() time.Time
	// Logger receives take-overs, in-doubt markings and renewal failures.
	// Nil discards them.
	Logger *slog.Logger
}

// Journal runs effects at most once per key through a store.JournalStore.
// It is safe for concurrent use.
type Journal struct {
	s   store.JournalStore
	o   JournalOptions
	log *slog.Logger
	// crash, when set (tests only), is called at named points of Do.
	crash func(point string)
	// recent decides whether Guarded reads before a Pure guard's claim.
	recent recent
	// own is the journal's own executor (StoreDSN), nil when it has none;
	// closed is set by Close.
	own    *executor.OnDemand
	closed atomic.Bool
}

// NewJournal returns a journal over s. opts may be nil.
func NewJournal(s store.JournalStore, opts *JournalOptions) (*Journal, error) {
	if s == nil {
		return nil, errors.New("durable: NewJournal needs a store")
	}
	var o JournalOptions
	if opts != nil {
		o = *opts
	}
	if o.Lease < 0 || o.TTL < 0 || o.ApprovalTTL < 0 {
		return nil, errors.New("durable: negative Lease, TTL or ApprovalTTL")
	}
	if o.Lease == 0 {
		o.Lease = DefaultLease
	}
	if o.TTL == 0 {
		o.TTL = max(DefaultTTL, o.Lease)
	}
	if o.TTL < o.Lease {
		return nil, fmt.Errorf("durable: TTL %v is shorter than the lease %v", o.TTL, o.Lease)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	j := &Journal{s: s, o: o, log: log}
	if o.Executor == "" {
		j.ownExecutor()
	}
	if j.o.Executor == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		j.o.Executor = "ex_" + hex.EncodeToString(b[:])
	}
	return j, nil
}

// Executor returns the name this journal claims records under.
func (j *Journal) Executor() string { return j.o.Executor }

// Scope returns the journal's scope.
func (j *Journal) Scope() string { return j.o.Scope }

// Call is one journaled call.
type Call struct {
	// RunID and ToolCallID name the call; neither may be empty. A resumed
	// run uses the same pair for the same call.
	RunID, ToolCallID string
	// Server and Tool name what is called; with Args they make the call's
	// fingerprint.
	Server, Tool string
	// Args are the call's JSON arguments (an object, or empty).
	Args json.RawMessage
	// RemoteName is the tool's name on its server when Tool is a projected
	// name (for example Tool "bank__transfer", RemoteName "transfer"). It
	// is passed to guards and is not part of the fingerprint.
	RemoteName string
	// Owner is the subject the work belongs to. A record of another owner
	// under the same key is never replayed (key_reused).
	Owner string
	// Key is the idempotency key as the caller sent it, when it is not
	// RunID:ToolCallID (a gateway derives those from it). It is shown to
	// operators with an approval and is not part of the journal key.
	Key string
	// Contract is the fingerprint of the tool's trusted contract as the
	// caller's toolset knows it now (toolset.ToolInfo.Contract, a
	// pin.ToolFingerprint); "" when it is unknown. It is not part of the
	// fingerprint. An approval is bound to it (store.Approval.Contract):
	// a live approval of the call's key asked under another contract,
	// pending, approved or denied, or asked before contracts were
	// recorded, is superseded and the call asks a new approval (see
	// Guarded). "" binds nothing: the call is answered by the live
	// approval of its key whatever contract that was asked under.
	Contract string
	// Audit, when set, is the call's audit entry, written in the same
	// transaction as the call's completion when the journal's store is a
	// store.AuditJournalStore. Nil: no entry.
	Audit *Audit
}

// Audit carries a call's audit entry into the transaction that records
// its outcome (Call.Audit): the completion and the entry are committed
// together, or neither is. Only a completion (succeeded or failed) carries
// it; a call answered otherwise (a replay, run_busy, in_doubt, a refusal
// before the claim) writes no journal record and leaves Written nil.
type Audit struct {
	// Entry returns the entry that records the call, given the effect's
	// answer; its Chain must be set (Seq and the hashes are Link's to
	// fill in).
	Entry func(res *mcp.CallToolResult, err error) store.AuditEntry
	// Link links the entry to its chain inside the store's transaction
	// (package audit's Link).
	Link store.AuditLink
	// Written is set by the journal to the entry as committed with the
	// completion; it stays nil when the entry was not written (no
	// completion, a store that cannot, or a completion that failed).
	Written *store.AuditEntry
	// Err is set by the journal when the completion and the entry could
	// not be written (the journal's answer wraps ErrNotRecorded): neither
	// is, and the record stays started.
	Err error
}

// IdempotencyKey returns RunID + ":" + ToolCallID, the _meta.idempotencyKey
// sent with the call.
func (c Call) IdempotencyKey() string { return c.RunID + ":" + c.ToolCallID }

// keyReused is the key_reused refusal of c, naming the key as the caller
// sent it (Key, when a gateway derived the run and tool call IDs from
// it) and what to change: what, when set, says what the key was used for.
func (c Call) keyReused(what, approvalID string) *refusal.Error {
	key, fix := c.IdempotencyKey(), "use a new tool call ID"
	if c.Key != "" {
		key, fix = c.Key, "use a new idempotency key"
	}
	return &refusal.Error{Code: refusal.KeyReused, ApprovalID: approvalID,
		Message: fmt.Sprintf("key %s was used for %s; %s", key, what, fix)}
}

// Effect performs the real call, carrying idempotencyKey to the server in
// _meta.idempotencyKey.
type Effect func(ctx context.Context, idempotencyKey string) (*mcp.CallToolResult, error)

// ErrInvalidCall is wrapped by Do's error when the call has an empty run or
// tool call ID, or arguments that are not JSON.
var ErrInvalidCall = errors.New("durable: invalid call")

func (j *Journal) key(c Call) store.RecordKey {
	return store.RecordKey{Scope: j.o.Scope, RunID: c.RunID, ToolCallID: c.ToolCallID}
}

func (j *Journal) repeatable(c Call) bool {
	return j.o.Repeatable != nil && j.o.Repeatable(c.Server, c.Tool)
}

func (j *Journal) point(name string) {
	if j.crash != nil {
		j.crash(name)
	}
}

// fingerprint returns the fingerprint Do records for c.
func fingerprint(c Call) (string, error) {
	fp, err := pin.CallFingerprint(c.Server, c.Tool, c.Args)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidCall, err)
	}
	return fp, nil
}

// Do runs effect at most once for the call's key (scope, RunID,
// ToolCallID):
//
//   - no record: a started record is claimed and committed, then effect
//     runs (its lease renewed every Lease/3), then its outcome is recorded
//     as succeeded or failed; Do returns the effect's own answer;
//   - succeeded or failed: the recorded outcome is returned with
//     replayed=true, and effect does not run;
//   - another fingerprint or owner under the key: *refusal.Error key_reused;
//   - started with a live lease: *refusal.Error run_busy (retryable),
//     unless JournalOptions.Executors knows the record's executor is dead:
//     then as an expired lease, at once;
//   - started with an expired lease, or in_doubt: *refusal.Error in_doubt, unless
//     JournalOptions.Repeatable says the tool may be repeated and the record
//     is still started, in which case this journal takes it over and sends
//     it again with the same idempotency key.
//
// An effect error that leaves the outcome unknown (see the package
// documentation) marks the record in_doubt and returns an in_doubt *refusal.Error
// wrapping it (for a repeatable tool the claim is released instead, and
// the *refusal.Error is retryable). Do uses two store writes on the fresh path: the
// claim and the completion.
func (j *Journal) Do(ctx context.Context, c Call, effect Effect) (res *mcp.CallToolResult, replayed bool, err error) {
	if c.RunID == "" || c.ToolCallID == "" {
		return nil, false, fmt.Errorf("%w: run ID and tool call ID are required", ErrInvalidCall)
	}
	if effect == nil {
		return nil, false, fmt.Errorf("%w: nil effect", ErrInvalidCall)
	}
	fp, err := fingerprint(c)
	if err != nil {
		return nil, false, err
	}
	a, replayed, err := j.do(ctx, c, fp, withRaw(ctx, effect), nil)
	if h := rawresult.From(ctx); h != nil {
		*h = a.raw // the answer's bytes, or none: what the caller reads (internal/rawresult)
	}
	return a.res, replayed, err
}

// do is Do for a valid call whose fingerprint is fp. found, when not nil,
// is set to whether the claim found a record.
func (j *Journal) do(ctx context.Context, c Call, fp string, effect anyEffect, found *bool) (answer, bool, error) {
	if effect.missing() {
		return answer{}, false, fmt.Errorf("%w: nil effect", ErrInvalidCall)
	}
	if err := j.alive(ctx); err != nil {
		return answer{}, false, err
	}
	key := j.key(c)
	ikey := c.IdempotencyKey()
	for range 4 {
		now := j.o.Clock()
		j.point("before-claim")
		claimed, rec, err := j.s.Claim(ctx, store.Record{
			RecordKey:   key,
			Fingerprint: fp,
			State:       store.StateStarted,
			Owner:       c.Owner,
			Executor:    j.o.Executor,
			LeaseUntil:  now.Add(j.o.Lease),
			ExpiresAt:   now.Add(j.o.TTL),
		})
		if err != nil {
			return answer{}, false, fmt.Errorf("durable: claim %s: %w", ikey, err)
		}
		if found != nil {
			*found = !claimed
		}
		if claimed {
			j.point("claimed")
			return j.run(ctx, c, key, effect)
		}
		if rec.Fingerprint != fp || rec.Owner != c.Owner {
			return answer{}, false, c.keyReused("another call (other server, tool, arguments or owner)", "")
		}
		switch rec.State {
		case store.StateSucceeded, store.StateFailed:
			res, err := replay(rec.Outcome)
			if err != nil {
				return answer{}, true, fmt.Errorf("durable: replay %s: %w", ikey, err)
			}
			return answer{res: res.result}, true, res.err
		case store.StateInDoubt:
			return answer{}, false, inDoubt(ikey, "")
		case store.StateStarted:
			if rec.LeaseUntil.After(now) {
				a, done, err := j.fromDead(ctx, c, key, rec, now, effect)
				if done {
					return a, false, err
				}
				return answer{}, false, &refusal.Error{Code: refusal.RunBusy, Retryable: true, Message: msgRunBusy,
					RetryAfter: rec.LeaseUntil.Sub(now)}
			}
			if j.repeatable(c) {
				ok, err := j.s.TakeOver(ctx, key, j.o.Executor, now.Add(j.o.Lease), now)
				if err != nil {
					return answer{}, false, fmt.Errorf("durable: take over %s: %w", ikey, err)
				}
				if ok {
					j.log.Info("durable: re-sending a repeatable call whose outcome is unknown",
						"key", ikey, "server", c.Server, "tool", c.Tool, "previous_executor", rec.Executor)
					return j.run(ctx, c, key, effect)
				}
				continue // someone else moved it: look again
			}
			ok, err := j.s.MarkInDoubt(ctx, key, now)
			if err != nil {
				return answer{}, false, fmt.Errorf("durable: mark in doubt %s: %w", ikey, err)
			}
			if ok {
				j.log.Warn("durable: call is in doubt (its executor stopped before recording an outcome)",
					"key", ikey, "server", c.Server, "tool", c.Tool, "previous_executor", rec.Executor)
				return answer{}, false, inDoubt(ikey, "")
			}
			continue
		default:
			return answer{}, false, fmt.Errorf("durable: record %s has unknown state %q", ikey, rec.State)
		}
	}
	return answer{}, false, fmt.Errorf("durable: record %s keeps changing under concurrent executors; retry", ikey)
}

// fromDead decides a started record whose lease is live but whose
// executor may be dead (JournalOptions.Executors): a repeatable call is
// taken over and run, another is marked in doubt, each by a
// compare-and-swap that checks the record is still held by that dead
// executor. done=false means the holder is alive, unknown, or the record
// moved: the caller answers run_busy.
func (j *Journal) fromDead(ctx context.Context, c Call, key store.RecordKey, rec store.Record, now time.Time, effect anyEffect) (a answer, done bool, err error) {
	if j.o.Executors == nil || rec.Executor == j.o.Executor {
		return answer{}, false, nil
	}
	ikey := c.IdempotencyKey()
	if j.repeatable(c) {
		ok, err := j.o.Executors.TakeOverFromDead(ctx, key, rec.Executor, j.o.Executor, now.Add(j.o.Lease), now)
		if err != nil {
			return answer{}, true, fmt.Errorf("durable: take over %s: %w", ikey, err)
		}
		if !ok {
			return answer{}, false, nil
		}
		j.log.Info("durable: re-sending a repeatable call whose executor died before recording an outcome",
			"key", ikey, "server", c.Server, "tool", c.Tool, "previous_executor", rec.Executor)
		a, _, err := j.run(ctx, c, key, effect)
		return a, true, err
	}
	ok, err := j.o.Executors.MarkInDoubtFromDead(ctx, key, rec.Executor, now)
	if err != nil {
		return answer{}, true, fmt.Errorf("durable: mark in doubt %s: %w", ikey, err)
	}
	if !ok {
		return answer{}, false, nil
	}
	j.log.Warn("durable: call is in doubt (its executor died before recording an outcome)",
		"key", ikey, "server", c.Server, "tool", c.Tool, "previous_executor", rec.Executor)
	return answer{}, true, inDoubt(ikey, "")
}

// run performs the effect for a record this journal holds.
func (j *Journal) run(ctx context.Context, c Call, key store.RecordKey, effect anyEffect) (answer, bool, error) {
	ikey := c.IdempotencyKey()
	stop := j.renew(ctx, key, ikey)
	a, err := func() (answer, error) {
		defer stop() // also on panic: the renewer always ends with the effect
		return effect.call(ctx, ikey)
	}()
	j.point("effect-returned")

	wctx := ctx
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		defer cancel()
	}
	if err == nil && a.raw.JSON != nil {
		if rerr := rawObject(a.raw.JSON); rerr != nil {
			// Recorded as the failure it is, never in doubt: the server
			// answered, with something that is no result.
			a, err = answer{}, Failed(rerr)
		}
	}
	state, outcome, known := classify(a, err)
	if !known {
		return answer{}, false, j.unknown(wctx, c, key, err)
	}
	if cerr := j.complete(wctx, c, key, state, outcome, a, err); cerr != nil {
		j.log.Error("durable: outcome not recorded", "key", ikey, "err", cerr)
		nerr := fmt.Errorf("%w (%s): %w", ErrNotRecorded, ikey, cerr)
		if err != nil {
			nerr = fmt.Errorf("%w; the effect's error: %w", nerr, err)
		}
		return a, false, nerr
	}
	j.point("recorded")
	if err == nil && a.empty() {
		err = errNoResult
	}
	return a, false, err
}

var errNoResult = errors.New("durable: effect returned neither a result nor an error")

// complete records the outcome of a call this journal holds, with the
// call's audit entry in the same transaction when it has one and the store
// can.
func (j *Journal) complete(ctx context.Context, c Call, key store.RecordKey, state store.State, outcome []byte, ans answer, err error) error {
	a := c.Audit
	if a == nil || a.Entry == nil || a.Link == nil {
		return j.s.Complete(ctx, key, j.o.Executor, state, outcome)
	}
	as, ok := j.s.(store.AuditJournalStore)
	if !ok {
		return j.s.Complete(ctx, key, j.o.Executor, state, outcome)
	}
	e, cerr := as.CompleteAudited(ctx, key, j.o.Executor, state, outcome, a.Entry(ans.result(), err), a.Link)
	if cerr != nil {
		a.Err = cerr
		return cerr
	}
	a.Written = &e
	return nil
}

// unknown handles an effect whose outcome is unknown.
func (j *Journal) unknown(ctx context.Context, c Call, key store.RecordKey, cause error) error {
	ikey := c.IdempotencyKey()
	now := j.o.Clock()
	// Release our lease at once (RenewLease checks that we still hold it),
	// so the record is not busy until the lease would have run out.
	if err := j.s.RenewLease(ctx, key, j.o.Executor, now); err != nil {
		j.log.Error("durable: releasing the claim of a call in doubt", "key", ikey, "err", err)
		return inDoubtErr(ikey, cause, false)
	}
	if j.repeatable(c) {
		j.log.Info("durable: outcome unknown; the tool is repeatable, the call will be re-sent on retry",
			"key", ikey, "err", cause)
		return inDoubtErr(ikey, cause, true)
	}
	if _, err := j.s.MarkInDoubt(ctx, key, now); err != nil {
		j.log.Error("durable: marking a call in doubt", "key", ikey, "err", err)
	} else {
		j.log.Warn("durable: call is in doubt", "key", ikey, "err", cause)
	}
	return inDoubtErr(ikey, cause, false)
}

func inDoubtErr(ikey string, cause error, retryable bool) *refusal.Error {
	e := inDoubt(ikey, "")
	e.Err = cause
	if retryable {
		e.Retryable = true
		e.Message = fmt.Sprintf("call %s may have been sent and its outcome is unknown; the tool is repeatable: retry the same call with the same key to send it again", ikey)
	}
	return e
}

// outcome is the JSON the journal stores for a completed call.
type outcome struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *storedError    `json:"error,omitempty"`
}

type storedError struct {
	Message string         `json:"message"`
	RPC     *jsonrpc.Error `json:"rpc,omitempty"`
	Refusal *storedRefusal `json:"refusal,omitempty"`
}

// storedRefusal is a refusal recorded as a call's outcome (an effect that
// answered Failed(&refusal.Error{...}): refused before anything was sent).
type storedRefusal struct {
	Code      refusal.Code `json:"code"`
	Message   string       `json:"message,omitempty"`
	Retryable bool         `json:"retryable,omitempty"`
}

// Local JSON-RPC codes the go-sdk makes up itself when a connection fails:
// they say nothing about whether the server ran the call.
const (
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005
)

// classify decides what an effect's answer means (see the package doc).
func classify(a answer, err error) (store.State, []byte, bool) {
	if err == nil {
		if a.raw.JSON != nil {
			st := store.StateSucceeded
			if a.raw.IsError {
				st = store.StateFailed
			}
			return st, resultOutcome(a.raw.JSON), true // checked by rawObject
		}
		res := a.res
		if res == nil {
			return store.StateFailed, mustJSON(outcome{Error: &storedError{Message: errNoResult.Error()}}), true
		}
		b, merr := json.Marshal(res)
		if merr != nil {
			return store.StateFailed, mustJSON(outcome{Error: &storedError{Message: "durable: result could not be recorded: " + merr.Error()}}), true
		}
		st := store.StateSucceeded
		if res.IsError {
			st = store.StateFailed
		}
		return st, resultOutcome(b), true
	}
	if knownFailure(err) {
		se := &storedError{Message: err.Error()}
		if r, ok := refusal.As(err); ok {
			se.Refusal = &storedRefusal{Code: r.Code, Message: r.Message, Retryable: r.Retryable}
		} else if we := (*jsonrpc.Error)(nil); errors.As(err, &we) {
			se.RPC = &jsonrpc.Error{Code: we.Code, Message: we.Message, Data: we.Data}
		}
		return store.StateFailed, mustJSON(outcome{Error: se}), true
	}
	return "", nil, false
}

// knownFailure reports whether err says for sure that the server answered
// (or that nothing was sent).
func knownFailure(err error) bool {
	var fe *failedError
	if errors.As(err, &fe) {
		return true
	}
	var de *refusal.Error
	if errors.As(err, &de) {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		switch we.Code {
		case codeClientClosing, codeServerClosing, codeRejected:
			return false
		}
		return true
	}
	return false
}

// resultOutcome is mustJSON(outcome{Result: b}) for b as json.Marshal
// wrote it (compact, HTML escaped), without scanning b again; for a raw
// result's bytes (one JSON object, checked by rawObject), {"result": b}
// with b as it is.
func resultOutcome(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(`{"result":}`))
	out = append(out, `{"result":`...)
	out = append(out, b...)
	return append(out, '}')
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain strings and raw JSON already validated
	}
	return b
}

type replayed struct {
	result *mcp.CallToolResult
	err    error
}

func replay(b []byte) (replayed, error) {
	var o outcome
	if err := json.Unmarshal(b, &o); err != nil {
		return replayed{}, fmt.Errorf("stored outcome does not decode: %w", err)
	}
	switch {
	case o.Error != nil:
		re := &RecordedError{Message: o.Error.Message, RPC: o.Error.RPC}
		if r := o.Error.Refusal; r != nil {
			re.Refusal = &refusal.Error{Code: r.Code, Message: r.Message, Retryable: r.Retryable}
		}
		return replayed{err: re}, nil
	case len(o.Result) > 0:
		var res mcp.CallToolResult
		if err := json.Unmarshal(o.Result, &res); err != nil {
			return replayed{}, fmt.Errorf("stored result does not decode: %w", err)
		}
		return replayed{result: &res}, nil
	}
	return replayed{}, errors.New("stored outcome is empty")
}

// Sweep deletes the records whose TTL has passed, the approvals whose
// expiry has passed (SweepApprovals) and, when the journal has an executor
// of its own (JournalOptions.StoreDSN), the executors stopped or silent
// for longer than the TTL, and returns how many rows.
func (j *Journal) Sweep(ctx context.Context) (int64, error) {
	now := j.o.Clock()
	n, err := j.s.Sweep(ctx, now)
	if err != nil {
		return 0, fmt.Errorf("durable: sweep: %w", err)
	}
	if j.own != nil {
		ne, err := j.o.Executors.SweepExecutors(ctx, now.Add(-j.o.TTL))
		if err != nil {
			return n, fmt.Errorf("durable: sweep executors: %w", err)
		}
		n += ne
	}
	na, err := j.SweepApprovals(ctx)
	return n + na, err
}

// StartSweeper sweeps every interval until ctx ends or stop is called;
// stop waits for the sweeper to end. Sweep errors are logged.
func (j *Journal) StartSweeper(ctx context.Context, every time.Duration) (stop func()) {
	if every <= 0 {
		every = time.Minute
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if n, err := j.Sweep(ctx); err != nil {
				if ctx.Err() == nil {
					j.log.Error("durable: sweep failed", "err", err)
				}
			} else if n > 0 {
				j.log.Info("durable: swept expired records", "count", n)
			}
		}
	}()
	return func() { cancel(); <-done }
}
