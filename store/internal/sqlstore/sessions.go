package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
)

var _ store.SessionStore = (*Store)(nil)

// PutSession implements store.SessionStore: one upsert that leaves a
// closed row as it is.
func (s *Store) PutSession(ctx context.Context, sess store.Session) error {
	sess, err := norm.Session(sess)
	if err != nil {
		return err
	}
	n, err := s.db.Exec(ctx, `INSERT INTO sessions (id_hash, subject, user_id, state, expires_at, closed) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (id_hash) DO UPDATE SET subject = excluded.subject, user_id = excluded.user_id, state = excluded.state, expires_at = excluded.expires_at
WHERE sessions.closed = $6`, norm.FlowKey(sess.ID), sess.Subject, sess.UserID, sess.State, norm.MS(sess.ExpiresAt), false)
	if err != nil {
		return fmt.Errorf("store: put session: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("%w: the session is closed", store.ErrConflict)
	}
	return nil
}

// Session implements store.SessionStore.
func (s *Store) Session(ctx context.Context, id string, now time.Time) (store.Session, bool, error) {
	if id == "" {
		return store.Session{}, false, nil
	}
	sess := store.Session{ID: id}
	var exp int64
	err := s.db.QueryRow(ctx, `SELECT subject, user_id, state, expires_at, closed FROM sessions WHERE id_hash = $1`,
		norm.FlowKey(id)).Scan(&sess.Subject, &sess.UserID, &sess.State, &exp, &sess.Closed)
	if errors.Is(err, ErrNoRows) {
		return store.Session{}, false, nil
	}
	if err != nil {
		return store.Session{}, false, fmt.Errorf("store: read session: %w", err)
	}
	if norm.Expired(exp, norm.MS(now)) {
		return store.Session{}, false, nil
	}
	sess.ExpiresAt, sess.State = norm.Time(exp), norm.Bytes(sess.State)
	return sess, true, nil
}

// TouchSession implements store.SessionStore.
func (s *Store) TouchSession(ctx context.Context, id string, now, until time.Time) (bool, error) {
	if id == "" {
		return false, nil
	}
	n, err := s.db.Exec(ctx, `UPDATE sessions SET expires_at = CASE WHEN expires_at < $1 THEN $1 ELSE expires_at END
WHERE id_hash = $2 AND closed = $3 AND expires_at > $4`, norm.MS(until), norm.FlowKey(id), false, norm.MS(now))
	if err != nil {
		return false, fmt.Errorf("store: touch session: %w", err)
	}
	return n > 0, nil
}

// SwapSession implements store.SessionStore: one UPDATE that matches the
// State read (NULL for none).
func (s *Store) SwapSession(ctx context.Context, id string, old, state []byte, now time.Time) (bool, error) {
	if id == "" {
		return false, nil
	}
	old, state = norm.Bytes(old), norm.Bytes(state)
	n, err := s.db.Exec(ctx, `UPDATE sessions SET state = $1
WHERE id_hash = $2 AND closed = $3 AND expires_at > $4 AND (state = $5 OR (state IS NULL AND $6))`,
		state, norm.FlowKey(id), false, norm.MS(now), old, old == nil)
	if err != nil {
		return false, fmt.Errorf("store: swap session state: %w", err)
	}
	return n > 0, nil
}

// CloseSession implements store.SessionStore.
func (s *Store) CloseSession(ctx context.Context, id string, now time.Time) (bool, error) {
	if id == "" {
		return false, nil
	}
	n, err := s.db.Exec(ctx, `UPDATE sessions SET closed = $1 WHERE id_hash = $2 AND closed = $3 AND expires_at > $4`,
		true, norm.FlowKey(id), false, norm.MS(now))
	if err != nil {
		return false, fmt.Errorf("store: close session: %w", err)
	}
	return n > 0, nil
}

// CountSessions implements store.SessionStore.
func (s *Store) CountSessions(ctx context.Context, subject string, now time.Time) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, `SELECT COUNT(*) FROM sessions WHERE subject = $1 AND expires_at > $2 AND closed = $3`,
		subject, norm.MS(now), false).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: count sessions: %w", err)
	}
	return n, nil
}

// SweepSessions implements store.SessionStore.
func (s *Store) SweepSessions(ctx context.Context, now time.Time) (int64, error) {
	n, err := s.db.Exec(ctx, `DELETE FROM sessions WHERE expires_at <= $1`, norm.MS(now))
	if err != nil {
		return 0, fmt.Errorf("store: sweep sessions: %w", err)
	}
	return n, nil
}
