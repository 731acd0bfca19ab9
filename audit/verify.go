package audit

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"sort"

	"github.com/gatehouse-dev/gatehouse/store"
)

// VerifyOptions configure Verify. A nil *VerifyOptions means defaults.
type VerifyOptions struct {
	// PublicKey, when set, must have signed every checkpoint: an unsigned
	// one, or one signed by another key, is a Problem.
	PublicKey ed25519.PublicKey
	// Chain, when set, verifies that chain only.
	Chain string
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
	// them carry a signature that verified with the given key.
	Checkpoints, Signed int
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
// starting at 1 starts right after a checkpoint whose hash it links to, and
// that each checkpoint names an entry present with its hash (a checkpoint
// beyond the last entry means entries were deleted from the end) and, with
// o.PublicKey, is signed by it. It stops at the first problem. The error
// is for the store's failures only.
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
				chains = append(chains, c)
			}
		}
		sort.Strings(chains)
	}
	res := &Result{}
	for _, chain := range chains {
		rep, prob, err := verifyChain(ctx, st, chain, byChain[chain], &opts)
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

func verifyChain(ctx context.Context, st store.AuditStore, chain string, cps []store.AuditCheckpoint, o *VerifyOptions) (ChainReport, *Problem, error) {
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
	var prev *store.AuditEntry
	var after int64
	for {
		page, err := st.ReadAuditChain(ctx, chain, after, o.Page)
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
			prev = &page[i]
			rep.Last = e.Seq
			rep.Entries++
		}
		if len(page) < o.Page {
			break
		}
		after = page[len(page)-1].Seq
	}
	for _, c := range cps {
		if prev == nil {
			return rep, bad(c.Seq, "the chain has a checkpoint at seq %d but no entries: deleted", c.Seq), nil
		}
		if c.Seq > prev.Seq {
			return rep, bad(prev.Seq+1, "the chain ends at seq %d but a checkpoint names seq %d: entries were deleted from its end", prev.Seq, c.Seq), nil
		}
	}
	return rep, nil, nil
}
