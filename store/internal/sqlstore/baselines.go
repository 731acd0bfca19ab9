package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
)

// lockServer is the first statement of a transaction that writes a
// server's baseline or observations: it checks that the row exists, locks
// it (PostgreSQL: a row lock held to the commit, so the writers of one
// server queue; SQLite's write transaction already serialises them), adds
// bump to its baseline version and returns the version.
func lockServer(ctx context.Context, tx Querier, serverID string, bump int64) (int64, error) {
	var v int64
	err := tx.QueryRow(ctx, `UPDATE servers SET baseline_version = baseline_version + $2 WHERE id = $1 RETURNING baseline_version`,
		serverID, bump).Scan(&v)
	if errors.Is(err, ErrNoRows) {
		return 0, norm.NotFound("server %q", serverID)
	}
	return v, err
}

// entriesPerInsert bounds the rows of one INSERT (4 parameters each, far
// below either engine's limit on parameters).
const entriesPerInsert = 200

// insertEntries inserts entries into the server's baseline, skipping keys
// it has when skipExisting is set, and returns how many rows it inserted.
func insertEntries(ctx context.Context, tx Querier, serverID string, entries store.Baseline, nowMS int64, skipExisting bool) (int64, error) {
	var added int64
	args := []any{serverID, nowMS}
	var values []string
	flush := func() error {
		if len(values) == 0 {
			return nil
		}
		q := `INSERT INTO baselines (server_id, kind, name, value, contract, created_at) VALUES ` + strings.Join(values, ", ")
		if skipExisting {
			q += ` ON CONFLICT (server_id, kind, name) DO NOTHING`
		}
		n, err := tx.Exec(ctx, q, args...)
		added += n
		args, values = args[:2], values[:0]
		return err
	}
	for k, e := range entries {
		n := len(args)
		values = append(values, fmt.Sprintf("($1, $%d, $%d, $%d, $%d, $2)", n+1, n+2, n+3, n+4))
		args = append(args, string(k.Kind), k.Name, e.Value, norm.Bytes(e.Contract))
		if len(values) == entriesPerInsert {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	if err := flush(); err != nil {
		return 0, err
	}
	return added, nil
}

// SaveBaseline implements store.ServerStore: one transaction that locks
// the server row, inserts the entries with ON CONFLICT DO NOTHING (an
// existing entry is never replaced) and bumps the version when any was
// added.
func (s *Store) SaveBaseline(ctx context.Context, serverID string, entries store.Baseline) (int, error) {
	if err := entries.Validate(); err != nil {
		return 0, err
	}
	var added int64
	err := s.db.InTx(ctx, func(tx Querier) error {
		if _, err := lockServer(ctx, tx, serverID, 0); err != nil {
			return err
		}
		var err error
		if added, err = insertEntries(ctx, tx, serverID, entries, s.nowMS(), true); err != nil {
			return err
		}
		if added > 0 {
			_, err = lockServer(ctx, tx, serverID, 1)
		}
		return err
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return 0, err
		}
		return 0, fmt.Errorf("store: save baseline of %q: %w", serverID, err)
	}
	return int(added), nil
}

// GetBaseline implements store.ServerStore.
func (s *Store) GetBaseline(ctx context.Context, serverID string) (store.Baseline, error) {
	found := false
	out := store.Baseline{}
	err := each(ctx, s.db, func(r Rows) error {
		found = true
		var kind, name, value *string
		var contract []byte
		if err := r.Scan(&kind, &name, &value, &contract); err != nil {
			return err
		}
		if kind == nil || name == nil || value == nil {
			return nil // the server has no entry (LEFT JOIN)
		}
		k := store.BaselineKey{Kind: store.BaselineKind(*kind), Name: *name}
		if !k.Kind.Valid() {
			return fmt.Errorf("entry %q has the kind %q, which this build does not know", *name, *kind)
		}
		out[k] = store.BaselineEntry{Value: *value, Contract: norm.Bytes(contract)}
		return nil
	}, `SELECT b.kind, b.name, b.value, b.contract FROM servers s LEFT JOIN baselines b ON b.server_id = s.id WHERE s.id = $1`, serverID)
	if err != nil {
		return nil, fmt.Errorf("store: get baseline of %q: %w", serverID, err)
	}
	if !found {
		return nil, norm.NotFound("server %q", serverID)
	}
	return out, nil
}

// ClearBaseline implements store.ServerStore.
func (s *Store) ClearBaseline(ctx context.Context, serverID string) (int64, error) {
	var removed int64
	err := s.db.InTx(ctx, func(tx Querier) error {
		if _, err := lockServer(ctx, tx, serverID, 1); err != nil {
			return err
		}
		var err error
		removed, err = tx.Exec(ctx, `DELETE FROM baselines WHERE server_id = $1`, serverID)
		return err
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return 0, err
		}
		return 0, fmt.Errorf("store: clear baseline of %q: %w", serverID, err)
	}
	return removed, nil
}

// replaceEntries makes entries the server's whole baseline inside tx (the
// server row already locked) and returns how many entries it removed.
func replaceEntries(ctx context.Context, tx Querier, serverID string, entries store.Baseline, nowMS int64) (int64, error) {
	removed, err := tx.Exec(ctx, `DELETE FROM baselines WHERE server_id = $1`, serverID)
	if err != nil {
		return 0, err
	}
	if _, err := insertEntries(ctx, tx, serverID, entries, nowMS, false); err != nil {
		return 0, err
	}
	return removed, nil
}

// ReplaceBaseline implements store.ServerStore: one transaction that locks
// the server row and bumps its version, deletes the baseline and inserts
// entries. No other transaction sees the baseline empty.
func (s *Store) ReplaceBaseline(ctx context.Context, serverID string, entries store.Baseline) (int64, error) {
	if err := entries.Validate(); err != nil {
		return 0, err
	}
	var removed int64
	err := s.db.InTx(ctx, func(tx Querier) error {
		if _, err := lockServer(ctx, tx, serverID, 1); err != nil {
			return err
		}
		var err error
		removed, err = replaceEntries(ctx, tx, serverID, entries, s.nowMS())
		return err
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return 0, err
		}
		return 0, fmt.Errorf("store: replace baseline of %q: %w", serverID, err)
	}
	return removed, nil
}
