package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
)

const approvalCols = `id, scope, run_id, tool_call_id, server, tool, args_fingerprint, args, caller_key, reason, owner, state, created_at, expires_at, decided_at, decided_by, used_at, contract`

// liveStates is the SQL list of the states store.ApprovalState.Live
// accepts (the partial unique index approvals_live uses the same).
const liveStates = `('pending', 'approved', 'denied')`

// notExpired is true for an approval whose expires_at ($n) has not passed.
func notExpired(n int) string {
	return fmt.Sprintf(`(expires_at = 0 OR expires_at > $%d)`, n)
}

func scanApproval(r Row) (store.Approval, error) {
	var a store.Approval
	var st string
	var args []byte
	var created, expires, decided, used int64
	if err := r.Scan(&a.ID, &a.Scope, &a.RunID, &a.ToolCallID, &a.Server, &a.Tool, &a.ArgsFingerprint, &args, &a.CallerKey,
		&a.Reason, &a.Owner, &st, &created, &expires, &decided, &a.DecidedBy, &used, &a.Contract); err != nil {
		return store.Approval{}, err
	}
	a.State = store.ApprovalState(st)
	a.Args = norm.Bytes(args)
	a.CreatedAt, a.ExpiresAt = norm.Time(created), norm.Time(expires)
	a.DecidedAt, a.UsedAt = norm.Time(decided), norm.Time(used)
	return a, nil
}

// withDecisions reads the decisions of a.
func withDecisions(ctx context.Context, q Querier, a store.Approval) (store.Approval, error) {
	err := each(ctx, q, func(r Rows) error {
		var d store.Decision
		var v string
		var at int64
		if err := r.Scan(&v, &d.By, &at); err != nil {
			return err
		}
		d.Verdict, d.At = store.ApprovalState(v), norm.Time(at)
		a.Decisions = append(a.Decisions, d)
		return nil
	}, `SELECT verdict, decided_by, decided_at FROM approval_decisions WHERE approval_id = $1 ORDER BY seq`, a.ID)
	if err != nil {
		return store.Approval{}, err
	}
	return a, nil
}

// getApproval reads one approval (by the condition, args from $1) and its
// decisions.
func getApproval(ctx context.Context, q Querier, where string, args ...any) (store.Approval, error) {
	a, err := scanApproval(q.QueryRow(ctx, `SELECT `+approvalCols+` FROM approvals WHERE `+where, args...))
	if err != nil {
		return store.Approval{}, err
	}
	return withDecisions(ctx, q, a)
}

const liveByCall = `scope = $1 AND run_id = $2 AND tool_call_id = $3 AND state IN ` + liveStates

// CreateApproval implements store.ApprovalStore in one transaction: the
// subject's lock row (when bounded), the call's expired approval retired,
// its live one returned, or the pending count checked and the row
// inserted.
func (s *Store) CreateApproval(ctx context.Context, a store.Approval, maxPending int) (store.Approval, bool, error) {
	a, err := norm.Approval(a, maxPending, s.now())
	if err != nil {
		return store.Approval{}, false, err
	}
	nowMS := norm.MS(a.CreatedAt) // expiry and the bound are judged when it is asked
	var out store.Approval
	var created bool
	err = s.db.InTx(ctx, func(tx Querier) error {
		if maxPending > 0 {
			// Serialises the creators of one subject's approvals (a row
			// lock on PostgreSQL; SQLite's write transaction already is).
			if _, err := tx.Exec(ctx, `INSERT INTO approval_owners (owner) VALUES ($1)
ON CONFLICT (owner) DO UPDATE SET owner = excluded.owner`, a.Owner); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE approvals SET state = 'expired' WHERE `+liveByCall+` AND expires_at <> 0 AND expires_at <= $4`,
			a.Scope, a.RunID, a.ToolCallID, nowMS); err != nil {
			return err
		}
		live, err := getApproval(ctx, tx, liveByCall, a.Scope, a.RunID, a.ToolCallID)
		if err == nil {
			out, created = live, false
			return nil
		}
		if !errors.Is(err, ErrNoRows) {
			return err
		}
		if maxPending > 0 {
			var n, next int64
			if err := tx.QueryRow(ctx, `SELECT COUNT(*), COALESCE(MIN(CASE WHEN expires_at = 0 THEN NULL ELSE expires_at END), 0)
FROM approvals WHERE owner = $1 AND state = 'pending' AND `+notExpired(2), a.Owner, nowMS).Scan(&n, &next); err != nil {
				return err
			}
			if n >= int64(maxPending) {
				return norm.TooManyPending(a.Owner, maxPending, next)
			}
		}
		n, err := tx.Exec(ctx, `INSERT INTO approvals (`+approvalCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
ON CONFLICT DO NOTHING`,
			a.ID, a.Scope, a.RunID, a.ToolCallID, a.Server, a.Tool, a.ArgsFingerprint, a.Args, a.CallerKey, a.Reason, a.Owner,
			string(a.State), norm.MS(a.CreatedAt), norm.MS(a.ExpiresAt), int64(0), "", int64(0), a.Contract)
		if err != nil {
			return err
		}
		if n == 1 {
			out, created = a, true
			return nil
		}
		// Another process created the call's live approval since the read
		// above, or the ID is taken.
		live, err = getApproval(ctx, tx, liveByCall, a.Scope, a.RunID, a.ToolCallID)
		if errors.Is(err, ErrNoRows) {
			return fmt.Errorf("%w: approval ID %q is already used", store.ErrConflict, a.ID)
		}
		out, created = live, false
		return err
	})
	if err != nil {
		if errors.Is(err, store.ErrTooManyPending) || errors.Is(err, store.ErrConflict) {
			return store.Approval{}, false, err
		}
		return store.Approval{}, false, fmt.Errorf("store: create approval %q: %w", a.ID, err)
	}
	return out, created, nil
}

// GetApproval implements store.ApprovalStore.
func (s *Store) GetApproval(ctx context.Context, id string) (store.Approval, error) {
	a, err := getApproval(ctx, s.db, `id = $1`, id)
	if errors.Is(err, ErrNoRows) {
		return store.Approval{}, norm.NotFound("approval %q", id)
	}
	if err != nil {
		return store.Approval{}, fmt.Errorf("store: get approval %q: %w", id, err)
	}
	return a, nil
}

// GetApprovalByCall implements store.ApprovalStore.
func (s *Store) GetApprovalByCall(ctx context.Context, key store.RecordKey) (store.Approval, error) {
	a, err := getApproval(ctx, s.db, liveByCall, key.Scope, key.RunID, key.ToolCallID)
	if errors.Is(err, ErrNoRows) {
		return store.Approval{}, norm.NotFound("approval for %s", keyString(key))
	}
	if err != nil {
		return store.Approval{}, fmt.Errorf("store: get approval for %s: %w", keyString(key), err)
	}
	return a, nil
}

// ListApprovals implements store.ApprovalStore: the approvals, then their
// decisions in one more query.
func (s *Store) ListApprovals(ctx context.Context, state store.ApprovalState) ([]store.Approval, error) {
	if err := norm.ApprovalFilter(state); err != nil {
		return nil, err
	}
	where := ``
	var args []any
	if state != "" {
		where = ` WHERE a.state = $1`
		args = append(args, string(state))
	}
	out, err := s.listApprovals(ctx, `SELECT `+prefixed("a.", approvalCols)+` FROM approvals a`+where+` ORDER BY a.created_at, a.id`, args)
	if err != nil {
		return nil, fmt.Errorf("store: list approvals: %w", err)
	}
	if len(out) == 0 {
		return out, nil
	}
	idx := make(map[string]int, len(out))
	for i, a := range out {
		idx[a.ID] = i
	}
	err = each(ctx, s.db, func(r Rows) error {
		var id, v string
		var d store.Decision
		var at int64
		if err := r.Scan(&id, &v, &d.By, &at); err != nil {
			return err
		}
		if i, ok := idx[id]; ok { // an approval created between the two reads is not listed
			d.Verdict, d.At = store.ApprovalState(v), norm.Time(at)
			out[i].Decisions = append(out[i].Decisions, d)
		}
		return nil
	}, `SELECT d.approval_id, d.verdict, d.decided_by, d.decided_at FROM approval_decisions d
JOIN approvals a ON a.id = d.approval_id`+where+` ORDER BY d.approval_id, d.seq`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list approval decisions: %w", err)
	}
	return out, nil
}

func (s *Store) listApprovals(ctx context.Context, q string, args []any) ([]store.Approval, error) {
	out, err := collect(ctx, s.db, scanApproval, q, args...)
	if len(out) == 0 {
		return nil, err // as before: no approvals is a nil slice
	}
	return out, err
}

// prefixed qualifies each column of a comma-separated list.
func prefixed(p, cols string) string { return p + strings.ReplaceAll(cols, ", ", ", "+p) }

// DecideApproval implements store.ApprovalStore: a conditional UPDATE ...
// RETURNING and the decision's row, in one transaction.
func (s *Store) DecideApproval(ctx context.Context, id string, approve bool, by string, now time.Time) (store.Approval, error) {
	if err := norm.Decider(by); err != nil {
		return store.Approval{}, err
	}
	if now.IsZero() {
		now = s.now()
	}
	nowMS := norm.MS(now)
	verdict := string(norm.Decided(approve))
	var out store.Approval
	err := s.db.InTx(ctx, func(tx Querier) error {
		a, err := scanApproval(tx.QueryRow(ctx, `UPDATE approvals SET state = $2, decided_at = $3, decided_by = $4
WHERE id = $1 AND state = 'pending' AND `+notExpired(3)+` RETURNING `+approvalCols, id, verdict, nowMS, by))
		if errors.Is(err, ErrNoRows) {
			cur, gerr := getApproval(ctx, tx, `id = $1`, id)
			if errors.Is(gerr, ErrNoRows) {
				return norm.NotFound("approval %q", id)
			}
			if gerr != nil {
				return gerr
			}
			return norm.WhyNotDecided(cur, norm.Time(nowMS))
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO approval_decisions (approval_id, seq, verdict, decided_by, decided_at)
VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM approval_decisions WHERE approval_id = $1), $2, $3, $4)`, id, verdict, by, nowMS); err != nil {
			return err
		}
		out, err = withDecisions(ctx, tx, a)
		return err
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrExpired) || errors.Is(err, store.ErrAlreadyDecided) {
			return store.Approval{}, err
		}
		return store.Approval{}, fmt.Errorf("store: decide approval %q: %w", id, err)
	}
	return out, nil
}

// UseApproval implements store.ApprovalStore: one compare-and-swap UPDATE.
func (s *Store) UseApproval(ctx context.Context, id string, now time.Time) (store.Approval, error) {
	if now.IsZero() {
		now = s.now()
	}
	nowMS := norm.MS(now)
	a, err := scanApproval(s.db.QueryRow(ctx, `UPDATE approvals SET state = 'used', used_at = $2
WHERE id = $1 AND state = 'approved' AND `+notExpired(2)+` RETURNING `+approvalCols, id, nowMS))
	if errors.Is(err, ErrNoRows) {
		cur, gerr := s.GetApproval(ctx, id)
		if gerr != nil {
			return store.Approval{}, gerr
		}
		return store.Approval{}, norm.WhyNotUsed(cur, norm.Time(nowMS))
	}
	if err != nil {
		return store.Approval{}, fmt.Errorf("store: use approval %q: %w", id, err)
	}
	a, err = withDecisions(ctx, s.db, a)
	if err != nil {
		return store.Approval{}, fmt.Errorf("store: use approval %q: %w", id, err)
	}
	return a, nil
}

// SupersedeApproval implements store.ApprovalStore: one compare-and-swap
// UPDATE (a read to tell an absent approval from one that did not move).
func (s *Store) SupersedeApproval(ctx context.Context, id, contract string) (bool, error) {
	n, err := s.db.Exec(ctx, `UPDATE approvals SET state = 'expired' WHERE id = $1 AND state IN `+liveStates+` AND contract <> $2`, id, contract)
	if err != nil {
		return false, fmt.Errorf("store: supersede approval %q: %w", id, err)
	}
	if n == 1 {
		return true, nil
	}
	if _, err := s.GetApproval(ctx, id); err != nil {
		return false, err
	}
	return false, nil
}

// SweepApprovals implements store.ApprovalStore. Decisions go with their
// approval (ON DELETE CASCADE); a subject's lock row goes with its last
// approval.
func (s *Store) SweepApprovals(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := s.db.InTx(ctx, func(tx Querier) error {
		var err error
		n, err = tx.Exec(ctx, `DELETE FROM approvals WHERE expires_at <> 0 AND expires_at <= $1`, norm.MS(now))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM approval_owners WHERE NOT EXISTS (SELECT 1 FROM approvals a WHERE a.owner = approval_owners.owner)`)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: sweep approvals: %w", err)
	}
	return n, nil
}
