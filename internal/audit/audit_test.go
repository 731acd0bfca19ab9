package audit_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/memory"
)

func newStore(t *testing.T) *memory.Store {
	s, err := memory.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newStoreB(b *testing.B) *memory.Store {
	s, err := memory.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func newKey(t *testing.T) ed25519.PrivateKey {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var at0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func entry(i int) store.AuditEntry {
	return store.AuditEntry{At: at0.Add(time.Duration(i) * time.Second), Kind: audit.KindCall, Subject: "alice", Server: "srv",
		Tool: "echo", ArgsDigest: audit.ArgsDigest(json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))), Outcome: "ok", Duration: time.Millisecond}
}

// TestHashCoversEveryField: changing any field the hash covers changes it.
func TestHashCoversEveryField(t *testing.T) {
	e := audit.Link(store.AuditEntry{At: at0, Kind: "call", Subject: "s", Server: "v", Tool: "t", ArgsDigest: "d", Outcome: "ok",
		Duration: time.Millisecond, Instance: "i", Detail: []byte(`{}`)}, store.AuditHead{Chain: "c", Last: 4, Hash: "p"})
	muts := map[string]func(*store.AuditEntry){
		"chain": func(e *store.AuditEntry) { e.Chain = "c2" }, "seq": func(e *store.AuditEntry) { e.Seq++ },
		"at": func(e *store.AuditEntry) { e.At = e.At.Add(time.Millisecond) }, "kind": func(e *store.AuditEntry) { e.Kind = "trust" },
		"subject": func(e *store.AuditEntry) { e.Subject = "s2" }, "server": func(e *store.AuditEntry) { e.Server = "v2" },
		"tool": func(e *store.AuditEntry) { e.Tool = "t2" }, "digest": func(e *store.AuditEntry) { e.ArgsDigest = "d2" },
		"outcome":  func(e *store.AuditEntry) { e.Outcome = "denied" },
		"duration": func(e *store.AuditEntry) { e.Duration += time.Microsecond },
		"instance": func(e *store.AuditEntry) { e.Instance = "i2" }, "detail": func(e *store.AuditEntry) { e.Detail = []byte(`{"a":1}`) },
		"prev": func(e *store.AuditEntry) { e.PrevHash = "q" },
		// Moving bytes between adjacent fields must not keep the hash.
		"boundary": func(e *store.AuditEntry) { e.Subject, e.Server = "sv", "" },
	}
	for name, mut := range muts {
		x := e
		mut(&x)
		if audit.Hash(x) == e.Hash {
			t.Errorf("%s: the hash did not change", name)
		}
	}
	if audit.Hash(e) != e.Hash || e.Seq != 5 || e.PrevHash != "p" {
		t.Fatalf("Link: %+v", e)
	}
}

func TestArgsDigestCanonical(t *testing.T) {
	a := audit.ArgsDigest(json.RawMessage(`{"b":1,"a":"x"}`))
	b := audit.ArgsDigest(json.RawMessage(`{ "a" : "x", "b" : 1.0 }`))
	if a != b || len(a) != 64 {
		t.Fatalf("digests %q %q", a, b)
	}
	if audit.ArgsDigest(nil) != audit.ArgsDigest(json.RawMessage(`{}`)) {
		t.Fatal("absent arguments are not {}")
	}
	if d := audit.ArgsDigest(json.RawMessage(`{"a":1,"a":2}`)); !strings.HasPrefix(d, "raw:") {
		t.Fatalf("non-canonical JSON: %q", d)
	}
	if strings.Contains(a, "x") && strings.Contains(a, `"a"`) {
		t.Fatal("the digest carries the arguments")
	}
}

// TestWriterChainsAndCheckpoints: entries appended through a writer verify,
// its checkpoints are signed by its key, and a verifier holding another
// key refuses them.
func TestWriterChainsAndCheckpoints(t *testing.T) {
	ctx := t.Context()
	st := newStore(t)
	key := newKey(t)
	w, err := audit.NewWriter(ctx, st, &audit.WriterOptions{Chain: "gw/a", Instance: "a", Key: key, CheckpointEvery: 5, Batch: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if err := w.Append(ctx, entry(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, entry(0)); !errors.Is(err, audit.ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	h, _ := st.AuditHead(ctx, "gw/a")
	if h.Last != 12 {
		t.Fatalf("head %+v", h)
	}
	cps, _ := st.AuditCheckpoints(ctx, "gw/a")
	if len(cps) < 2 || cps[len(cps)-1].Seq != 12 {
		t.Fatalf("checkpoints %+v: want some, the last at the head (Close)", cps)
	}
	res, err := audit.Verify(ctx, st, &audit.VerifyOptions{PublicKey: key.Public().(ed25519.PublicKey)})
	if err != nil || res.Problem != nil {
		t.Fatalf("verify: %v %v", err, res.Problem)
	}
	if r := res.Chains[0]; r.Entries != 12 || r.Signed != len(cps) {
		t.Fatalf("report %+v", r)
	}
	es, _ := st.ReadAuditChain(ctx, "gw/a", 0, 1)
	if es[0].Instance != "a" {
		t.Fatalf("instance %q", es[0].Instance)
	}

	// The attack: a checkpoint signed by another key.
	other := newKey(t)
	res, err = audit.Verify(ctx, st, &audit.VerifyOptions{PublicKey: other.Public().(ed25519.PublicKey)})
	if err != nil || res.Problem == nil || !strings.Contains(res.Problem.What, "signed by key") {
		t.Fatalf("verify with another key: %v %+v", err, res.Problem)
	}
	// A forged checkpoint of another key over the real head.
	st2 := newStore(t)
	if _, err := audit.AppendOne(ctx, st2, "c", entry(1)); err != nil {
		t.Fatal(err)
	}
	h2, _ := st2.AuditHead(ctx, "c")
	forged := audit.Sign(other, store.AuditCheckpoint{Chain: "c", Seq: 1, Hash: h2.Hash, At: at0})
	forged.KeyID = audit.KeyID(key.Public().(ed25519.PublicKey)) // claims the right key
	if err := st2.PutAuditCheckpoint(ctx, forged); err != nil {
		t.Fatal(err)
	}
	res, _ = audit.Verify(ctx, st2, &audit.VerifyOptions{PublicKey: key.Public().(ed25519.PublicKey)})
	if res.Problem == nil || !strings.Contains(res.Problem.What, "does not verify") {
		t.Fatalf("forged signature: %+v", res.Problem)
	}
}

// TestWritersShareAChain: two writers of one chain (a misconfiguration, or
// one chain for every replica) re-read the head on a conflict: nothing is
// lost and the chain verifies.
func TestWritersShareAChain(t *testing.T) {
	ctx := t.Context()
	st := newStore(t)
	var ws []*audit.Writer
	for i := range 2 {
		w, err := audit.NewWriter(ctx, st, &audit.WriterOptions{Chain: "shared", Instance: fmt.Sprint(i), Batch: 2})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			for i := range 50 {
				if err := w.Append(ctx, entry(i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, w := range ws {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	res, err := audit.Verify(ctx, st, nil)
	if err != nil || res.Problem != nil || res.Chains[0].Entries != 100 {
		t.Fatalf("verify: %v %+v %+v", err, res.Problem, res.Chains)
	}
}

// stuckStore holds every AppendAudit until released.
type stuckStore struct {
	store.AuditStore
	release chan struct{}
	entered chan struct{}
	once    sync.Once
}

func (s *stuckStore) AppendAudit(ctx context.Context, es []store.AuditEntry) error {
	s.once.Do(func() { close(s.entered) })
	<-s.release
	return s.AuditStore.AppendAudit(ctx, es)
}

// TestWriterBlocksWhenFull: with the store stuck, the queue fills and
// Append waits (a caller that gives up gets its context's error, the
// others wait); once the store moves, every entry accepted is written.
func TestWriterBlocksWhenFull(t *testing.T) {
	ctx := t.Context()
	st := &stuckStore{AuditStore: newStore(t), release: make(chan struct{}), entered: make(chan struct{})}
	w, err := audit.NewWriter(ctx, st, &audit.WriterOptions{Chain: "c", Queue: 4, Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, entry(0)); err != nil {
		t.Fatal(err)
	}
	<-st.entered // entry 0 is in the stuck append; the queue is empty
	for i := 1; i <= 4; i++ {
		if err := w.Append(ctx, entry(i)); err != nil {
			t.Fatal(err)
		}
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.Append(gone, entry(99)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append to a full queue with a done context: %v, want it refused", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- w.Append(ctx, entry(5)) }()
	close(st.release)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	es, _ := st.ReadAuditChain(ctx, "c", 0, 0)
	if len(es) != 6 {
		t.Fatalf("%d entries written, want 6 (0-5, not the refused one)", len(es))
	}
	for i, e := range es {
		if e.ArgsDigest != entry(i).ArgsDigest {
			t.Fatalf("entry %d out of order", i)
		}
	}
}

func TestRetainKeepsAVerifiableChain(t *testing.T) {
	ctx := t.Context()
	st := newStore(t)
	key := newKey(t)
	now := at0
	w, err := audit.NewWriter(ctx, st, &audit.WriterOptions{Chain: "c", Key: key, CheckpointEvery: 4, Batch: 1, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 { // entries at at0+0s..9s, checkpoints at 4 and 8 (and 10 at Close)
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
	n, err := audit.Retain(ctx, st, at0.Add(6*time.Second)) // entries 1-6 are older; the checkpoint before is at 4
	if err != nil || n != 4 {
		t.Fatalf("retain: %d, %v; want 4 deleted", n, err)
	}
	res, err := audit.Verify(ctx, st, &audit.VerifyOptions{PublicKey: key.Public().(ed25519.PublicKey)})
	if err != nil || res.Problem != nil || res.Chains[0].First != 5 {
		t.Fatalf("verify after retention: %v %+v %+v", err, res.Problem, res.Chains)
	}
	if n, err := audit.Retain(ctx, st, at0.Add(time.Hour)); err != nil || n != 4 { // to the checkpoint at 8; 10 is the head
		t.Fatalf("retain all: %d, %v", n, err)
	}
}

func TestExportFormats(t *testing.T) {
	ctx := t.Context()
	st := newStore(t)
	for i := range 3 {
		e := entry(i)
		e.Detail = audit.Detail(map[string]string{"approval": "ap1"})
		if _, err := audit.AppendOne(ctx, st, "c", e); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	n, err := audit.Export(ctx, st, &buf, &audit.ExportOptions{Filter: store.AuditFilter{Since: at0.Add(time.Second)}, Page: 1})
	if err != nil || n != 2 {
		t.Fatalf("export: %d, %v", n, err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var je audit.JSONEntry
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &je) != nil || je.Seq != 2 || je.Hash == "" || string(je.Detail) != `{"approval":"ap1"}` {
		t.Fatalf("jsonl: %q", buf.String())
	}
	buf.Reset()
	if _, err := audit.Export(ctx, st, &buf, &audit.ExportOptions{Format: audit.FormatOTel}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ResourceLogs []struct {
			ScopeLogs []struct {
				LogRecords []struct {
					TimeUnixNano string
					Attributes   []struct {
						Key   string
						Value map[string]any
					}
				}
			}
		}
	}
	lines = strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || json.Unmarshal([]byte(lines[2]), &doc) != nil {
		t.Fatalf("otel: %q", buf.String())
	}
	rec := doc.ResourceLogs[0].ScopeLogs[0].LogRecords[0]
	if rec.TimeUnixNano != fmt.Sprint(at0.Add(2*time.Second).UnixNano()) {
		t.Fatalf("time %s", rec.TimeUnixNano)
	}
	found := false
	for _, a := range rec.Attributes {
		if a.Key == "gatehouse.audit.seq" && a.Value["intValue"] == "3" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no seq attribute as an OTLP intValue string: %s", lines[2])
	}
	if _, err := audit.Export(ctx, st, &buf, &audit.ExportOptions{Format: "xml"}); err == nil {
		t.Fatal("format xml accepted")
	}
}

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{"90d": 90 * 24 * time.Hour, "36h": 36 * time.Hour, " 1d ": 24 * time.Hour, "1m30s": 90 * time.Second}
	for in, want := range good {
		if d, err := audit.ParseDuration(in); err != nil || d != want {
			t.Errorf("%q: %v, %v; want %v", in, d, err, want)
		}
	}
	for _, in := range []string{"", "  ", "d", "0d", "-1d", "+1d", "1.5d", "36501d", "99999999999999999999d", "0s", "-5m", "90", "ninety days", "9 0d", "1dd"} {
		if _, err := audit.ParseDuration(in); !errors.Is(err, audit.ErrDuration) {
			t.Errorf("%q accepted (%v)", in, err)
		}
	}
}

func TestParseSince(t *testing.T) {
	now := at0
	good := map[string]time.Time{"2026-02-01T00:00:00Z": time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), "2026-02-01": time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC),
		"24h": now.Add(-24 * time.Hour), "7d": now.Add(-7 * 24 * time.Hour)}
	for in, want := range good {
		if got, err := audit.ParseSince(in, now); err != nil || !got.Equal(want) {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "yesterday", "2026-13-01", "2026-02-01T25:00:00Z", "-24h", "0d"} {
		if _, err := audit.ParseSince(in, now); !errors.Is(err, audit.ErrDuration) {
			t.Errorf("%q accepted (%v)", in, err)
		}
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"90d", "36h", "1m30s", "0d", "-1d", "1.5d", "36501d", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := audit.ParseDuration(s)
		if err != nil {
			if !errors.Is(err, audit.ErrDuration) {
				t.Fatalf("%q: an error not wrapping ErrDuration: %v", s, err)
			}
			return
		}
		if d <= 0 {
			t.Fatalf("%q: %v accepted, not positive", s, d)
		}
		if _, err := audit.ParseSince(s, at0); err != nil {
			t.Fatalf("%q: a duration ParseSince refuses: %v", s, err)
		}
	})
}

func TestParseKeys(t *testing.T) {
	k := newKey(t)
	priv, _ := audit.MarshalPrivateKey(k)
	pub, _ := audit.MarshalPublicKey(k.Public().(ed25519.PublicKey))
	if got, err := audit.ParsePrivateKey(priv); err != nil || !got.Equal(k) {
		t.Fatalf("PEM private: %v", err)
	}
	if got, err := audit.ParsePrivateKey([]byte(base64.StdEncoding.EncodeToString(k.Seed()) + "\n")); err != nil || !got.Equal(k) {
		t.Fatalf("base64 seed: %v", err)
	}
	if got, err := audit.ParsePublicKey(pub); err != nil || !got.Equal(k.Public()) {
		t.Fatalf("PEM public: %v", err)
	}
	if got, err := audit.ParsePublicKey([]byte(base64.StdEncoding.EncodeToString(k.Public().(ed25519.PublicKey)))); err != nil || !got.Equal(k.Public()) {
		t.Fatalf("base64 public: %v", err)
	}
	bad := map[string][]byte{
		"empty": nil, "spaces": []byte("  \n"), "not base64": []byte("not a key!"),
		"short seed":        []byte(base64.StdEncoding.EncodeToString(make([]byte, 31))),
		"public as private": pub, "private as public": priv,
		"trailing text": append(append([]byte{}, priv...), "junk"...),
		"bad DER":       []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"),
	}
	for name, in := range bad {
		_, err1 := audit.ParsePrivateKey(in)
		if name != "private as public" && !errors.Is(err1, audit.ErrKey) {
			t.Errorf("private %s: %v", name, err1)
		}
		_, err2 := audit.ParsePublicKey(in)
		if name != "public as private" && name != "short seed" && !errors.Is(err2, audit.ErrKey) {
			t.Errorf("public %s: %v", name, err2)
		}
	}
	if _, err := audit.ParsePublicKey([]byte(base64.StdEncoding.EncodeToString(make([]byte, 31)))); !errors.Is(err, audit.ErrKey) {
		t.Errorf("short public key: %v", err)
	}
}

// TestWriterStoreClosed: a store closed under the writer loses the queued
// entries, says so at Close, and ends the writer at once (no retry against
// a store that will never answer).
func TestWriterStoreClosed(t *testing.T) {
	ctx := t.Context()
	st := newStore(t)
	w, err := audit.NewWriter(ctx, st, &audit.WriterOptions{Chain: "c", CloseTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if err := w.Append(ctx, entry(1)); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Flush over a closed store: %v", err)
	}
	if err := w.Close(); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Close: %v", err)
	}
}

// TestAppendDigesting: an entry queued with its arguments gets their
// digest, computed by the writer from a copy: the caller's buffer
// changed after the call returns changes nothing; canonical and
// non-canonical arguments digest as ArgsDigest does; entries queued with
// and without arguments interleave in order.
func TestAppendDigesting(t *testing.T) {
	ctx := t.Context()
	st := newStore(t)
	w, err := audit.NewWriter(ctx, st, &audit.WriterOptions{Chain: "gw/d", Instance: "d", Linger: -1})
	if err != nil {
		t.Fatal(err)
	}
	args := []json.RawMessage{[]byte(`{"a":1,"b":"x"}`), []byte(`{ "b": "x", "a": 1 }`), nil, []byte(`not json`)}
	var want []string
	for i, a := range args {
		buf := append([]byte(nil), a...)
		if err := w.AppendDigesting(ctx, store.AuditEntry{Kind: audit.KindCall, Subject: "alice", Outcome: "ok"}, buf); err != nil {
			t.Fatal(err)
		}
		for j := range buf {
			buf[j] = 'Z' // the caller reuses its buffer
		}
		want = append(want, audit.ArgsDigest(a))
		if i == 1 {
			if err := w.Append(ctx, entry(7)); err != nil {
				t.Fatal(err)
			}
			want = append(want, entry(7).ArgsDigest)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := st.ReadAuditChain(ctx, "gw/d", 0, 0)
	if err != nil || len(got) != len(want) {
		t.Fatalf("%d entries, %v; want %d", len(got), err, len(want))
	}
	for i, e := range got {
		if e.ArgsDigest != want[i] {
			t.Errorf("entry %d: digest %q, want %q", i+1, e.ArgsDigest, want[i])
		}
	}
	if want[0] != want[1] || want[0] == want[2] || !strings.HasPrefix(want[4], "raw:") {
		t.Fatalf("the digests compared are not the ones meant: %q", want)
	}
}
