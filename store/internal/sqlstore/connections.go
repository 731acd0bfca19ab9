package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
)

var _ store.ConnectionStore = (*Store)(nil)

const connCols = `server, subject, sealed, key_id, created_at, updated_at, account`

func scanConn(r Row) (store.Connection, error) {
	var c store.Connection
	var created, updated int64
	if err := r.Scan(&c.Server, &c.Subject, &c.Sealed, &c.KeyID, &created, &updated, &c.Account); err != nil {
		return store.Connection{}, err
	}
	c.Sealed = norm.Bytes(c.Sealed)
	c.CreatedAt, c.UpdatedAt = norm.Time(created), norm.Time(updated)
	return c, nil
}

// PutConnection implements store.ConnectionStore.
func (s *Store) PutConnection(ctx context.Context, c store.Connection) error {
	c, err := norm.Connection(c, s.now())
	if err != nil {
		return err
	}
	_, err = s.db.Exec(ctx, `INSERT INTO connections (`+connCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (subject, server) DO UPDATE SET sealed = excluded.sealed, key_id = excluded.key_id, updated_at = excluded.updated_at,
account = CASE WHEN excluded.account = '' THEN connections.account ELSE excluded.account END`,
		c.Server, c.Subject, c.Sealed, c.KeyID, norm.MS(c.CreatedAt), norm.MS(c.UpdatedAt), c.Account)
	if err != nil {
		return fmt.Errorf("store: put connection %s/%q: %w", c.Server, c.Subject, err)
	}
	return nil
}

// SwapConnection implements store.ConnectionStore.
func (s *Store) SwapConnection(ctx context.Context, c store.Connection, old []byte) (bool, error) {
	c, err := norm.Connection(c, s.now())
	if err != nil {
		return false, err
	}
	n, err := s.db.Exec(ctx, `UPDATE connections SET sealed = $3, key_id = $4, updated_at = $5
WHERE subject = $2 AND server = $1 AND sealed = $6`,
		c.Server, c.Subject, c.Sealed, c.KeyID, norm.MS(c.UpdatedAt), old)
	if err != nil {
		return false, fmt.Errorf("store: swap connection %s/%q: %w", c.Server, c.Subject, err)
	}
	return n == 1, nil
}

// Connection implements store.ConnectionStore.
func (s *Store) Connection(ctx context.Context, server, subject string) (store.Connection, bool, error) {
	c, err := scanConn(s.db.QueryRow(ctx, `SELECT `+connCols+` FROM connections WHERE subject = $1 AND server = $2`, subject, server))
	if errors.Is(err, ErrNoRows) {
		return store.Connection{}, false, nil
	}
	if err != nil {
		return store.Connection{}, false, fmt.Errorf("store: get connection %s/%q: %w", server, subject, err)
	}
	return c, true, nil
}

// Connections implements store.ConnectionStore.
func (s *Store) Connections(ctx context.Context, subject string) ([]store.Connection, error) {
	q, args := `SELECT `+connCols+` FROM connections ORDER BY server, subject`, []any{}
	if subject != "" {
		q, args = `SELECT `+connCols+` FROM connections WHERE subject = $1 ORDER BY server, subject`, []any{subject}
	}
	out, err := collect(ctx, s.db, scanConn, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list connections: %w", err)
	}
	return out, nil
}

// DeleteConnections implements store.ConnectionStore.
func (s *Store) DeleteConnections(ctx context.Context, server, subject string) (int, error) {
	where, args := `subject = $1 AND server = $2`, []any{subject, server}
	if server == "" {
		where, args = `subject = $1`, []any{subject}
	}
	var n int64
	err := s.db.InTx(ctx, func(tx Querier) error {
		var err error
		if n, err = tx.Exec(ctx, `DELETE FROM connections WHERE `+where, args...); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM connection_leases WHERE `+where, args...)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: delete connections %s/%q: %w", server, subject, err)
	}
	return int(n), nil
}

// LeaseRefresh implements store.ConnectionStore: one upsert whose update
// happens only when the lease is the holder's or has run out, so two
// replicas racing for it get one row change between them.
func (s *Store) LeaseRefresh(ctx context.Context, server, subject, holder string, until time.Time) (bool, error) {
	if err := norm.Lease(server, holder); err != nil {
		return false, err
	}
	n, err := s.db.Exec(ctx, `INSERT INTO connection_leases (server, subject, holder, lease_until) VALUES ($1, $2, $3, $4)
ON CONFLICT (subject, server) DO UPDATE SET holder = excluded.holder, lease_until = excluded.lease_until
WHERE connection_leases.holder = excluded.holder OR connection_leases.lease_until <= $5`,
		server, subject, holder, norm.MS(until), s.nowMS())
	if err != nil {
		return false, fmt.Errorf("store: refresh lease %s/%q: %w", server, subject, err)
	}
	return n == 1, nil
}

// PutConnectFlow implements store.ConnectionStore.
func (s *Store) PutConnectFlow(ctx context.Context, f store.ConnectFlow) error {
	f, err := norm.ConnectFlow(f)
	if err != nil {
		return err
	}
	n, err := s.db.Exec(ctx, `INSERT INTO connect_flows (id_hash, server, subject, expires_at, sealed) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (id_hash) DO NOTHING`, norm.FlowKey(f.ID), f.Server, f.Subject, norm.MS(f.ExpiresAt), f.Sealed)
	if err != nil {
		return fmt.Errorf("store: put connect flow to %s: %w", f.Server, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: connect flow ID already used", store.ErrConflict)
	}
	return nil
}

// TakeConnectFlow implements store.ConnectionStore: DELETE ... RETURNING,
// so of concurrent takers exactly one gets the row.
func (s *Store) TakeConnectFlow(ctx context.Context, id string, now time.Time) (store.ConnectFlow, bool, error) {
	if id == "" {
		return store.ConnectFlow{}, false, nil
	}
	f := store.ConnectFlow{ID: id}
	var exp int64
	err := s.db.QueryRow(ctx, `DELETE FROM connect_flows WHERE id_hash = $1 RETURNING server, subject, expires_at, sealed`,
		norm.FlowKey(id)).Scan(&f.Server, &f.Subject, &exp, &f.Sealed)
	if errors.Is(err, ErrNoRows) {
		return store.ConnectFlow{}, false, nil
	}
	if err != nil {
		return store.ConnectFlow{}, false, fmt.Errorf("store: take connect flow: %w", err)
	}
	if norm.Expired(exp, norm.MS(now)) {
		return store.ConnectFlow{}, false, nil
	}
	f.ExpiresAt, f.Sealed = norm.Time(exp), norm.Bytes(f.Sealed)
	return f, true, nil
}

// SweepConnectFlows implements store.ConnectionStore.
func (s *Store) SweepConnectFlows(ctx context.Context, now time.Time) (int64, error) {
	n, err := s.db.Exec(ctx, `DELETE FROM connect_flows WHERE expires_at <= $1`, norm.MS(now))
	if err != nil {
		return 0, fmt.Errorf("store: sweep connect flows: %w", err)
	}
	return n, nil
}

// purgeConnections deletes subject's connections, leases, flows and
// sessions in tx; the service subject ("") is never purged.
func purgeConnections(ctx context.Context, tx Querier, subject string) (int64, error) {
	if subject == "" {
		return 0, nil
	}
	var total int64
	for _, t := range []string{"connections", "connection_leases", "connect_flows", "sessions"} {
		n, err := tx.Exec(ctx, `DELETE FROM `+t+` WHERE subject = $1`, subject)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}
