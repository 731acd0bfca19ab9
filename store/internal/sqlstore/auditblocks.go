package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/auditblock"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
)

// The audit trail in blocks (Options.AuditBlocks: SQLite's schema since
// migration 14). A row of audit_blocks holds a run of one chain's entries,
// encoded by package auditblock: what one append of the audit writer's
// batch, or one group commit's entries of a chain, inserts, up to
// maxAuditBlock entries. The row says the chain, the first and last Seq,
// the last entry's hash (the head, without decoding) and, as its row ID,
// the first entry's ID: the entries' IDs are that one and those that
// follow it, and the next block's ID is one more than the last entry's.
// IDs are never given twice: the greatest is always in the block that
// holds a chain's head, which nothing deletes (TruncateAudit keeps every
// chain's head).
//
// What an entry's own row cost (its 14 bound values, its insert into the
// table and into the (chain, seq) index: 5.7–7.6 µs of CPU an entry on
// SQLite in batches of 64 to 256, against 1.9–3.0 µs in a block) a block
// pays once. A chain's head is one lookup in the (chain,
// first_seq) index; the unique index also refuses a second block after the
// same head (another writer of the chain: ErrConflict), as each append
// starts its block at the head it read, always a block's end. Readers
// decode the blocks they touch: a chain's range from the block that holds
// its first Seq, ListAudit's page by ID, the straddled block of a
// truncation (re-encoded from the cut).

// maxAuditBlock is the most entries one block holds (the audit writer's
// batch is cut into blocks of at most this many). list finds the block that
// holds an ID by this bound, so it may grow but never shrink: blocks
// written before would be longer than the bound and list would skip their
// first entries (TestMaxAuditBlockNeverShrinks).
const maxAuditBlock = 256

// auditBlocks implements the trail's statements for the block layout.
type auditBlocks struct{}

const blocksLastQuery = `SELECT last_seq, last_hash FROM audit_blocks WHERE chain = $1 ORDER BY first_seq DESC LIMIT 1`

func (auditBlocks) last(ctx context.Context, q Querier, chain string) (store.AuditHead, error) {
	h := store.AuditHead{Chain: chain}
	err := q.QueryRow(ctx, blocksLastQuery, chain).Scan(&h.Last, &h.Hash)
	if errors.Is(err, ErrNoRows) {
		return h, nil
	}
	return h, err
}

func (auditBlocks) chunk(n int) int { return min(n, maxAuditBlock) }

const blocksInsert = `INSERT INTO audit_blocks (id, chain, first_seq, last_seq, last_hash, data)
VALUES (COALESCE((SELECT id + last_seq - first_seq + 1 FROM audit_blocks ORDER BY id DESC LIMIT 1), 1), $1, $2, $3, $4, $5)
ON CONFLICT (chain, first_seq) DO NOTHING`

// insert writes es (one chain's run, linked) as one block and fills in
// ids. A block after the same head already there is ErrConflict.
func (auditBlocks) insert(ctx context.Context, tx Querier, es []store.AuditEntry, ids []int64, head store.AuditHead) error {
	if len(es) == 0 || len(es) > maxAuditBlock {
		return fmt.Errorf("store: an audit block holds 1 to %d entries, not %d", maxAuditBlock, len(es))
	}
	last := es[len(es)-1]
	data := auditblock.Append(make([]byte, 0, 128*len(es)), es)
	in, ok := tx.(Inserter)
	if !ok {
		// SQLite's adapter is one; the row's ID is the insert's row ID.
		return errors.New("store: the audit trail's blocks are written through an Inserter")
	}
	n, first, err := in.Insert(ctx, blocksInsert, last.Chain, es[0].Seq, last.Seq, last.Hash, data)
	if err != nil {
		return err
	}
	if n != 1 {
		return norm.AuditAppendConflict(es[0], head)
	}
	for i := range ids {
		ids[i] = first + int64(i)
	}
	return nil
}

// blockRow is a row of audit_blocks, decoded on demand.
type blockRow struct {
	h    auditblock.Header
	data []byte
}

const blockCols = `id, chain, first_seq, last_seq, data`

func scanBlock(r Row) (blockRow, error) {
	var b blockRow
	err := r.Scan(&b.h.ID, &b.h.Chain, &b.h.FirstSeq, &b.h.LastSeq, &b.data)
	return b, err
}

func (b blockRow) entries() ([]store.AuditEntry, error) {
	return auditblock.Decode(b.data, b.h)
}

func (auditBlocks) head(ctx context.Context, q Querier, chain string) (store.AuditHead, error) {
	h := store.AuditHead{Chain: chain}
	if err := q.QueryRow(ctx, `SELECT COALESCE(MIN(first_seq), 0), COALESCE(MAX(last_seq), 0), COALESCE(SUM(last_seq - first_seq + 1), 0) FROM audit_blocks WHERE chain = $1`, chain).
		Scan(&h.First, &h.Last, &h.Entries); err != nil {
		return store.AuditHead{}, err
	}
	if h.Last == 0 {
		return h, nil
	}
	l, err := auditBlocks{}.last(ctx, q, chain)
	if err != nil {
		return store.AuditHead{}, err
	}
	h.Hash = l.Hash
	return h, nil
}

func (auditBlocks) heads(ctx context.Context, q Querier) ([]store.AuditHead, error) {
	out, err := collect(ctx, q, func(r Row) (store.AuditHead, error) {
		var h store.AuditHead
		err := r.Scan(&h.Chain, &h.First, &h.Last, &h.Entries)
		return h, err
	}, `SELECT chain, MIN(first_seq), MAX(last_seq), SUM(last_seq - first_seq + 1) FROM audit_blocks GROUP BY chain ORDER BY chain`)
	if err != nil {
		return nil, err
	}
	for i := range out { // the rows are closed: one statement at a time
		l, err := auditBlocks{}.last(ctx, q, out[i].Chain)
		if err != nil {
			return nil, err
		}
		out[i].Hash = l.Hash
	}
	return out, nil
}

// readChain returns up to limit (0: all) entries of chain after afterSeq:
// from the block that holds afterSeq+1 on.
func (auditBlocks) readChain(ctx context.Context, q Querier, chain string, afterSeq int64, limit int) ([]store.AuditEntry, error) {
	query := `SELECT ` + blockCols + ` FROM audit_blocks WHERE chain = $1 AND first_seq >= COALESCE(
(SELECT first_seq FROM audit_blocks WHERE chain = $1 AND first_seq <= $2 ORDER BY first_seq DESC LIMIT 1), 0) AND last_seq > $3 ORDER BY first_seq`
	args := []any{chain, afterSeq + 1, afterSeq}
	out := []store.AuditEntry{}
	for {
		q2 := query + ` LIMIT 64`
		blocks, err := collect(ctx, q, scanBlock, q2, args...)
		if err != nil {
			return nil, err
		}
		var full bool
		out, full, err = takeEntries(out, blocks, limit, func(e store.AuditEntry) bool { return e.Seq > afterSeq })
		if err != nil || full {
			return out, err
		}
		if len(blocks) < 64 {
			return out, nil
		}
		// The next page: after the last block read.
		lastSeq := blocks[len(blocks)-1].h.LastSeq
		args = []any{chain, lastSeq + 1, lastSeq}
	}
}

// list returns the entries f selects in ID order, reading blocks by ID a
// page at a time and filtering their entries.
func (auditBlocks) list(ctx context.Context, q Querier, f store.AuditFilter) ([]store.AuditEntry, error) {
	out := []store.AuditEntry{}
	after := f.AfterID
	for {
		// A block whose last entry's ID is above after; blocks hold at
		// most maxAuditBlock entries, so its first ID is above
		// after-maxAuditBlock (a range of the row IDs).
		query := `SELECT ` + blockCols + ` FROM audit_blocks WHERE id > $1 AND id + last_seq - first_seq > $2`
		args := []any{after - maxAuditBlock, after}
		if f.Chain != "" {
			query += ` AND chain = $3`
			args = append(args, f.Chain)
		}
		blocks, err := collect(ctx, q, scanBlock, query+` ORDER BY id LIMIT 64`, args...)
		if err != nil {
			return nil, err
		}
		var full bool
		out, full, err = takeEntries(out, blocks, f.Limit, func(e store.AuditEntry) bool { return e.ID > f.AfterID && auditSelects(f, e) })
		if err != nil || full {
			return out, err
		}
		if len(blocks) < 64 {
			return out, nil
		}
		last := blocks[len(blocks)-1].h
		after = last.ID + last.Len() - 1
	}
}

// takeEntries appends to out the entries of blocks that keep selects, in
// order, until out holds limit (0: no limit); full reports that it does.
func takeEntries(out []store.AuditEntry, blocks []blockRow, limit int, keep func(store.AuditEntry) bool) (_ []store.AuditEntry, full bool, _ error) {
	for _, b := range blocks {
		es, err := b.entries()
		if err != nil {
			return nil, false, err
		}
		for _, e := range es {
			if !keep(e) {
				continue
			}
			out = append(out, e)
			if limit > 0 && len(out) == limit {
				return out, true, nil
			}
		}
	}
	return out, false, nil
}

// auditSelects reports whether f's Subject, Kind, Since and Until select
// e.
func auditSelects(f store.AuditFilter, e store.AuditEntry) bool {
	at := norm.MS(e.At)
	return (f.Subject == "" || e.Subject == f.Subject) && (f.Kind == "" || e.Kind == f.Kind) &&
		(f.Since.IsZero() || at >= norm.MS(f.Since)) && (f.Until.IsZero() || at < norm.MS(f.Until))
}

// hashAt returns the hash of entry seq of chain (ErrNoRows without it).
func (auditBlocks) hashAt(ctx context.Context, q Querier, chain string, seq int64) (string, error) {
	var b blockRow
	var lastHash string
	err := q.QueryRow(ctx, `SELECT `+blockCols+`, last_hash FROM audit_blocks WHERE chain = $1 AND first_seq <= $2 ORDER BY first_seq DESC LIMIT 1`, chain, seq).
		Scan(&b.h.ID, &b.h.Chain, &b.h.FirstSeq, &b.h.LastSeq, &b.data, &lastHash)
	if err != nil {
		return "", err
	}
	switch {
	case seq > b.h.LastSeq:
		return "", ErrNoRows
	case seq == b.h.LastSeq:
		return lastHash, nil
	}
	es, err := b.entries()
	if err != nil {
		return "", err
	}
	return es[seq-b.h.FirstSeq].Hash, nil
}

// truncate deletes chain's entries below before in tx and returns how
// many: the blocks that end below it, and the front of the block that
// holds it (re-encoded from before on; its ID moves with its first entry).
func (auditBlocks) truncate(ctx context.Context, tx Querier, chain string, before int64) (int64, error) {
	var n int64
	if err := tx.QueryRow(ctx, `SELECT COALESCE(SUM(last_seq - first_seq + 1), 0) FROM audit_blocks WHERE chain = $1 AND last_seq < $2`, chain, before).Scan(&n); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM audit_blocks WHERE chain = $1 AND last_seq < $2`, chain, before); err != nil {
		return 0, err
	}
	b, err := scanBlock(tx.QueryRow(ctx, `SELECT `+blockCols+` FROM audit_blocks WHERE chain = $1 AND first_seq < $2 AND last_seq >= $2`, chain, before))
	if errors.Is(err, ErrNoRows) {
		return n, nil
	}
	if err != nil {
		return 0, err
	}
	es, err := b.entries()
	if err != nil {
		return 0, err
	}
	cut := before - b.h.FirstSeq
	data := auditblock.Append(nil, es[cut:])
	if _, err := tx.Exec(ctx, `UPDATE audit_blocks SET id = $1, first_seq = $2, data = $3 WHERE id = $4`, b.h.ID+cut, before, data, b.h.ID); err != nil {
		return 0, err
	}
	return n + cut, nil
}
