package audit_test

import (
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store"
)

// view is a store seen through a tamperer's edits: checkpoints and entries
// hidden or replaced (the SQL tampering is cmd/gatehouse's
// TestAuditVerifyCatchesTampering; this is the same on the memory store).
type view struct {
	store.AuditStore
	hideCP    func(c store.AuditCheckpoint) bool
	editCP    func(c store.AuditCheckpoint) store.AuditCheckpoint
	hideEntry func(e store.AuditEntry) bool
}

func (v *view) AuditCheckpoints(ctx context.Context, chain string) ([]store.AuditCheckpoint, error) {
	cps, err := v.AuditStore.AuditCheckpoints(ctx, chain)
	var out []store.AuditCheckpoint
	for _, c := range cps {
		if v.hideCP != nil && v.hideCP(c) {
			continue
		}
		if v.editCP != nil {
			c = v.editCP(c)
		}
		out = append(out, c)
	}
	return out, err
}

func (v *view) ReadAuditChain(ctx context.Context, chain string, after int64, limit int) ([]store.AuditEntry, error) {
	es, err := v.AuditStore.ReadAuditChain(ctx, chain, after, 0)
	if v.hideEntry != nil {
		es = slices.DeleteFunc(es, v.hideEntry)
	}
	if limit > 0 && len(es) > limit {
		es = es[:limit]
	}
	return es, err
}

func (v *view) AuditHeads(ctx context.Context) ([]store.AuditHead, error) {
	hs, err := v.AuditStore.AuditHeads(ctx)
	var out []store.AuditHead
	for _, h := range hs {
		es, _ := v.ReadAuditChain(ctx, h.Chain, 0, 0)
		if len(es) > 0 {
			out = append(out, h)
		}
	}
	return out, err
}

// signedTrail writes entries 1-12 of chain c through a Writer signing with
// key, a checkpoint after every 4 (4, 8, 12).
func signedTrail(t *testing.T, st store.AuditStore, key ed25519.PrivateKey) {
	t.Helper()
	ctx := t.Context()
	w, err := audit.NewWriter(ctx, st, &audit.WriterOptions{Chain: "c", Key: key, CheckpointEvery: 4, Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if err := w.Append(ctx, entry(i)); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func pubOf(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

// TestCheckpointsLinked: a writer's signed checkpoints each link to the one
// before (the first to none), Verify counts them linked, and a checkpoint
// deleted or replaced in the middle is named, with the key and without.
func TestCheckpointsLinked(t *testing.T) {
	ctx := t.Context()
	st := newStore(t)
	key := newKey(t)
	signedTrail(t, st, key)
	cps, _ := st.AuditCheckpoints(ctx, "c")
	if got := seqs(cps); !slices.Equal(got, []int64{4, 8, 12}) {
		t.Fatalf("checkpoints at %v, want 4 8 12", got)
	}
	for i, c := range cps {
		l, ok := audit.LinkOf(c)
		want := audit.CheckpointLink{}
		if i > 0 {
			want = audit.CheckpointLink{Seq: cps[i-1].Seq, Digest: audit.CheckpointDigest(cps[i-1])}
		}
		if !ok || l != want {
			t.Fatalf("checkpoint %d: link %+v %v, want %+v", c.Seq, l, ok, want)
		}
	}
	res, err := audit.Verify(ctx, st, &audit.VerifyOptions{PublicKey: pubOf(key)})
	if err != nil || res.Problem != nil || res.Chains[0].Linked != 3 || res.Chains[0].Signed != 3 {
		t.Fatalf("verify: %v %+v %+v", err, res.Problem, res.Chains)
	}

	for _, tc := range []struct {
		name string
		v    *view
		what string
	}{
		{"deleted", &view{AuditStore: st, hideCP: func(c store.AuditCheckpoint) bool { return c.Seq == 8 }}, "missing, yet the checkpoint at seq 12 links to it: deleted"},
		{"replaced", &view{AuditStore: st, editCP: func(c store.AuditCheckpoint) store.AuditCheckpoint {
			if c.Seq == 8 { // the same entry, re-signed as a chain's first: another checkpoint
				c = audit.Sign(key, store.AuditCheckpoint{Chain: c.Chain, Seq: c.Seq, Hash: c.Hash, At: c.At})
			}
			return c
		}}, "not the one the checkpoint at seq 12 links to: replaced"},
	} {
		for _, pub := range []ed25519.PublicKey{nil, pubOf(key)} {
			res, err := audit.Verify(ctx, tc.v, &audit.VerifyOptions{PublicKey: pub})
			if err != nil || res.Problem == nil || res.Problem.Seq != 8 || !strings.Contains(res.Problem.What, tc.what) {
				t.Errorf("%s (key %v): %v %+v", tc.name, pub != nil, err, res.Problem)
			}
		}
	}

	// A forged link (the signature no longer covers it) is a signature
	// that does not verify.
	forged := &view{AuditStore: st, editCP: func(c store.AuditCheckpoint) store.AuditCheckpoint {
		if c.Seq == 12 {
			c.Signature = slices.Clone(c.Signature)
			binary.BigEndian.PutUint64(c.Signature[1:9], 4)
		}
		return c
	}}
	res, _ = audit.Verify(ctx, forged, &audit.VerifyOptions{PublicKey: pubOf(key)})
	if res.Problem == nil || res.Problem.Seq != 12 || !strings.Contains(res.Problem.What, "does not verify") {
		t.Fatalf("forged link: %+v", res.Problem)
	}

	// Retention deletes the checkpoints the first one kept links to: that
	// link cannot be followed and is not a problem.
	if n, err := audit.Retain(ctx, st, at0.Add(time.Hour)); err != nil || n != 8 {
		t.Fatalf("retain: %d %v", n, err)
	}
	res, err = audit.Verify(ctx, st, &audit.VerifyOptions{PublicKey: pubOf(key)})
	if err != nil || res.Problem != nil || res.Chains[0].First != 9 || res.Chains[0].Linked != 2 {
		t.Fatalf("verify after retention: %v %+v %+v", err, res.Problem, res.Chains)
	}
}

func seqs(cps []store.AuditCheckpoint) []int64 {
	var out []int64
	for _, c := range cps {
		out = append(out, c.Seq)
	}
	return out
}

// v1Message is the message of a checkpoint signed before checkpoints were
// linked, frozen here as it was written (key.go before issue 34): a store
// written then must keep verifying.
func v1Message(c store.AuditCheckpoint) []byte {
	str := func(b []byte, s string) []byte { return append(binary.AppendUvarint(b, uint64(len(s))), s...) }
	b := str(nil, "gatehouse/audit/checkpoint/v1")
	b = str(b, c.Chain)
	b = binary.BigEndian.AppendUint64(b, uint64(c.Seq))
	b = str(b, c.Hash)
	return binary.BigEndian.AppendUint64(b, uint64(c.At.UnixMilli()))
}

// TestLegacyCheckpointsVerify: checkpoints signed before links (a bare
// signature over the v1 message) verify with the key, count as signed and
// not linked; a writer started on such a chain links its first checkpoint
// to the old one, whose deletion is then found.
func TestLegacyCheckpointsVerify(t *testing.T) {
	ctx := t.Context()
	st := newStore(t)
	key := newKey(t)
	for i := range 4 {
		e, err := audit.AppendOne(ctx, st, "c", entry(i))
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 { // the old writer's checkpoints, at 2 and 4
			c := store.AuditCheckpoint{Chain: "c", Seq: e.Seq, Hash: e.Hash, At: at0.Add(time.Duration(i) * time.Second), KeyID: audit.KeyID(pubOf(key))}
			c.Signature = ed25519.Sign(key, v1Message(c))
			if err := st.PutAuditCheckpoint(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	res, err := audit.Verify(ctx, st, &audit.VerifyOptions{PublicKey: pubOf(key)})
	if err != nil || res.Problem != nil || res.Chains[0].Signed != 2 || res.Chains[0].Linked != 0 {
		t.Fatalf("an old store: %v %+v %+v", err, res.Problem, res.Chains)
	}
	signedAppend(t, st, key, 2) // the new writer's checkpoint at 6 links to 4
	res, err = audit.Verify(ctx, st, &audit.VerifyOptions{PublicKey: pubOf(key)})
	if err != nil || res.Problem != nil || res.Chains[0].Signed != 3 || res.Chains[0].Linked != 1 {
		t.Fatalf("after a new checkpoint: %v %+v %+v", err, res.Problem, res.Chains)
	}
	hidden := &view{AuditStore: st, hideCP: func(c store.AuditCheckpoint) bool { return c.Seq == 4 }}
	if res, _ := audit.Verify(ctx, hidden, &audit.VerifyOptions{PublicKey: pubOf(key)}); res.Problem == nil || res.Problem.Seq != 4 {
		t.Fatalf("the old checkpoint the new one links to deleted: %+v", res.Problem)
	}
	// The old message does not verify as a linked one, nor the reverse.
	cps, _ := st.AuditCheckpoints(ctx, "c")
	bare := cps[2]
	bare.Signature = bare.Signature[len(bare.Signature)-ed25519.SignatureSize:]
	if err := audit.VerifyCheckpoint(pubOf(key), bare); err == nil {
		t.Fatal("a linked signature stripped of its link verified as a bare one")
	}
}

// signedAppend appends n entries to chain c through a Writer signing with
// key, and closes it (its checkpoint at the head).
func signedAppend(t *testing.T, st store.AuditStore, key ed25519.PrivateKey, n int) {
	t.Helper()
	ctx := t.Context()
	w, err := audit.NewWriter(ctx, st, &audit.WriterOptions{Chain: "c", Key: key})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := w.Append(ctx, entry(100+i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyNeedsACheckpointWithKey: with the public key, a chain with
// entries and no checkpoint at all (a chain added whole) is a problem;
// without it, it is not.
func TestVerifyNeedsACheckpointWithKey(t *testing.T) {
	ctx := t.Context()
	st := newStore(t)
	key := newKey(t)
	signedTrail(t, st, key)
	for i := range 3 {
		if _, err := audit.AppendOne(ctx, st, "gw/fake", entry(i)); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := audit.Verify(ctx, st, nil); err != nil || res.Problem != nil {
		t.Fatalf("without the key: %v %+v", err, res.Problem)
	}
	res, err := audit.Verify(ctx, st, &audit.VerifyOptions{PublicKey: pubOf(key)})
	if err != nil || res.Problem == nil || res.Problem.Chain != "gw/fake" || res.Problem.Seq != 1 || !strings.Contains(res.Problem.What, "no checkpoint") {
		t.Fatalf("with the key: %v %+v", err, res.Problem)
	}
}

// TestVerifyExpectChains: a chain expected and absent (no entry, no
// checkpoint) is a problem at seq 0; one present is not; --chain limits the
// expectations to that chain.
func TestVerifyExpectChains(t *testing.T) {
	ctx := t.Context()
	st := newStore(t)
	signedTrail(t, st, newKey(t))
	if res, err := audit.Verify(ctx, st, &audit.VerifyOptions{ExpectChains: []string{"c"}}); err != nil || res.Problem != nil {
		t.Fatalf("present: %v %+v", err, res.Problem)
	}
	res, err := audit.Verify(ctx, st, &audit.VerifyOptions{ExpectChains: []string{"c", "operator"}})
	if err != nil || res.Problem == nil || res.Problem.Chain != "operator" || res.Problem.Seq != 0 || !strings.Contains(res.Problem.What, "missing") {
		t.Fatalf("absent: %v %+v", err, res.Problem)
	}
	if res, _ := audit.Verify(ctx, st, &audit.VerifyOptions{Chain: "c", ExpectChains: []string{"operator"}}); res.Problem != nil {
		t.Fatalf("--chain c with another chain expected: %+v", res.Problem)
	}
}

// TestVerifyExpectHead: a head read from the store, written and parsed
// again, verifies; each way the store can stop holding it is named: the
// chain deleted, its end cut with its checkpoints, the entry rewritten,
// the checkpoint deleted or replaced; a head edited is refused with the
// key; a head retention has cut past still verifies.
func TestVerifyExpectHead(t *testing.T) {
	ctx := t.Context()
	st := newStore(t)
	key := newKey(t)
	signedTrail(t, st, key)
	if _, err := audit.AppendCheckpointed(ctx, st, audit.OperatorChain, entry(1), key); err != nil {
		t.Fatal(err)
	}
	h, unsigned, err := audit.LatestHead(ctx, st, at0)
	if err != nil || len(unsigned) != 0 || len(h.Chains) != 2 || h.Chains[0].Chain != "c" || h.Chains[0].Seq != 12 || h.Chains[1].Chain != audit.OperatorChain {
		t.Fatalf("head %+v %v %v", h, unsigned, err)
	}
	b, err := h.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	head, err := audit.ParseHead(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	opts := &audit.VerifyOptions{PublicKey: pubOf(key), ExpectHead: head}
	res, err := audit.Verify(ctx, st, opts)
	if err != nil || res.Problem != nil || res.Chains[0].HeadSeq != 12 {
		t.Fatalf("verify: %v %+v %+v", err, res.Problem, res.Chains)
	}
	cut := func(from int64) *view {
		return &view{AuditStore: st, hideEntry: func(e store.AuditEntry) bool { return e.Chain == "c" && e.Seq >= from },
			hideCP: func(c store.AuditCheckpoint) bool { return c.Chain == "c" && c.Seq >= from }}
	}
	for _, tc := range []struct {
		name  string
		st    store.AuditStore
		chain string
		seq   int64
		what  string
	}{
		{"chain deleted", cut(1), "c", 0, "the chain is missing"},
		{"end cut with its checkpoints", cut(10), "c", 10, "ends at seq 9, before seq 12"},
		{"checkpoint deleted", &view{AuditStore: st, hideCP: func(c store.AuditCheckpoint) bool { return c.Chain == "c" && c.Seq == 12 }}, "c", 12, "no longer in the store"},
		{"checkpoint replaced", &view{AuditStore: st, editCP: func(c store.AuditCheckpoint) store.AuditCheckpoint {
			if c.Chain == "c" && c.Seq == 12 { // re-signed (by whoever holds the key) at another time
				c = audit.Sign(key, store.AuditCheckpoint{Chain: c.Chain, Seq: c.Seq, Hash: c.Hash, At: c.At.Add(time.Second)})
			}
			return c
		}}, "c", 12, "replaced"},
	} {
		for _, pub := range []ed25519.PublicKey{nil, pubOf(key)} {
			res, err := audit.Verify(ctx, tc.st, &audit.VerifyOptions{PublicKey: pub, ExpectHead: head})
			if err != nil || res.Problem == nil || res.Problem.Chain != tc.chain || res.Problem.Seq != tc.seq || !strings.Contains(res.Problem.What, tc.what) {
				t.Errorf("%s (key %v): %v %+v", tc.name, pub != nil, err, res.Problem)
			}
		}
	}
	// Without the head, the end cut with its checkpoints verifies: what
	// the head file is for.
	if res, _ := audit.Verify(ctx, cut(10), &audit.VerifyOptions{PublicKey: pubOf(key)}); res.Problem != nil {
		t.Fatalf("a cut end caught without the head? %+v", res.Problem)
	}

	// An entry rewritten (its hash changed) under the head's checkpoint.
	rewritten := &head2{AuditStore: st}
	res, _ = audit.Verify(ctx, rewritten, &audit.VerifyOptions{ExpectHead: head})
	if res.Problem == nil || res.Problem.Seq != 12 || !strings.Contains(res.Problem.What, "not the one the head file's checkpoint names") {
		t.Fatalf("rewritten: %+v", res.Problem)
	}

	// The head file edited: with the key its checkpoint is refused.
	edited := *head
	edited.Chains = slices.Clone(head.Chains)
	edited.Chains[0].Seq = 11
	res, _ = audit.Verify(ctx, st, &audit.VerifyOptions{PublicKey: pubOf(key), ExpectHead: &edited})
	if res.Problem == nil || res.Problem.Seq != 11 || !strings.Contains(res.Problem.What, "the head file's checkpoint refused") {
		t.Fatalf("edited head: %+v", res.Problem)
	}

	// Retention past the head's checkpoint: nothing left to compare, no
	// problem (the chain goes on beyond it).
	signedAppend(t, st, key, 6) // 13-18, a checkpoint at 18
	if _, err := audit.Retain(ctx, st, at0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	res, err = audit.Verify(ctx, st, opts)
	if err != nil || res.Problem != nil || res.Chains[0].First != 13 {
		t.Fatalf("after retention to the head: %v %+v %+v", err, res.Problem, res.Chains)
	}
	signedAppend(t, st, key, 6) // 19-24
	if n, err := audit.Retain(ctx, st, at0.Add(time.Hour)); err != nil || n == 0 {
		t.Fatalf("retain: %d %v", n, err)
	}
	res, err = audit.Verify(ctx, st, opts)
	if err != nil || res.Problem != nil || res.Chains[0].First <= 13 {
		t.Fatalf("after retention past the head: %v %+v %+v", err, res.Problem, res.Chains)
	}
}

// head2 shows entry 12 of chain c with another hash (rewritten, its hash
// recomputed) and the checkpoint at 12 following it.
type head2 struct{ store.AuditStore }

func (h *head2) ReadAuditChain(ctx context.Context, chain string, after int64, limit int) ([]store.AuditEntry, error) {
	es, err := h.AuditStore.ReadAuditChain(ctx, chain, after, limit)
	for i, e := range es {
		if e.Chain == "c" && e.Seq == 12 {
			e.Subject = "mallory"
			e.Hash = audit.Hash(e)
			es[i] = e
		}
	}
	return es, err
}

func (h *head2) AuditCheckpoints(ctx context.Context, chain string) ([]store.AuditCheckpoint, error) {
	cps, err := h.AuditStore.AuditCheckpoints(ctx, chain)
	es, _ := h.ReadAuditChain(ctx, "c", 11, 1)
	for i, c := range cps {
		if c.Chain == "c" && c.Seq == 12 && len(es) == 1 {
			cps[i].Hash = es[0].Hash
		}
	}
	return cps, err
}

// TestAppendCheckpointed: an operator's entry is checkpointed at once,
// signed and linked with a key; unsigned without one on an unsigned store;
// and without a checkpoint (ErrNotCheckpointed, the entry written) on a
// store whose checkpoints are signed.
func TestAppendCheckpointed(t *testing.T) {
	ctx := t.Context()
	key := newKey(t)

	st := newStore(t)
	for i := range 3 {
		e, err := audit.AppendCheckpointed(ctx, st, audit.OperatorChain, entry(i), key)
		if err != nil || e.Seq != int64(i+1) {
			t.Fatalf("%d: %+v %v", i, e, err)
		}
	}
	res, err := audit.Verify(ctx, st, &audit.VerifyOptions{PublicKey: pubOf(key)})
	if err != nil || res.Problem != nil || res.Chains[0].Signed != 3 || res.Chains[0].Linked != 3 {
		t.Fatalf("signed: %v %+v %+v", err, res.Problem, res.Chains)
	}
	e, err := audit.AppendCheckpointed(ctx, st, audit.OperatorChain, entry(4), nil)
	if !errors.Is(err, audit.ErrNotCheckpointed) || e.Seq != 4 {
		t.Fatalf("no key on a signed chain: %+v %v", e, err)
	}
	if res, _ := audit.Verify(ctx, st, &audit.VerifyOptions{PublicKey: pubOf(key)}); res.Problem != nil {
		t.Fatalf("the entry without a checkpoint broke the chain: %+v", res.Problem)
	}

	// A store whose only signed checkpoints are a gateway's: the operators'
	// first entry without a key is not checkpointed either.
	st2 := newStore(t)
	signedTrail(t, st2, key)
	if _, err := audit.AppendCheckpointed(ctx, st2, audit.OperatorChain, entry(1), nil); !errors.Is(err, audit.ErrNotCheckpointed) {
		t.Fatalf("no key, a signed store: %v", err)
	}

	// An unsigned store: unsigned checkpoints.
	st3 := newStore(t)
	if _, err := audit.AppendCheckpointed(ctx, st3, audit.OperatorChain, entry(1), nil); err != nil {
		t.Fatal(err)
	}
	cps, _ := st3.AuditCheckpoints(ctx, audit.OperatorChain)
	if len(cps) != 1 || cps[0].Seq != 1 || cps[0].Signature != nil {
		t.Fatalf("unsigned: %+v", cps)
	}
}

// TestWriterFirstCheckpoint: a new chain gets its first checkpoint within
// FirstCheckpoint of its first entry, without Close; a writer started on a
// chain that has one links its next checkpoint to it.
func TestWriterFirstCheckpoint(t *testing.T) {
	ctx := t.Context()
	st := newStore(t)
	key := newKey(t)
	w, err := audit.NewWriter(ctx, st, &audit.WriterOptions{Chain: "c", Key: key, FirstCheckpoint: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the timer fires on an empty chain: nothing to do, re-armed
	if err := w.Append(ctx, entry(1)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var cps []store.AuditCheckpoint
	for len(cps) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		cps, _ = st.AuditCheckpoints(ctx, "c")
	}
	if len(cps) != 1 || cps[0].Seq != 1 {
		t.Fatalf("no first checkpoint before Close: %+v", cps)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	signedAppend(t, st, key, 2)
	cps, _ = st.AuditCheckpoints(ctx, "c")
	if l, ok := audit.LinkOf(cps[len(cps)-1]); !ok || l.Seq != 1 || l.Digest != audit.CheckpointDigest(cps[0]) {
		t.Fatalf("the next writer's checkpoint links to %+v", l)
	}
}

// TestReadSigningKey: the key of audit.signingKeyFile or signingKeyEnv,
// none when neither is named, and an error naming the file or variable.
func TestReadSigningKey(t *testing.T) {
	key := newKey(t)
	pemKey, _ := audit.MarshalPrivateKey(key)
	dir := t.TempDir()
	file := filepath.Join(dir, "audit.key")
	if err := os.WriteFile(file, pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GH_TEST_AUDIT_KEY", string(pemKey))
	t.Setenv("GH_TEST_EMPTY", " ")
	if k, err := audit.ReadSigningKey(file, ""); err != nil || !k.Equal(key) {
		t.Fatalf("file: %v", err)
	}
	if k, err := audit.ReadSigningKey("", "GH_TEST_AUDIT_KEY"); err != nil || !k.Equal(key) {
		t.Fatalf("env: %v", err)
	}
	if k, err := audit.ReadSigningKey("", ""); err != nil || k != nil {
		t.Fatalf("none: %v %v", k, err)
	}
	for _, tc := range []struct{ file, env, want string }{
		{filepath.Join(dir, "absent.key"), "", "audit.signingKeyFile " + filepath.Join(dir, "absent.key") + ": open"},
		{"", "GH_TEST_EMPTY", "audit.signingKeyEnv $GH_TEST_EMPTY: the variable is unset or empty"},
		{"", "GH_TEST_UNSET_VARIABLE", "$GH_TEST_UNSET_VARIABLE: the variable is unset or empty"},
	} {
		if _, err := audit.ReadSigningKey(tc.file, tc.env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %q: %v, want %q", tc.file, tc.env, err, tc.want)
		}
	}
	bad := filepath.Join(dir, "bad.key")
	os.WriteFile(bad, []byte("not a key"), 0o600)
	if _, err := audit.ReadSigningKey(bad, ""); !errors.Is(err, audit.ErrKey) || !strings.Contains(err.Error(), bad) {
		t.Errorf("bad key: %v", err)
	}
}

// TestAppendCheckpointedConcurrent: operators' commands racing on the
// operators' chain (each appends, then checkpoints its entry linked to the
// latest checkpoint it saw before it) leave a chain that verifies with the
// key: a checkpoint may link past one written meanwhile, never to one that
// is not there.
func TestAppendCheckpointedConcurrent(t *testing.T) {
	ctx := t.Context()
	st := newStore(t)
	key := newKey(t)
	errs := make(chan error, 8*5)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 5 {
				_, err := audit.AppendCheckpointed(ctx, st, audit.OperatorChain, entry(g*10+i), key)
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	res, err := audit.Verify(ctx, st, &audit.VerifyOptions{PublicKey: pubOf(key)})
	if err != nil || res.Problem != nil || res.Chains[0].Entries != 40 || res.Chains[0].Signed != 40 || res.Chains[0].Linked != 40 {
		t.Fatalf("verify: %v %+v %+v", err, res.Problem, res.Chains)
	}
}
