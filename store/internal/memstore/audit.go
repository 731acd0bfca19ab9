package memstore

import (
	"cmp"
	"context"
	"slices"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
)

// auditLog is the memory store's audit trail: entries by ID order, and
// checkpoints.
type auditLog struct {
	entries     []store.AuditEntry
	lastID      int64
	checkpoints []store.AuditCheckpoint
	// last is each chain's last entry's seq and hash: an append checks it
	// without scanning the log.
	last map[string]store.AuditHead
}

func (a *auditLog) head(chain string) store.AuditHead {
	h := store.AuditHead{Chain: chain}
	for _, e := range a.entries {
		if e.Chain != chain {
			continue
		}
		if h.First == 0 || e.Seq < h.First {
			h.First = e.Seq
		}
		if e.Seq > h.Last {
			h.Last, h.Hash = e.Seq, e.Hash
		}
		h.Entries++
	}
	return h
}

// AppendAudit implements store.AuditStore.
func (m *Store) AppendAudit(ctx context.Context, entries []store.AuditEntry) error {
	es, err := norm.AuditEntries(entries)
	if err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	head := m.audit.last[es[0].Chain]
	if !norm.AuditFollows(es[0], head) {
		return norm.AuditAppendConflict(es[0], head)
	}
	if m.audit.last == nil {
		m.audit.last = map[string]store.AuditHead{}
	}
	end := es[len(es)-1]
	m.audit.last[end.Chain] = store.AuditHead{Last: end.Seq, Hash: end.Hash}
	for i := range es {
		m.audit.lastID++
		es[i].ID = m.audit.lastID
		entries[i].ID = es[i].ID
	}
	m.audit.entries = append(m.audit.entries, es...)
	return nil
}

// AuditHead implements store.AuditStore.
func (m *Store) AuditHead(ctx context.Context, chain string) (store.AuditHead, error) {
	if err := m.lock(ctx); err != nil {
		return store.AuditHead{}, err
	}
	defer m.mu.Unlock()
	return m.audit.head(chain), nil
}

// AuditHeads implements store.AuditStore.
func (m *Store) AuditHeads(ctx context.Context) ([]store.AuditHead, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var chains []string
	for _, e := range m.audit.entries {
		if !slices.Contains(chains, e.Chain) {
			chains = append(chains, e.Chain)
		}
	}
	slices.Sort(chains)
	var out []store.AuditHead
	for _, c := range chains {
		out = append(out, m.audit.head(c))
	}
	return out, nil
}

func copyEntry(e store.AuditEntry) store.AuditEntry {
	e.Detail = norm.Bytes(e.Detail)
	return e
}

// ReadAuditChain implements store.AuditStore.
func (m *Store) ReadAuditChain(ctx context.Context, chain string, afterSeq int64, limit int) ([]store.AuditEntry, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := []store.AuditEntry{}
	for _, e := range m.audit.entries {
		if e.Chain == chain && e.Seq > afterSeq {
			out = append(out, copyEntry(e))
		}
	}
	slices.SortFunc(out, func(a, b store.AuditEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// ListAudit implements store.AuditStore.
func (m *Store) ListAudit(ctx context.Context, f store.AuditFilter) ([]store.AuditEntry, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := []store.AuditEntry{}
	for _, e := range m.audit.entries {
		switch {
		case e.ID <= f.AfterID,
			f.Chain != "" && e.Chain != f.Chain,
			f.Subject != "" && e.Subject != f.Subject,
			f.Kind != "" && e.Kind != f.Kind,
			!f.Since.IsZero() && norm.MS(e.At) < norm.MS(f.Since),
			!f.Until.IsZero() && norm.MS(e.At) >= norm.MS(f.Until):
			continue
		}
		out = append(out, copyEntry(e))
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
	}
	return out, nil
}

// PutAuditCheckpoint implements store.AuditStore.
func (m *Store) PutAuditCheckpoint(ctx context.Context, c store.AuditCheckpoint) error {
	c, err := norm.AuditCheckpoint(c, m.now())
	if err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	i := slices.IndexFunc(m.audit.entries, func(e store.AuditEntry) bool { return e.Chain == c.Chain && e.Seq == c.Seq })
	if i < 0 {
		return norm.NotFound("audit entry %s/%d", c.Chain, c.Seq)
	}
	if m.audit.entries[i].Hash != c.Hash {
		return norm.Invalid("audit checkpoint %s/%d: the entry's hash is not the checkpoint's", c.Chain, c.Seq)
	}
	if slices.ContainsFunc(m.audit.checkpoints, func(x store.AuditCheckpoint) bool { return x.Chain == c.Chain && x.Seq == c.Seq }) {
		return norm.Conflict("audit checkpoint %s/%d exists", c.Chain, c.Seq)
	}
	m.audit.checkpoints = append(m.audit.checkpoints, c)
	return nil
}

// AuditCheckpoints implements store.AuditStore.
func (m *Store) AuditCheckpoints(ctx context.Context, chain string) ([]store.AuditCheckpoint, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := []store.AuditCheckpoint{}
	for _, c := range m.audit.checkpoints {
		if chain == "" || c.Chain == chain {
			c.Signature = norm.Bytes(c.Signature)
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b store.AuditCheckpoint) int {
		if a.Chain != b.Chain {
			if a.Chain < b.Chain {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
	return out, nil
}

// TruncateAudit implements store.AuditStore.
func (m *Store) TruncateAudit(ctx context.Context, chain string, before int64) (int64, error) {
	if before <= 1 {
		return 0, nil
	}
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	head := m.audit.head(chain)
	if before > head.Last {
		return 0, norm.Invalid("audit chain %q: cannot truncate before %d, the chain ends at %d (its head stays)", chain, before, head.Last)
	}
	if !slices.ContainsFunc(m.audit.checkpoints, func(x store.AuditCheckpoint) bool { return x.Chain == chain && x.Seq == before-1 }) {
		return 0, norm.Invalid("audit chain %q: no checkpoint at %d to truncate behind", chain, before-1)
	}
	n := len(m.audit.entries)
	m.audit.entries = slices.DeleteFunc(m.audit.entries, func(e store.AuditEntry) bool { return e.Chain == chain && e.Seq < before })
	m.audit.checkpoints = slices.DeleteFunc(m.audit.checkpoints, func(x store.AuditCheckpoint) bool { return x.Chain == chain && x.Seq < before-1 })
	return int64(n - len(m.audit.entries)), nil
}

var _ store.AuditJournalStore = (*Store)(nil)

// AppendAuditLinked implements store.AuditJournalStore.
func (m *Store) AppendAuditLinked(ctx context.Context, entries []store.AuditEntry, link store.AuditLink) ([]store.AuditEntry, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	return m.appendLinked(entries, link)
}

// CompleteAudited implements store.AuditJournalStore.
func (m *Store) CompleteAudited(ctx context.Context, key store.RecordKey, executor string, state store.State, outcome []byte, e store.AuditEntry, link store.AuditLink) (store.AuditEntry, error) {
	if err := norm.Completion(state); err != nil {
		return store.AuditEntry{}, err
	}
	if err := m.lock(ctx); err != nil {
		return store.AuditEntry{}, err
	}
	defer m.mu.Unlock()
	r, err := m.heldBy(key, executor)
	if err != nil {
		return store.AuditEntry{}, err
	}
	linked, err := m.appendLinked([]store.AuditEntry{e}, link)
	if err != nil {
		return store.AuditEntry{}, err
	}
	r.State = state
	r.Outcome = norm.Bytes(outcome)
	r.UpdatedAt = norm.Round(m.now())
	m.journal[key] = r
	return linked[0], nil
}

// appendLinked links entries to their chains' heads and appends them, or
// nothing. The caller holds m.mu.
func (m *Store) appendLinked(entries []store.AuditEntry, link store.AuditLink) ([]store.AuditEntry, error) {
	if link == nil || len(entries) == 0 {
		return nil, norm.Invalid("audit: an append needs entries and a link function")
	}
	heads := map[string]store.AuditHead{}
	out := make([]store.AuditEntry, len(entries))
	for i, e := range entries {
		if e.Chain == "" || e.Kind == "" {
			return nil, norm.Invalid("audit entry %d has no chain or no kind", i)
		}
		h, ok := heads[e.Chain]
		if !ok {
			h = m.audit.last[e.Chain]
			h.Chain = e.Chain
		}
		l := link(e, h)
		if l.Chain != e.Chain || !norm.AuditFollows(l, h) || l.Hash == "" {
			return nil, norm.Invalid("audit entry %d (chain %q): the link function did not link it to the head (seq %d)", i, e.Chain, h.Last)
		}
		one, err := norm.AuditEntries([]store.AuditEntry{l})
		if err != nil {
			return nil, err
		}
		out[i] = one[0]
		h.Last, h.Hash = l.Seq, l.Hash
		heads[e.Chain] = h
	}
	if m.audit.last == nil {
		m.audit.last = map[string]store.AuditHead{}
	}
	for ch, h := range heads {
		m.audit.last[ch] = store.AuditHead{Last: h.Last, Hash: h.Hash}
	}
	for i := range out {
		m.audit.lastID++
		out[i].ID = m.audit.lastID
	}
	m.audit.entries = append(m.audit.entries, out...)
	return slices.Clone(out), nil
}
