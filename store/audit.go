package store

import (
	"context"
	"time"
)

// AuditEntry is one event of the audit trail: a call, a refusal, an
// approval asked for or decided, a trust, a drift observation, a purge, a
// connection. Entries live in chains: each chain is appended to by one
// writer at a time (a gateway instance, or the operators' commands), its
// entries numbered 1, 2, 3... (Seq) and each carrying the hash of the one
// before (PrevHash). The store keeps the hashes as given: it computes none
// (package audit does), it only refuses an append that does not follow its
// chain's head.
type AuditEntry struct {
	// ID is assigned by the store on append, ascending across every chain
	// in the order entries were committed. It is not part of the hash; it
	// is the cursor of ListAudit.
	ID int64
	// Chain names the chain; Seq is the entry's number in it, from 1.
	Chain string
	Seq   int64
	// At is when the event happened (stored to the millisecond).
	At time.Time
	// Kind is what happened ("call", "refusal", "approval.requested",
	// ...; package audit names them).
	Kind string
	// Subject is who did it: the caller of a call, the operator of a
	// decision.
	Subject string
	// Server and Tool name what it was done to, when anything.
	Server string
	Tool   string
	// ArgsDigest is the SHA-256 of a call's canonical arguments (hex),
	// never the arguments.
	ArgsDigest string
	// Outcome is the event's outcome code ("ok", a refusal code, ...).
	Outcome string
	// Duration is how long a call took (stored to the microsecond).
	Duration time.Duration
	// Instance names the gateway instance that wrote the entry.
	Instance string
	// Detail is a JSON object of the kind's other fields, opaque to the
	// store (nil for none).
	Detail []byte
	// PrevHash is the Hash of the entry before in the chain ("" for Seq
	// 1); Hash is this entry's.
	PrevHash string
	Hash     string
}

// AuditHead is the state of one chain.
type AuditHead struct {
	Chain string
	// First and Last are the lowest and highest Seq held (both 0 for a
	// chain without entries); Hash is the Hash of entry Last.
	First, Last int64
	Hash        string
	// Entries is how many entries the chain holds.
	Entries int64
}

// AuditCheckpoint is a statement that a chain had reached Seq with Hash,
// signed when the writer holds a key: what a verifier trusts beyond the
// hashes, and where retention may cut a chain.
type AuditCheckpoint struct {
	Chain string
	Seq   int64
	Hash  string
	// At is when the checkpoint was made.
	At time.Time
	// KeyID names the key that signed (package audit: a prefix of the
	// public key's SHA-256); empty with Signature for an unsigned one.
	KeyID     string
	Signature []byte
}

// AuditFilter selects entries for ListAudit. Zero fields select
// everything.
type AuditFilter struct {
	// Chain, Subject and Kind select entries with that exact value.
	Chain   string
	Subject string
	Kind    string
	// Since selects entries at or after it; Until those before it.
	Since time.Time
	Until time.Time
	// AfterID selects entries whose ID is above it: the cursor of a
	// reader paging through the log.
	AfterID int64
	// Limit caps the number of entries returned; 0 means no cap.
	Limit int
}

// AuditStore persists the audit trail. Entries are append-only: no
// method edits one, and only TruncateAudit deletes, from the start of a
// chain, behind a checkpoint.
type AuditStore interface {
	// AppendAudit appends entries, all of one chain with consecutive Seqs,
	// in one transaction: the first must follow the chain's head (Seq =
	// head.Last+1 and PrevHash = head.Hash; Seq 1 and an empty PrevHash
	// for a new chain), else nothing is written and the error wraps
	// ErrConflict (another writer appended meanwhile: read the head and
	// try again). ErrInvalid for entries that are not such a run or miss
	// a chain, kind or hash. It fills in each entry's ID.
	AppendAudit(ctx context.Context, entries []AuditEntry) error
	// AuditHead returns the state of one chain (Last 0 when it has no
	// entries).
	AuditHead(ctx context.Context, chain string) (AuditHead, error)
	// AuditHeads returns the state of every chain that has entries,
	// ordered by chain.
	AuditHeads(ctx context.Context) ([]AuditHead, error)
	// ReadAuditChain returns up to limit entries of chain with Seq above
	// afterSeq, in Seq order (limit 0: every one).
	ReadAuditChain(ctx context.Context, chain string, afterSeq int64, limit int) ([]AuditEntry, error)
	// ListAudit returns the entries f selects, in ID order.
	ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, error)
	// PutAuditCheckpoint records a checkpoint. The chain must hold entry
	// c.Seq with hash c.Hash (ErrNotFound without the entry, ErrInvalid
	// when the hash differs). One checkpoint per (chain, seq): a second
	// one is ErrConflict.
	PutAuditCheckpoint(ctx context.Context, c AuditCheckpoint) error
	// AuditCheckpoints returns the checkpoints of chain in Seq order, or
	// of every chain (by chain, then Seq) when chain is empty.
	AuditCheckpoints(ctx context.Context, chain string) ([]AuditCheckpoint, error)
	// TruncateAudit deletes the entries of chain with Seq below before,
	// and the checkpoints below before-1, in one transaction, and returns
	// how many entries it deleted. A checkpoint must exist at before-1
	// (it anchors the rest of the chain; before 1 deletes nothing) and
	// before must not be above the chain's last Seq (the head stays):
	// ErrInvalid otherwise.
	TruncateAudit(ctx context.Context, chain string, before int64) (int64, error)
}

// AuditLink numbers and hashes e as the entry after head in its chain:
// package audit's Link, handed to a store so that it can link an entry
// inside its own transaction, where the chain's head is known.
type AuditLink func(e AuditEntry, head AuditHead) AuditEntry

// AuditJournalStore is implemented by stores that link audit entries to
// their chain inside their own transactions: with a journal completion
// (the entry and the completion are committed together, or neither is),
// or on their own. A process that writes its chain only through these
// never races itself for the chain's head: the SQL stores decide it in the
// journal's group commit, one batch at a time.
type AuditJournalStore interface {
	// AppendAuditLinked appends entries in one transaction, each (its
	// Chain set) linked by link to its chain's head as the transaction
	// sees it, and returns them as written (Seq, PrevHash, Hash and ID
	// set). ErrInvalid for an entry without a chain or kind, or one that
	// link leaves unlinked.
	AppendAuditLinked(ctx context.Context, entries []AuditEntry, link AuditLink) ([]AuditEntry, error)
	// CompleteAudited is Complete and the append of e, linked by link, in
	// one transaction: both are committed or neither is (an error of
	// Complete's, and e is not written). It returns e as written.
	CompleteAudited(ctx context.Context, key RecordKey, executor string, state State, outcome []byte, e AuditEntry, link AuditLink) (AuditEntry, error)
}
