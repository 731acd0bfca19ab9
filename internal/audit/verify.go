package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sort"

	"github.com/gatehouse-dev/gatehouse/store"
)

// VerifyOptions configure Verify. A nil *VerifyOptions means defaults.
type VerifyOptions struct {
	// PublicKey, when set, must have signed every checkpoint: an unsigned
	// one, or one signed by another key, is a Problem, and so is a chain
	// with entries and no checkpoint at all (nothing proves it).
	PublicKey ed25519.PublicKey
	// Chain, when set, verifies that chain only (and only its
	// expectations below).
	Chain string
	// ExpectChains name chains that must be in the store: one that holds
	// neither entries nor checkpoints is a Problem (deleted whole).
	ExpectChains []string
	// ExpectHead, when set, is a head kept outside the store (LatestHead,
	// ParseHead): each of its chains must be in the store and still hold
	// its checkpoint: the entry at that seq with that hash, and the
	// checkpoint itself (unless retention cut the chain past it). A chain
	// that ends before that seq had its end cut with its checkpoints. With
	// PublicKey, the head's checkpoints must be signed by it too.
	ExpectHead *Head
	// Page is how many entries are read at a time; 0 means 1,000.
	Page int
}

// Problem is the first thing found wrong in a chain.
type Problem struct {
	Chain string
	// Seq is the entry (or checkpoint) at fault.
	Seq int64
	// What says what is wrong, in a sentence.
	What string
}

func (p *Problem) Error() string {
	return fmt.Sprintf("audit chain %q, seq %d: %s", p.Chain, p.Seq, p.What)
}

// ChainReport is what Verify found of one chain.
type ChainReport struct {
	Chain string
	// First and Last are the first and last Seq verified; Entries how
	// many.
	First, Last, Entries int64
	// Checkpoints is how many checkpoints were checked, Signed how many of
	// them carry a signature that verified with the given key, Linked how
	// many link to the checkpoint before them (found, or cut by
	// retention); the others were written before checkpoints were linked,
	// or are unsigned.
	Checkpoints, Signed, Linked int
	// HeadSeq is the seq of ExpectHead's checkpoint of the chain, when it
	// was checked (0 when the head names no such chain).
	HeadSeq int64
}

// Result is Verify's answer: every chain's report and the first problem
// (nil when every chain verifies).
type Result struct {
	Chains  []ChainReport
	Problem *Problem
}

// Verify reads every chain (or o.Chain) from the store and checks, in Seq
// order: that each entry's hash is that of its content, that it links to
// the entry before (PrevHash), that no Seq is missing, that a chain not
// starting at 1 starts right after a checkpoint whose hash it links to,
// that each checkpoint names an entry present with its hash (a checkpoint
// beyond the last entry means entries were deleted from the end), that the
// checkpoint a linked checkpoint links to is present and the one it
// signed (unless retention cut it), and, with o.PublicKey, that every
// checkpoint is signed by it and every chain has one. Chains o expects
// must be present, and ExpectHead's checkpoints still held. It stops at the
// first problem. The error is for the store's failures only.
func Verify(ctx context.Context, st store.AuditStore, o *VerifyOptions) (*Result, error) {
	var opts VerifyOptions
	if o != nil {
		opts = *o
	}
	if opts.Page <= 0 {
		opts.Page = 1000
	}
	cps, err := st.AuditCheckpoints(ctx, opts.Chain)
	if err != nil {
		return nil, err
	}
	byChain := map[string][]store.AuditCheckpoint{}
	for _, c := range cps {
		byChain[c.Chain] = append(byChain[c.Chain], c)
	}
	expected := map[string]bool{}
	heads := map[string]*store.AuditCheckpoint{}
	for _, c := range opts.ExpectChains {
		expected[c] = true
	}
	if opts.ExpectHead != nil {
		for i, c := range opts.ExpectHead.Chains {
			expected[c.Chain], heads[c.Chain] = true, &opts.ExpectHead.Chains[i]
		}
	}
	var chains []string
	if opts.Chain != "" {
		chains = []string{opts.Chain}
	} else {
		heads, err := st.AuditHeads(ctx)
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for _, h := range heads {
			chains, seen[h.Chain] = append(chains, h.Chain), true
		}
		for c := range byChain {
			if !seen[c] {
				chains, seen[c] = append(chains, c), true
			}
		}
		for c := range expected {
			if !seen[c] {
				chains = append(chains, c)
			}
		}
		sort.Strings(chains)
	}
	res := &Result{}
	for _, chain := range chains {
		exp := chainExpect{present: expected[chain], head: heads[chain]}
		rep, prob, err := verifyChain(ctx, st, chain, byChain[chain], exp, &opts)
		if err != nil {
			return nil, err
		}
		res.Chains = append(res.Chains, rep)
		if prob != nil {
			res.Problem = prob
			return res, nil
		}
	}
	return res, nil
}

// chainExpect is what the options expect of one chain: to be present, and
// to hold a head's checkpoint.
type chainExpect struct {
	present bool
	head    *store.AuditCheckpoint
}

func verifyChain(ctx context.Context, st store.AuditStore, chain string, cps []store.AuditCheckpoint, exp chainExpect, o *VerifyOptions) (ChainReport, *Problem, error) {
	rep := ChainReport{Chain: chain}
	bad := func(seq int64, format string, args ...any) *Problem {
		return &Problem{Chain: chain, Seq: seq, What: fmt.Sprintf(format, args...)}
	}
	cpAt := map[int64]store.AuditCheckpoint{}
	for _, c := range cps {
		rep.Checkpoints++
		if o.PublicKey != nil {
			if err := VerifyCheckpoint(o.PublicKey, c); err != nil {
				return rep, bad(c.Seq, "checkpoint refused: %v", err), nil
			}
			rep.Signed++
		}
		cpAt[c.Seq] = c
	}
	h := exp.head
	if h != nil && o.PublicKey != nil {
		if err := VerifyCheckpoint(o.PublicKey, *h); err != nil {
			return rep, bad(h.Seq, "the head file's checkpoint refused: %v (the file was edited, or holds another trail's checkpoint)", err), nil
		}
	}
	headHash := ""
	var prev *store.AuditEntry
	var after int64
	limit := o.Page
	for {
		page, err := st.ReadAuditChain(ctx, chain, after, limit)
		if errors.Is(err, store.ErrCorrupt) && limit != 1 {
			// Some of the page cannot be read (its bytes were edited):
			// on one entry at a time, verifying those that can, up to
			// the first that cannot.
			limit = 1
			continue
		}
		if errors.Is(err, store.ErrCorrupt) {
			return rep, bad(after+1, "the entries from seq %d on cannot be read: %v", after+1, err), nil
		}
		if err != nil {
			return rep, nil, err
		}
		for i := range page {
			e := page[i]
			if prev == nil {
				rep.First = e.Seq
				if e.Seq > 1 {
					c, ok := cpAt[e.Seq-1]
					if !ok {
						return rep, bad(e.Seq, "the chain starts at seq %d with no checkpoint at seq %d: entries were deleted from its start", e.Seq, e.Seq-1), nil
					}
					if e.PrevHash != c.Hash {
						return rep, bad(e.Seq, "the entry does not link to the checkpoint at seq %d before it", e.Seq-1), nil
					}
				} else if e.PrevHash != "" {
					return rep, bad(e.Seq, "the chain's first entry links to a previous hash"), nil
				}
			} else {
				if e.Seq != prev.Seq+1 {
					return rep, bad(prev.Seq+1, "the entry is missing (seq %d is followed by %d): deleted", prev.Seq, e.Seq), nil
				}
				if e.PrevHash != prev.Hash {
					return rep, bad(e.Seq, "the entry does not link to entry %d before it: an entry was inserted, deleted or moved", prev.Seq), nil
				}
			}
			if h := Hash(e); h != e.Hash {
				return rep, bad(e.Seq, "the entry's hash is not that of its content: edited (or moved)"), nil
			}
			if c, ok := cpAt[e.Seq]; ok && c.Hash != e.Hash {
				return rep, bad(e.Seq, "the checkpoint at seq %d names another hash than the entry's: rewritten since", e.Seq), nil
			}
			if h != nil && e.Seq == h.Seq {
				headHash = e.Hash
			}
			prev = &page[i]
			rep.Last = e.Seq
			rep.Entries++
		}
		if len(page) < limit {
			break
		}
		after = page[len(page)-1].Seq
	}
	if prev == nil && len(cps) == 0 {
		if exp.present {
			what := "it was expected (--expect-chain)"
			if h != nil {
				what = fmt.Sprintf("the head file holds its checkpoint at seq %d", h.Seq)
			}
			return rep, bad(0, "the chain is missing: %s, but the store holds no entry and no checkpoint of it: deleted whole", what), nil
		}
		return rep, nil, nil
	}
	for _, c := range cps {
		if prev == nil {
			return rep, bad(c.Seq, "the chain has a checkpoint at seq %d but no entries: deleted", c.Seq), nil
		}
		if c.Seq > prev.Seq {
			return rep, bad(prev.Seq+1, "the chain ends at seq %d but a checkpoint names seq %d: entries were deleted from its end", prev.Seq, c.Seq), nil
		}
	}
	if p := checkLinks(&rep, cps, cpAt, bad); p != nil {
		return rep, p, nil
	}
	if o.PublicKey != nil && len(cps) == 0 {
		return rep, bad(rep.First, "the chain has no checkpoint, so nothing signed proves it: a chain added whole (or one whose writer never checkpointed)"), nil
	}
	if h != nil {
		if p := checkHead(&rep, *h, headHash, cpAt, bad); p != nil {
			return rep, p, nil
		}
	}
	return rep, nil, nil
}

// checkLinks checks the link of every linked checkpoint of a chain (in Seq
// order) against the checkpoints present: the one it links to must be
// there and be the one it signed, unless retention cut the chain past it
// (its seq below the chain's first entry's, less one: retention keeps the
// checkpoint right before the first entry).
func checkLinks(rep *ChainReport, cps []store.AuditCheckpoint, cpAt map[int64]store.AuditCheckpoint, bad func(int64, string, ...any) *Problem) *Problem {
	for _, c := range cps {
		l, ok := LinkOf(c)
		if !ok {
			continue
		}
		switch p, found := cpAt[l.Seq]; {
		case l.Seq >= c.Seq:
			return bad(c.Seq, "the checkpoint links to a checkpoint at seq %d, not before it: forged", l.Seq)
		case l.Seq == 0, !found && l.Seq < rep.First-1:
			// The chain's first checkpoint, or one retention deleted.
		case !found:
			return bad(l.Seq, "the checkpoint at seq %d is missing, yet the checkpoint at seq %d links to it: deleted", l.Seq, c.Seq)
		case CheckpointDigest(p) != l.Digest:
			return bad(l.Seq, "the checkpoint at seq %d is not the one the checkpoint at seq %d links to: replaced", l.Seq, c.Seq)
		}
		rep.Linked++
	}
	return nil
}

// checkHead checks that the chain still holds h, the head file's
// checkpoint: the chain reaches h.Seq, its entry there has h's hash
// (headHash, read while verifying), and the checkpoint is the same, unless
// retention cut the chain past it.
func checkHead(rep *ChainReport, h store.AuditCheckpoint, headHash string, cpAt map[int64]store.AuditCheckpoint, bad func(int64, string, ...any) *Problem) *Problem {
	rep.HeadSeq = h.Seq
	if h.Seq > rep.Last {
		return bad(rep.Last+1, "the chain ends at seq %d, before seq %d of the head file's checkpoint: its end was cut, with its checkpoints", rep.Last, h.Seq)
	}
	if h.Seq >= rep.First && headHash != h.Hash {
		return bad(h.Seq, "the entry is not the one the head file's checkpoint names (hash %s): rewritten since", h.Hash)
	}
	if h.Seq < rep.First-1 {
		return nil // retention cut the chain past it: nothing left to compare
	}
	c, ok := cpAt[h.Seq]
	switch {
	case !ok:
		return bad(h.Seq, "the head file's checkpoint is no longer in the store: deleted")
	case c.Hash != h.Hash || c.KeyID != h.KeyID || msOf(c.At) != msOf(h.At) || !bytes.Equal(c.Signature, h.Signature):
		return bad(h.Seq, "the store's checkpoint is not the head file's: replaced")
	}
	return nil
}
