package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// A checkpoint's Signature has one of two forms, told apart by its length
// and first byte (no store schema records the form):
//
//   - bare (64 bytes): the Ed25519 signature of the v1 message (chain, seq,
//     hash, time). Checkpoints written before checkpoints were linked have
//     this form; they still verify, but say nothing of the checkpoint
//     before them.
//   - linked (105 bytes): the byte 2, the previous checkpoint's seq (8
//     bytes, big-endian; 0 when there was none), the previous checkpoint's
//     digest (32 bytes, CheckpointDigest; zero when there was none), then
//     the Ed25519 signature (64 bytes) of the v2 message, which covers the
//     v1 fields and that link. Every checkpoint signed now has this form.
//
// The link is stored in the signature so that a verifier knows what the
// signer linked to even after retention deleted that checkpoint.
const (
	checkpointDomain       = "gatehouse/audit/checkpoint/v1"
	linkedCheckpointDomain = "gatehouse/audit/checkpoint/v2"
	linkedForm             = 2
	linkedSigSize          = 1 + 8 + sha256.Size + ed25519.SignatureSize
)

// CheckpointLink is what a linked checkpoint's signature says of the
// checkpoint before it in its chain.
type CheckpointLink struct {
	// Seq is the previous checkpoint's seq; 0 when the signer knew of none.
	Seq int64
	// Digest is the previous checkpoint's CheckpointDigest; zero when Seq
	// is 0.
	Digest [sha256.Size]byte
}

// LinkOf returns the link c's signature carries, and false when it carries
// none (an unsigned checkpoint, or a bare signature written before
// checkpoints were linked).
func LinkOf(c store.AuditCheckpoint) (CheckpointLink, bool) {
	if len(c.Signature) != linkedSigSize || c.Signature[0] != linkedForm {
		return CheckpointLink{}, false
	}
	var l CheckpointLink
	l.Seq = int64(binary.BigEndian.Uint64(c.Signature[1:9]))
	copy(l.Digest[:], c.Signature[9:9+sha256.Size])
	return l, true
}

// checkpointMessage is what a bare signature covers: the checkpoint's
// chain, seq, hash and time, length-prefixed.
func checkpointMessage(c store.AuditCheckpoint) []byte {
	b := appendString(nil, checkpointDomain)
	b = appendString(b, c.Chain)
	b = binary.BigEndian.AppendUint64(b, uint64(c.Seq))
	b = appendString(b, c.Hash)
	b = binary.BigEndian.AppendUint64(b, uint64(msOf(c.At)))
	return b
}

// linkedMessage is what a linked signature covers: the same fields and
// the link.
func linkedMessage(c store.AuditCheckpoint, l CheckpointLink) []byte {
	b := appendString(nil, linkedCheckpointDomain)
	b = appendString(b, c.Chain)
	b = binary.BigEndian.AppendUint64(b, uint64(c.Seq))
	b = appendString(b, c.Hash)
	b = binary.BigEndian.AppendUint64(b, uint64(msOf(c.At)))
	b = binary.BigEndian.AppendUint64(b, uint64(l.Seq))
	b = append(b, l.Digest[:]...)
	return b
}

// CheckpointDigest returns the SHA-256 of what c states: its linked
// message (chain, seq, hash, time and its own link) when its signature is
// linked, else its v1 message. A linked checkpoint covers the digest of the
// one before it, so the checkpoints of a chain are a hash chain too.
func CheckpointDigest(c store.AuditCheckpoint) [sha256.Size]byte {
	if l, ok := LinkOf(c); ok {
		return sha256.Sum256(linkedMessage(c, l))
	}
	return sha256.Sum256(checkpointMessage(c))
}

// Sign returns c signed with k as a chain's first checkpoint (linked to
// none): SignLinked(k, c, nil).
func Sign(k ed25519.PrivateKey, c store.AuditCheckpoint) store.AuditCheckpoint {
	return SignLinked(k, c, nil)
}

// SignLinked returns c signed with k (c.At rounded to the millisecond
// first), its signature linked to prev, the chain's checkpoint before c
// (nil when it has none).
func SignLinked(k ed25519.PrivateKey, c store.AuditCheckpoint, prev *store.AuditCheckpoint) store.AuditCheckpoint {
	if !c.At.IsZero() {
		c.At = Round(store.AuditEntry{At: c.At}).At
	}
	var l CheckpointLink
	if prev != nil {
		l = CheckpointLink{Seq: prev.Seq, Digest: CheckpointDigest(*prev)}
	}
	c.KeyID = KeyID(k.Public().(ed25519.PublicKey))
	sig := make([]byte, 0, linkedSigSize)
	sig = append(sig, linkedForm)
	sig = binary.BigEndian.AppendUint64(sig, uint64(l.Seq))
	sig = append(sig, l.Digest[:]...)
	c.Signature = append(sig, ed25519.Sign(k, linkedMessage(c, l))...)
	return c
}

// VerifyCheckpoint checks that c is signed by pub: a linked signature over
// its fields and its link, or a bare one (written before checkpoints were
// linked) over its fields. It does not look for the checkpoint the link
// names; Verify does.
func VerifyCheckpoint(pub ed25519.PublicKey, c store.AuditCheckpoint) error {
	switch {
	case len(c.Signature) == 0:
		return errors.New("the checkpoint is not signed")
	case c.KeyID != KeyID(pub):
		return fmt.Errorf("the checkpoint is signed by key %s, not by the given key %s", c.KeyID, KeyID(pub))
	}
	if l, ok := LinkOf(c); ok {
		if !ed25519.Verify(pub, linkedMessage(c, l), c.Signature[linkedSigSize-ed25519.SignatureSize:]) {
			return fmt.Errorf("the checkpoint's signature does not verify with key %s", KeyID(pub))
		}
		return nil
	}
	if len(c.Signature) != ed25519.SignatureSize {
		return fmt.Errorf("the checkpoint's signature is %d bytes, neither a signature (%d) nor a linked one (%d)", len(c.Signature), ed25519.SignatureSize, linkedSigSize)
	}
	if !ed25519.Verify(pub, checkpointMessage(c), c.Signature) {
		return fmt.Errorf("the checkpoint's signature does not verify with key %s", KeyID(pub))
	}
	return nil
}

// latestBefore returns the last of cps (in seq order) whose Seq is below
// seq, or nil.
func latestBefore(cps []store.AuditCheckpoint, seq int64) *store.AuditCheckpoint {
	for i := len(cps) - 1; i >= 0; i-- {
		if cps[i].Seq < seq {
			return &cps[i]
		}
	}
	return nil
}

// ErrNotCheckpointed is wrapped by AppendCheckpointed's error when the
// entry was appended but no checkpoint covers it.
var ErrNotCheckpointed = errors.New("audit: the entry was appended without a checkpoint")

// AppendCheckpointed appends e to chain (as AppendOne) and checkpoints the
// chain at it: what the operators' commands and the console do after each
// action, so that the action is covered by a checkpoint when they return.
// The checkpoint is signed with key and linked to the chain's latest
// checkpoint before e. Without a key it is unsigned, unless the store
// already holds signed checkpoints (the chain's latest one, or, when the
// chain has none, any chain's): an unsigned checkpoint among signed ones
// would make every verification with the public key refuse the chain, so
// none is written and the error says so. When the append succeeded, e is
// returned as written, and any error wraps ErrNotCheckpointed.
func AppendCheckpointed(ctx context.Context, st store.AuditStore, chain string, e store.AuditEntry, key ed25519.PrivateKey) (store.AuditEntry, error) {
	e, err := AppendOne(ctx, st, chain, e)
	if err != nil {
		return e, err
	}
	cps, err := st.AuditCheckpoints(ctx, chain)
	if err != nil {
		return e, fmt.Errorf("%w: reading the checkpoints of chain %q: %w", ErrNotCheckpointed, chain, err)
	}
	c := store.AuditCheckpoint{Chain: chain, Seq: e.Seq, Hash: e.Hash, At: e.At}
	if key != nil {
		c = SignLinked(key, c, latestBefore(cps, e.Seq))
	} else {
		signed := len(cps) > 0 && len(cps[len(cps)-1].Signature) > 0
		if len(cps) == 0 {
			all, err := st.AuditCheckpoints(ctx, "")
			if err != nil {
				return e, fmt.Errorf("%w: reading the store's checkpoints: %w", ErrNotCheckpointed, err)
			}
			for _, x := range all {
				signed = signed || len(x.Signature) > 0
			}
		}
		if signed {
			return e, fmt.Errorf("%w: no signing key, and the store's checkpoints are signed (an unsigned one would fail every verification with the public key)", ErrNotCheckpointed)
		}
	}
	if err := st.PutAuditCheckpoint(ctx, c); err != nil && !errors.Is(err, store.ErrConflict) {
		return e, fmt.Errorf("%w: %w", ErrNotCheckpointed, err)
	}
	return e, nil
}

// ReadSigningKey reads the checkpoints' signing key as the gateway's
// config names it: the file (audit.signingKeyFile) or the environment
// variable (audit.signingKeyEnv) holding its text. Neither named: nil, nil.
// The error names the file or the variable and what is wrong.
func ReadSigningKey(file, env string) (ed25519.PrivateKey, error) {
	var text []byte
	var src string
	switch {
	case file != "":
		src = "audit.signingKeyFile " + file
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		text = b
	case env != "":
		src = "audit.signingKeyEnv $" + env
		text = []byte(os.Getenv(env))
		if len(bytes.TrimSpace(text)) == 0 {
			return nil, fmt.Errorf("%s: the variable is unset or empty", src)
		}
	default:
		return nil, nil
	}
	k, err := ParsePrivateKey(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	return k, nil
}

// roundAt is t as checkpoints keep it (UTC milliseconds).
func roundAt(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}
