package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
)

// observationCols are the columns scanObservation reads, entries last and
// only when asked for.
const observationCols = `o.id, o.server_id, o.listing, o.baseline_version, o.seen_by, o.seen_at, o.last_seen_at, o.changes, o.drifted, o.trusted_at`

func observationColumns(entries bool) string {
	if entries {
		return observationCols + `, o.entries`
	}
	return observationCols
}

func scanObservation(r Row, entries bool) (store.Observation, error) {
	var o store.Observation
	var seen, last, trusted int64
	var changes, blob []byte
	dest := []any{&o.ID, &o.ServerID, &o.Listing, &o.BaselineVersion, &o.SeenBy, &seen, &last, &changes, &o.Drifted, &trusted}
	if entries {
		dest = append(dest, &blob)
	}
	if err := r.Scan(dest...); err != nil {
		return store.Observation{}, err
	}
	o.SeenAt, o.LastSeenAt, o.TrustedAt = norm.Time(seen), norm.Time(last), norm.Time(trusted)
	o.Changes = norm.Bytes(changes)
	if entries {
		b, err := DecodeEntries(blob)
		if err != nil {
			return store.Observation{}, fmt.Errorf("observation %d of server %q: %w", o.ID, o.ServerID, err)
		}
		o.Entries = b
	}
	return o, nil
}

// openIDs selects the IDs of the latest observation of each instance
// under its server's current baseline version (of the server $1 when
// oneServer), trusted or not: one index range per server
// (observations_instance), whatever the history of older versions.
func openIDs(oneServer bool) string {
	q := `SELECT MAX(o2.id) FROM servers s2 JOIN observations o2 ON o2.server_id = s2.id AND o2.baseline_version = s2.baseline_version`
	if oneServer {
		q += ` WHERE s2.id = $1`
	}
	return q + ` GROUP BY o2.server_id, o2.seen_by`
}

// openObservations selects the open observations (their columns with
// entries when asked for): the latest of each instance under the current
// version, unless trusted, by ascending ID.
func openObservations(oneServer, entries bool) string {
	return `SELECT ` + observationColumns(entries) + ` FROM observations o WHERE o.trusted_at = 0 AND o.id IN (` + openIDs(oneServer) + `) ORDER BY o.id`
}

// ObserveListing implements store.DriftStore in one transaction: the
// server row locked, the instance's latest observation under the version
// read, then either its last_seen_at moved or a row inserted.
func (s *Store) ObserveListing(ctx context.Context, o store.Observation) (store.Observation, bool, error) {
	o, err := norm.Observation(o, s.now())
	if err != nil {
		return store.Observation{}, false, err
	}
	entries, err := EncodeEntries(o.Entries)
	if err != nil {
		return store.Observation{}, false, err
	}
	var out store.Observation
	var added bool
	err = s.db.InTx(ctx, func(tx Querier) error {
		if _, err := lockServer(ctx, tx, o.ServerID, 0); err != nil {
			return err
		}
		var id, last int64
		var listing string
		err := tx.QueryRow(ctx, `SELECT id, listing, last_seen_at FROM observations
WHERE server_id = $1 AND seen_by = $2 AND baseline_version = $3 ORDER BY id DESC LIMIT 1`,
			o.ServerID, o.SeenBy, o.BaselineVersion).Scan(&id, &listing, &last)
		switch {
		case err == nil && listing == o.Listing:
			if seen := norm.MS(o.SeenAt); seen > last {
				if _, err := tx.Exec(ctx, `UPDATE observations SET last_seen_at = $2 WHERE id = $1`, id, seen); err != nil {
					return err
				}
			}
			out, err = scanObservation(tx.QueryRow(ctx, `SELECT `+observationColumns(true)+` FROM observations o WHERE o.id = $1`, id), true)
			added = false
			return err
		case err != nil && !errors.Is(err, ErrNoRows):
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO observations
 (server_id, listing, baseline_version, seen_by, seen_at, last_seen_at, entries, changes, drifted, trusted_at)
 VALUES ($1, $2, $3, $4, $5, $5, $6, $7, $8, 0) RETURNING id`,
			o.ServerID, o.Listing, o.BaselineVersion, o.SeenBy, norm.MS(o.SeenAt), entries, o.Changes, o.Drifted).Scan(&o.ID); err != nil {
			return err
		}
		out, added = o, true
		return nil
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return store.Observation{}, false, err
		}
		return store.Observation{}, false, fmt.Errorf("store: observe listing of %q: %w", o.ServerID, err)
	}
	return out, added, nil
}

// OpenObservations implements store.DriftStore in one query.
func (s *Store) OpenObservations(ctx context.Context, serverID string, entries bool) ([]store.Observation, error) {
	var args []any
	if serverID != "" {
		args = append(args, serverID)
	}
	// The rows are closed before BaselineVersion asks for a connection of
	// its own (see rows.go: holding them meanwhile was the start-up hang).
	out, err := collect(ctx, s.db, func(r Row) (store.Observation, error) { return scanObservation(r, entries) },
		openObservations(serverID != "", entries), args...)
	if err != nil {
		return nil, fmt.Errorf("store: open observations: %w", err)
	}
	if len(out) == 0 && serverID != "" {
		if _, err := s.BaselineVersion(ctx, serverID); err != nil {
			return nil, err // ErrNotFound when there is no such server
		}
	}
	return out, nil
}

// GetObservation implements store.DriftStore.
func (s *Store) GetObservation(ctx context.Context, id int64) (store.Observation, error) {
	o, err := scanObservation(s.db.QueryRow(ctx, `SELECT `+observationColumns(true)+` FROM observations o WHERE o.id = $1`, id), true)
	if errors.Is(err, ErrNoRows) {
		return store.Observation{}, norm.ObservationNotFound(id)
	}
	if err != nil {
		return store.Observation{}, fmt.Errorf("store: get observation %d: %w", id, err)
	}
	return o, nil
}

// TrustListing implements store.DriftStore in one transaction: the server
// row locked (so concurrent trusts of one server queue), its latest open
// observation read and compared, then the baseline replaced, the version
// bumped and the observation marked trusted. A refusal rolls back and
// leaves everything as it was.
func (s *Store) TrustListing(ctx context.Context, serverID, listing string) (store.Observation, error) {
	if err := norm.TrustArgs(serverID, listing); err != nil {
		return store.Observation{}, err
	}
	var out store.Observation
	err := s.db.InTx(ctx, func(tx Querier) error {
		if _, err := lockServer(ctx, tx, serverID, 0); err != nil {
			return err
		}
		latest, err := scanObservation(tx.QueryRow(ctx, openObservations(true, true)+` DESC LIMIT 1`, serverID), true)
		if err != nil && !errors.Is(err, ErrNoRows) {
			return err
		}
		if latest.ID == 0 || latest.Listing != listing {
			return norm.Stale(serverID, listing, latest)
		}
		if _, err := replaceEntries(ctx, tx, serverID, latest.Entries, s.nowMS()); err != nil {
			return err
		}
		if _, err := lockServer(ctx, tx, serverID, 1); err != nil {
			return err
		}
		now := s.nowMS()
		if _, err := tx.Exec(ctx, `UPDATE observations SET trusted_at = $2 WHERE id = $1`, latest.ID, now); err != nil {
			return err
		}
		latest.TrustedAt = norm.Time(now)
		out = latest
		return nil
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrStaleListing) {
			return store.Observation{}, err
		}
		return store.Observation{}, fmt.Errorf("store: trust listing %s of %q: %w", listing, serverID, err)
	}
	return out, nil
}

// DriftHeads implements store.DriftStore in one query (an index seek per
// server for its highest observation).
func (s *Store) DriftHeads(ctx context.Context) ([]store.DriftHead, error) {
	out, err := collect(ctx, s.db, func(r Row) (store.DriftHead, error) {
		var h store.DriftHead
		err := r.Scan(&h.ServerID, &h.BaselineVersion, &h.LastObservation)
		return h, err
	}, `SELECT s.id, s.baseline_version,
 COALESCE((SELECT MAX(o.id) FROM observations o WHERE o.server_id = s.id), 0)
FROM servers s ORDER BY s.id`)
	if err != nil {
		return nil, fmt.Errorf("store: drift heads: %w", err)
	}
	return out, nil
}
