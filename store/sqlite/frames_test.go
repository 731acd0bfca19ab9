package sqlite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store"
)

// keyedCaller makes what a gateway's keyed call writes: a claim under a
// hashed key, then its completion with an audit entry.
type keyedCaller struct {
	s   *Store
	run string
	out []byte
	e   store.AuditEntry
}

func newKeyedCaller(s *Store) *keyedCaller {
	return &keyedCaller{s: s, run: fmt.Sprintf("gw_%x", time.Now().UnixNano()),
		out: []byte(`{"result":{"content":[{"type":"text","text":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}]}}`),
		e: store.AuditEntry{Chain: "gw/bench", Kind: "call", Subject: "bench", Server: "echo", Tool: "echo",
			ArgsDigest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Outcome: "ok", Instance: "bench"}}
}

func (k *keyedCaller) key(i int64) store.RecordKey {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d", k.run, i))
	return store.RecordKey{Scope: "gateway", RunID: k.run, ToolCallID: hex.EncodeToString(sum[:])}
}

func (k *keyedCaller) claim(ctx context.Context, i int64, exec string) error {
	now := time.Now()
	claimed, _, err := k.s.Claim(ctx, store.Record{RecordKey: k.key(i), Fingerprint: "sha256:fp", Owner: "bench", Executor: exec,
		LeaseUntil: now.Add(30 * time.Second), ExpiresAt: now.Add(24 * time.Hour)})
	if err == nil && !claimed {
		err = fmt.Errorf("call %d not claimed", i)
	}
	return err
}

func (k *keyedCaller) complete(ctx context.Context, i int64, exec string) error {
	e := k.e
	e.At = time.Now()
	_, err := k.s.CompleteAudited(ctx, k.key(i), exec, store.StateSucceeded, k.out, e, audit.Link)
	return err
}

// walFrames is the number of frames in s's WAL file.
func walFrames(tb testing.TB, s *Store) int64 {
	fi, err := os.Stat(s.Path() + "-wal")
	if err != nil {
		tb.Fatal(err)
	}
	if fi.Size() <= 32 {
		return 0
	}
	return (fi.Size() - 32) / (4096 + 24)
}

// truncateWAL checkpoints s's WAL and truncates it to nothing.
func truncateWAL(b *testing.B, s *Store) {
	var busy, log, done int64
	d := s.DB().(*sqlDB)
	if err := d.lockWriter(b.Context()); err != nil {
		b.Fatal(err)
	}
	defer d.unlockWriter()
	if err := d.wconn.QueryRowContext(b.Context(), "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &log, &done); err != nil || busy != 0 {
		b.Fatal(busy, log, done, err)
	}
	if n := walFrames(b, s); n != 0 {
		b.Fatalf("the WAL holds %d frames after its truncation", n)
	}
}

// BenchmarkKeyedFrames counts the WAL frames (pages written) and the
// transactions of a keyed call's writes, the checkpointer held off so that
// the WAL only grows: a claim alone, a completion with its audit entry
// alone, and whole calls from 4 callers at once (group commit), on a
// journal of 5,000 records. Deterministic where the CPU figures are not:
//
//	go test ./store/sqlite -run '^$' -bench BenchmarkKeyedFrames -benchtime 2000x
func BenchmarkKeyedFrames(b *testing.B) {
	for _, mode := range []string{"claim", "complete", "conc=4"} {
		b.Run(mode, func(b *testing.B) {
			ctx := b.Context()
			s, err := Open(ctx, filepath.Join(b.TempDir(), "f.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			cp := restartCheckpoints(s, checkpointOptions{every: 1 << 40, idle: time.Hour, limit: 1 << 40})
			k := newKeyedCaller(s)
			const prefill = 5000
			for i := int64(1); i <= prefill; i++ {
				if err := k.claim(ctx, i, "prefill"); err != nil {
					b.Fatal(err)
				}
				if err := k.complete(ctx, i, "prefill"); err != nil {
					b.Fatal(err)
				}
			}
			truncateWAL(b, s)
			first := int64(prefill + 1)
			if mode == "complete" {
				for i := first; i < first+int64(b.N); i++ {
					if err := k.claim(ctx, i, "w"); err != nil {
						b.Fatal(err)
					}
				}
				truncateWAL(b, s)
			}
			f0, c0 := walFrames(b, s), cp.commits.Load()
			b.ResetTimer()
			switch mode {
			case "claim":
				for i := first; i < first+int64(b.N); i++ {
					if err := k.claim(ctx, i, "w"); err != nil {
						b.Fatal(err)
					}
				}
			case "complete":
				for i := first; i < first+int64(b.N); i++ {
					if err := k.complete(ctx, i, "w"); err != nil {
						b.Fatal(err)
					}
				}
			default:
				var next atomic.Int64
				next.Store(first - 1)
				var wg sync.WaitGroup
				var failed atomic.Value
				for w := range 4 {
					wg.Go(func() {
						exec := fmt.Sprint("w", w)
						for i := next.Add(1); i < first+int64(b.N); i = next.Add(1) {
							if err := k.claim(ctx, i, exec); err != nil {
								failed.CompareAndSwap(nil, err)
								return
							}
							if err := k.complete(ctx, i, exec); err != nil {
								failed.CompareAndSwap(nil, err)
								return
							}
						}
					})
				}
				wg.Wait()
				if err, _ := failed.Load().(error); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(walFrames(b, s)-f0)/float64(b.N), "frames/op")
			b.ReportMetric(float64(cp.commits.Load()-c0)/float64(b.N), "commits/op")
		})
	}
}
