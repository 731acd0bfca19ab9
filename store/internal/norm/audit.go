package norm

import (
	"encoding/json"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// AuditEntries validates a run of entries for AppendAudit and returns them
// as stored: At in UTC milliseconds, Duration in microseconds, Detail nil
// when empty. They must be of one chain, with consecutive Seqs from at
// least 1, each naming its kind and hash, the first of a chain (Seq 1)
// with an empty PrevHash and every later one linked to the one before it.
func AuditEntries(es []store.AuditEntry) ([]store.AuditEntry, error) {
	if len(es) == 0 {
		return nil, invalid("no audit entries to append")
	}
	out := make([]store.AuditEntry, len(es))
	copy(out, es)
	if err := AuditEntriesInPlace(out); err != nil {
		return nil, err
	}
	return out, nil
}

// AuditEntriesInPlace is AuditEntries on entries the caller owns: it
// normalizes them where they are (a store's own copy of a batch, which
// it need not copy again).
func AuditEntriesInPlace(out []store.AuditEntry) error {
	if len(out) == 0 {
		return invalid("no audit entries to append")
	}
	es := out
	for i, e := range es {
		switch {
		case e.Chain == "":
			return invalid("audit entry %d has no chain", i)
		case e.Chain != es[0].Chain:
			return invalid("audit entries of chains %q and %q in one append", es[0].Chain, e.Chain)
		case e.Seq < 1:
			return invalid("audit entry %s/%d: seq must be 1 or more", e.Chain, e.Seq)
		case i > 0 && e.Seq != es[i-1].Seq+1:
			return invalid("audit entry %s/%d does not follow seq %d", e.Chain, e.Seq, es[i-1].Seq)
		case e.Kind == "":
			return invalid("audit entry %s/%d has no kind", e.Chain, e.Seq)
		case e.Hash == "":
			return invalid("audit entry %s/%d has no hash", e.Chain, e.Seq)
		case e.Seq == 1 && e.PrevHash != "":
			return invalid("audit entry %s/1 starts its chain: its previous hash must be empty", e.Chain)
		case e.Seq > 1 && e.PrevHash == "":
			return invalid("audit entry %s/%d has no previous hash", e.Chain, e.Seq)
		case i > 0 && e.PrevHash != es[i-1].Hash:
			return invalid("audit entry %s/%d is not linked to the entry before it", e.Chain, e.Seq)
		case e.Duration < 0:
			return invalid("audit entry %s/%d has a negative duration", e.Chain, e.Seq)
		case len(e.Detail) > 0 && !json.Valid(e.Detail):
			return invalid("audit entry %s/%d: detail is not JSON", e.Chain, e.Seq)
		}
		e.At = Round(e.At)
		e.Duration = e.Duration.Truncate(time.Microsecond)
		e.Detail = Bytes(e.Detail)
		e.ID = 0
		out[i] = e
	}
	return nil
}

// AuditCheckpoint validates a checkpoint for PutAuditCheckpoint and returns
// it as stored.
func AuditCheckpoint(c store.AuditCheckpoint, now time.Time) (store.AuditCheckpoint, error) {
	switch {
	case c.Chain == "":
		return c, invalid("audit checkpoint has no chain")
	case c.Seq < 1:
		return c, invalid("audit checkpoint %s/%d: seq must be 1 or more", c.Chain, c.Seq)
	case c.Hash == "":
		return c, invalid("audit checkpoint %s/%d has no hash", c.Chain, c.Seq)
	case (c.KeyID == "") != (len(c.Signature) == 0):
		return c, invalid("audit checkpoint %s/%d: a signature needs its key ID and a key ID its signature", c.Chain, c.Seq)
	}
	if c.At.IsZero() {
		c.At = now
	}
	c.At = Round(c.At)
	c.Signature = Bytes(c.Signature)
	return c, nil
}

// AuditAppendConflict builds the ErrConflict of an append that does not
// follow its chain's head.
func AuditAppendConflict(first store.AuditEntry, head store.AuditHead) error {
	return Conflict("audit chain %q: entry %d does not follow the head (seq %d)", first.Chain, first.Seq, head.Last)
}

// AuditFollows reports whether first follows head.
func AuditFollows(first store.AuditEntry, head store.AuditHead) bool {
	return first.Seq == head.Last+1 && first.PrevHash == head.Hash
}

// Micros converts stored microseconds to a duration.
func Micros(us int64) time.Duration { return time.Duration(us) * time.Microsecond }
