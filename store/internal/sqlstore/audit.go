package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlbatch"
)

const auditCols = `id, chain, seq, at, kind, subject, server, tool, args_digest, outcome, duration_us, instance, prev_hash, hash, detail`

func scanAudit(r Row) (store.AuditEntry, error) {
	var e store.AuditEntry
	var at, us int64
	var detail []byte
	if err := r.Scan(&e.ID, &e.Chain, &e.Seq, &at, &e.Kind, &e.Subject, &e.Server, &e.Tool, &e.ArgsDigest, &e.Outcome,
		&us, &e.Instance, &e.PrevHash, &e.Hash, &detail); err != nil {
		return store.AuditEntry{}, err
	}
	e.At = norm.Time(at)
	e.Duration = norm.Micros(us)
	e.Detail = norm.Bytes(detail)
	return e, nil
}

// auditLayout is how the trail is kept: a row an entry in audit_log
// (auditRows, PostgreSQL) or a row a run of entries in audit_blocks
// (auditBlocks, SQLite since migration 14: auditblocks.go).
type auditLayout interface {
	// last reads chain's last Seq and hash (0 and "" for none).
	last(ctx context.Context, q Querier, chain string) (store.AuditHead, error)
	// chunk is how many of n entries one insert takes.
	chunk(n int) int
	// insert writes es (one chain's linked run, following head) and fills
	// in ids; ErrConflict when another writer took a Seq.
	insert(ctx context.Context, tx Querier, es []store.AuditEntry, ids []int64, head store.AuditHead) error
	head(ctx context.Context, q Querier, chain string) (store.AuditHead, error)
	heads(ctx context.Context, q Querier) ([]store.AuditHead, error)
	readChain(ctx context.Context, q Querier, chain string, afterSeq int64, limit int) ([]store.AuditEntry, error)
	list(ctx context.Context, q Querier, f store.AuditFilter) ([]store.AuditEntry, error)
	// hashAt returns entry seq's hash; ErrNoRows without it.
	hashAt(ctx context.Context, q Querier, chain string, seq int64) (string, error)
	// truncate deletes chain's entries below before; how many.
	truncate(ctx context.Context, tx Querier, chain string, before int64) (int64, error)
}

// auditRows implements the trail's statements for audit_log, a row an
// entry.
type auditRows struct{}

func (auditRows) head(ctx context.Context, q Querier, chain string) (store.AuditHead, error) {
	h := store.AuditHead{Chain: chain}
	if err := q.QueryRow(ctx, `SELECT COALESCE(MIN(seq), 0), COALESCE(MAX(seq), 0), COUNT(*) FROM audit_log WHERE chain = $1`, chain).
		Scan(&h.First, &h.Last, &h.Entries); err != nil {
		return store.AuditHead{}, err
	}
	if h.Last == 0 {
		return h, nil
	}
	if err := q.QueryRow(ctx, `SELECT hash FROM audit_log WHERE chain = $1 AND seq = $2`, chain, h.Last).Scan(&h.Hash); err != nil {
		return store.AuditHead{}, err
	}
	return h, nil
}

// last is one lookup in the (chain, seq) index, whatever the chain's
// length.
func (auditRows) last(ctx context.Context, q Querier, chain string) (store.AuditHead, error) {
	h := store.AuditHead{Chain: chain}
	err := q.QueryRow(ctx, auditLastQuery, chain).Scan(&h.Last, &h.Hash)
	if errors.Is(err, ErrNoRows) {
		return h, nil
	}
	return h, err
}

// auditLastQuery reads a chain's last entry.
const auditLastQuery = `SELECT seq, hash FROM audit_log WHERE chain = $1 ORDER BY seq DESC LIMIT 1`

// AppendAudit implements store.AuditStore in one transaction: the last
// entry read, then each entry inserted unless its (chain, seq) is taken (a
// concurrent writer's: then nothing is written, ErrConflict).
func (s *Store) AppendAudit(ctx context.Context, entries []store.AuditEntry) error {
	es, err := norm.AuditEntries(entries)
	if err != nil {
		return err
	}
	ids := make([]int64, len(es))
	defer s.gc.heads.Drop(es) // the commit queue reads this chain's head afresh
	err = s.db.InTx(ctx, func(tx Querier) error {
		head, err := s.audit.last(ctx, tx, es[0].Chain)
		if err != nil {
			return err
		}
		if !norm.AuditFollows(es[0], head) {
			return norm.AuditAppendConflict(es[0], head)
		}
		for rest := es; len(rest) > 0; {
			n := s.audit.chunk(len(rest))
			if err := s.audit.insert(ctx, tx, rest[:n], ids[len(es)-len(rest):], head); err != nil {
				return err
			}
			rest = rest[n:]
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return err
		}
		return fmt.Errorf("store: append to audit chain %q: %w", es[0].Chain, err)
	}
	for i := range entries {
		entries[i].ID = ids[i]
	}
	return nil
}

func (auditRows) chunk(n int) int { return auditChunk(n) }

// auditChunk is how many of n entries one INSERT takes: the largest power
// of two up to 64 that n reaches, so that a batch of any size is at most
// a few statements (a batch of 26, what a gateway's writer gathers at a
// few hundred calls a second, is 16 + 8 + 2: three statements, where
// shapes of 64, 8 and 1 made it five) of seven shapes, whose texts the
// prepared-statement cache holds.
func auditChunk(n int) int {
	c := 64
	for c > 1 && c > n {
		c /= 2
	}
	return c
}

// auditInsert returns the INSERT of n entries.
func auditInsert(n int) string {
	if q, ok := auditTexts(n); ok {
		return q.returning
	}
	return sqlbatch.AuditValues(n) + ` ON CONFLICT (chain, seq) DO NOTHING RETURNING id, seq`
}

// auditInsertExec is auditInsert without RETURNING, for an Inserter
// (SQLite's adapter), with anonymous parameters (sqlbatch.AuditValuesAnon:
// SQLite binds them in time linear in their number).
func auditInsertExec(n int) string {
	if q, ok := auditTexts(n); ok {
		return q.exec
	}
	return sqlbatch.AuditValuesAnon(n) + ` ON CONFLICT (chain, seq) DO NOTHING`
}

// auditText is the two texts of the INSERT of one auditChunk size, made
// once: a batch's statements are looked up in the prepared-statement
// cache by their text, which was built anew for every statement (about 1%
// of a plain call's CPU at the gateway).
type auditText struct{ returning, exec string }

// auditTextsBySize holds the texts of the chunk sizes 1, 2, 4, ... 64, at
// the index of the size's bit (1 << i).
var auditTextsBySize = func() (out [7]auditText) {
	for i := range out {
		n := 1 << i
		out[i] = auditText{
			returning: sqlbatch.AuditValues(n) + ` ON CONFLICT (chain, seq) DO NOTHING RETURNING id, seq`,
			exec:      sqlbatch.AuditValuesAnon(n) + ` ON CONFLICT (chain, seq) DO NOTHING`,
		}
	}
	return out
}()

// auditTexts returns the texts made once for n rows, if n is a chunk size.
func auditTexts(n int) (auditText, bool) {
	if n < 1 || n > 64 || n&(n-1) != 0 {
		return auditText{}, false
	}
	return auditTextsBySize[bits.TrailingZeros(uint(n))], true
}

// insert inserts es in one statement and fills in ids (by seq: the
// order of RETURNING is not promised; on an Inserter, from the last ID).
// A row not inserted, its (chain, seq) taken by a concurrent writer, is
// ErrConflict.
func (auditRows) insert(ctx context.Context, tx Querier, es []store.AuditEntry, ids []int64, head store.AuditHead) error {
	args := sqlbatch.AuditArgs(make([]any, 0, 14*len(es)), es)
	if in, ok := tx.(Inserter); ok {
		n, last, err := in.Insert(ctx, auditInsertExec(len(es)), args...)
		if err != nil {
			return err
		}
		if n != int64(len(es)) {
			return norm.AuditAppendConflict(es[0], head)
		}
		for i := range es {
			ids[i] = last - int64(len(es)-1-i)
		}
		return nil
	}
	got := 0
	err := each(ctx, tx, func(r Rows) error {
		var id, seq int64
		if err := r.Scan(&id, &seq); err != nil {
			return err
		}
		if i := seq - es[0].Seq; i >= 0 && i < int64(len(es)) {
			ids[i] = id
			got++
		}
		return nil
	}, auditInsert(len(es)), args...)
	if err != nil {
		return err
	}
	if got != len(es) {
		return norm.AuditAppendConflict(es[0], head)
	}
	return nil
}

// AuditHead implements store.AuditStore.
func (s *Store) AuditHead(ctx context.Context, chain string) (store.AuditHead, error) {
	h, err := s.audit.head(ctx, s.db, chain)
	if err != nil {
		return store.AuditHead{}, fmt.Errorf("store: audit head of %q: %w", chain, err)
	}
	return h, nil
}

// AuditHeads implements store.AuditStore.
func (s *Store) AuditHeads(ctx context.Context) ([]store.AuditHead, error) {
	out, err := s.audit.heads(ctx, s.db)
	if err != nil {
		return nil, fmt.Errorf("store: audit heads: %w", err)
	}
	if len(out) == 0 {
		return nil, nil // as before: no chains is a nil slice
	}
	return out, nil
}

func (auditRows) heads(ctx context.Context, q Querier) ([]store.AuditHead, error) {
	out, err := collect(ctx, q, func(r Row) (store.AuditHead, error) {
		var h store.AuditHead
		err := r.Scan(&h.Chain, &h.First, &h.Last, &h.Entries)
		return h, err
	}, `SELECT chain, MIN(seq), MAX(seq), COUNT(*) FROM audit_log GROUP BY chain ORDER BY chain`)
	if err != nil {
		return nil, err
	}
	for i := range out { // the rows are closed: one statement at a time
		if err := q.QueryRow(ctx, `SELECT hash FROM audit_log WHERE chain = $1 AND seq = $2`, out[i].Chain, out[i].Last).Scan(&out[i].Hash); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ReadAuditChain implements store.AuditStore.
func (s *Store) ReadAuditChain(ctx context.Context, chain string, afterSeq int64, limit int) ([]store.AuditEntry, error) {
	out, err := s.audit.readChain(ctx, s.db, chain, afterSeq, limit)
	if err != nil {
		return nil, fmt.Errorf("store: read audit chain %q: %w", chain, err)
	}
	return out, nil
}

func (auditRows) readChain(ctx context.Context, q Querier, chain string, afterSeq int64, limit int) ([]store.AuditEntry, error) {
	query := `SELECT ` + auditCols + ` FROM audit_log WHERE chain = $1 AND seq > $2 ORDER BY seq`
	if limit > 0 {
		query += ` LIMIT ` + strconv.Itoa(limit)
	}
	return collect(ctx, q, scanAudit, query, chain, afterSeq)
}

// ListAudit implements store.AuditStore.
func (s *Store) ListAudit(ctx context.Context, f store.AuditFilter) ([]store.AuditEntry, error) {
	out, err := s.audit.list(ctx, s.db, f)
	if err != nil {
		return nil, fmt.Errorf("store: list audit: %w", err)
	}
	return out, nil
}

func (auditRows) list(ctx context.Context, q Querier, f store.AuditFilter) ([]store.AuditEntry, error) {
	var where []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.Replace(cond, "?", "$"+strconv.Itoa(len(args)), 1))
	}
	add("id > ?", f.AfterID)
	if f.Chain != "" {
		add("chain = ?", f.Chain)
	}
	if f.Subject != "" {
		add("subject = ?", f.Subject)
	}
	if f.Kind != "" {
		add("kind = ?", f.Kind)
	}
	if !f.Since.IsZero() {
		add("at >= ?", norm.MS(f.Since))
	}
	if !f.Until.IsZero() {
		add("at < ?", norm.MS(f.Until))
	}
	query := `SELECT ` + auditCols + ` FROM audit_log WHERE ` + strings.Join(where, " AND ") + ` ORDER BY id`
	if f.Limit > 0 {
		query += ` LIMIT ` + strconv.Itoa(f.Limit)
	}
	return collect(ctx, q, scanAudit, query, args...)
}

func (auditRows) hashAt(ctx context.Context, q Querier, chain string, seq int64) (string, error) {
	var hash string
	err := q.QueryRow(ctx, `SELECT hash FROM audit_log WHERE chain = $1 AND seq = $2`, chain, seq).Scan(&hash)
	return hash, err
}

func (auditRows) truncate(ctx context.Context, tx Querier, chain string, before int64) (int64, error) {
	return tx.Exec(ctx, `DELETE FROM audit_log WHERE chain = $1 AND seq < $2`, chain, before)
}

// PutAuditCheckpoint implements store.AuditStore.
func (s *Store) PutAuditCheckpoint(ctx context.Context, c store.AuditCheckpoint) error {
	c, err := norm.AuditCheckpoint(c, s.now())
	if err != nil {
		return err
	}
	err = s.db.InTx(ctx, func(tx Querier) error {
		hash, err := s.audit.hashAt(ctx, tx, c.Chain, c.Seq)
		if errors.Is(err, ErrNoRows) {
			return norm.NotFound("audit entry %s/%d", c.Chain, c.Seq)
		}
		if err != nil {
			return err
		}
		if hash != c.Hash {
			return norm.Invalid("audit checkpoint %s/%d: the entry's hash is not the checkpoint's", c.Chain, c.Seq)
		}
		n, err := tx.Exec(ctx, `INSERT INTO audit_checkpoints (chain, seq, hash, at, key_id, signature) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (chain, seq) DO NOTHING`, c.Chain, c.Seq, c.Hash, norm.MS(c.At), c.KeyID, c.Signature)
		if err != nil {
			return err
		}
		if n == 0 {
			return norm.Conflict("audit checkpoint %s/%d exists", c.Chain, c.Seq)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrConflict) {
			return err
		}
		return fmt.Errorf("store: audit checkpoint %s/%d: %w", c.Chain, c.Seq, err)
	}
	return nil
}

// AuditCheckpoints implements store.AuditStore.
func (s *Store) AuditCheckpoints(ctx context.Context, chain string) ([]store.AuditCheckpoint, error) {
	q := `SELECT chain, seq, hash, at, key_id, signature FROM audit_checkpoints`
	var args []any
	if chain != "" {
		q += ` WHERE chain = $1`
		args = append(args, chain)
	}
	out, err := collect(ctx, s.db, func(r Row) (store.AuditCheckpoint, error) {
		var c store.AuditCheckpoint
		var at int64
		var sig []byte
		if err := r.Scan(&c.Chain, &c.Seq, &c.Hash, &at, &c.KeyID, &sig); err != nil {
			return store.AuditCheckpoint{}, err
		}
		c.At, c.Signature = norm.Time(at), norm.Bytes(sig)
		return c, nil
	}, q+` ORDER BY chain, seq`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: audit checkpoints: %w", err)
	}
	return out, nil
}

// TruncateAudit implements store.AuditStore. It never deletes a chain's
// head, and nothing else deletes entries: on SQLite, whose audit_log IDs
// are row IDs (one more than the greatest in the table) since migration
// 13, that is what keeps them from being given again, the newest entry
// (the greatest ID) being the head of its chain.
func (s *Store) TruncateAudit(ctx context.Context, chain string, before int64) (int64, error) {
	if before <= 1 {
		return 0, nil
	}
	var n int64
	err := s.db.InTx(ctx, func(tx Querier) error {
		head, err := s.audit.last(ctx, tx, chain)
		if err != nil {
			return err
		}
		if before > head.Last {
			return norm.Invalid("audit chain %q: cannot truncate before %d, the chain ends at %d (its head stays)", chain, before, head.Last)
		}
		var one int
		err = tx.QueryRow(ctx, `SELECT 1 FROM audit_checkpoints WHERE chain = $1 AND seq = $2`, chain, before-1).Scan(&one)
		if errors.Is(err, ErrNoRows) {
			return norm.Invalid("audit chain %q: no checkpoint at %d to truncate behind", chain, before-1)
		}
		if err != nil {
			return err
		}
		if n, err = s.audit.truncate(ctx, tx, chain, before); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM audit_checkpoints WHERE chain = $1 AND seq < $2`, chain, before-1)
		return err
	})
	if err != nil {
		if errors.Is(err, store.ErrInvalid) {
			return 0, err
		}
		return 0, fmt.Errorf("store: truncate audit chain %q: %w", chain, err)
	}
	return n, nil
}
