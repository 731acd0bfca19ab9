package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/internal/cputime"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
)

// BenchmarkKeyedCall: what a keyed call through the gateway asks of
// PostgreSQL, from conc goroutines on fresh keys: a read of the key
// (durable.Journal.Guarded answers a recorded call first), the claim, and
// the completion with its audit entry (CompleteAudited, the gateway's
// default with audit.enabled), with group commit off ("single") and on
// ("group"). Besides ns/op (wall time per call) it reports
//
//   - rt/op: round trips to the server per call (pgx statements sent on
//     their own, BEGIN and COMMIT included, plus batches, each one);
//
//   - cpu-µs/op: this process's CPU per call;
//
//   - pg-cpu-µs/op: the CPU of every postgres process of this machine per
//     call (when /proc shows them; the test cluster is shared, so other
//     users add noise).
//
//     GATEHOUSE_TEST_POSTGRES=postgres://... go test -run '^$' -bench BenchmarkKeyedCall ./store/postgres/
func BenchmarkKeyedCall(b *testing.B) {
	for _, conc := range []int{1, 8} {
		for _, mode := range []string{"single", "group"} {
			b.Run(fmt.Sprintf("conc=%d/%s", conc, mode), func(b *testing.B) {
				var rt atomic.Int64
				_, cfg := freshSchema(b)
				c := cfg()
				c.ConnConfig.Tracer = &countTracer{n: &rt}
				s := openCfg(b, c, &store.Options{GroupCommit: map[string]store.GroupCommit{"single": store.GroupCommitOff, "group": store.GroupCommitOn}[mode]})
				benchKeyed(b, s, conc, &rt)
			})
		}
	}
}

// BenchmarkKeyedCallPool: BenchmarkKeyedCall at 8 callers with group
// commit off and on, against the pool's size (pgxpool's default is
// max(4, GOMAXPROCS) connections).
func BenchmarkKeyedCallPool(b *testing.B) {
	for _, conns := range []int32{2, 4, 8, 16} {
		for _, mode := range []string{"single", "group"} {
			b.Run(fmt.Sprintf("conns=%d/%s", conns, mode), func(b *testing.B) {
				var rt atomic.Int64
				_, cfg := freshSchema(b)
				c := cfg()
				c.MaxConns = conns
				c.ConnConfig.Tracer = &countTracer{n: &rt}
				s := openCfg(b, c, &store.Options{GroupCommit: map[string]store.GroupCommit{"single": store.GroupCommitOff, "group": store.GroupCommitOn}[mode]})
				benchKeyed(b, s, 8, &rt)
			})
		}
	}
}

func benchKeyed(b *testing.B, s *postgres.Store, conc int, rt *atomic.Int64) {
	ctx := context.Background()
	out := []byte(`{"content":[{"type":"text","text":"ok"}]}`)
	run := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	var next atomic.Int64
	var failed atomic.Value
	// Warm up: the statements are prepared and the chain's head read.
	for i := range 2 * conc {
		keyedCall(ctx, s, store.RecordKey{Scope: "bench", RunID: run + "-warm", ToolCallID: strconv.Itoa(i)}, "warm", out)
	}
	rt.Store(0)
	cpu0, pg0 := cputime.Start(b), pgCPU()
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range max(conc, 1) {
		wg.Go(func() {
			exec := fmt.Sprint("w", w)
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				k := store.RecordKey{Scope: "bench", RunID: run, ToolCallID: strconv.FormatInt(i, 10)}
				if err := keyedCall(ctx, s, k, exec, out); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	n := float64(b.N)
	b.ReportMetric(float64(rt.Load())/n, "rt/op")
	b.ReportMetric(float64((cputime.Start(b)-cpu0).Microseconds())/n, "cpu-µs/op")
	if pg0 >= 0 {
		b.ReportMetric(float64((pgCPU()-pg0).Microseconds())/n, "pg-cpu-µs/op")
	}
}

// keyedCall is one keyed call's store work, as durable.Journal.Guarded
// and the gateway do it.
func keyedCall(ctx context.Context, s *postgres.Store, k store.RecordKey, exec string, out []byte) error {
	if _, err := s.GetRecord(ctx, k); err == nil {
		return fmt.Errorf("key %s already recorded", k.ToolCallID)
	}
	now := time.Now()
	claimed, _, err := s.Claim(ctx, store.Record{RecordKey: k, Fingerprint: "fp", Owner: "bench", Executor: exec,
		LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)})
	if err != nil {
		return err
	}
	if !claimed {
		return fmt.Errorf("key %s not claimed", k.ToolCallID)
	}
	e := store.AuditEntry{Chain: "gw/bench", At: time.Now(), Kind: "call", Subject: "bench-subject", Server: "echo", Tool: "echo",
		ArgsDigest: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Outcome: "ok",
		Duration: time.Millisecond, Instance: "bench"}
	_, err = s.CompleteAudited(ctx, k, exec, store.StateSucceeded, out, e, audit.Link)
	return err
}

// countTracer counts round trips: each statement pgx sends on its own and
// each batch.
type countTracer struct{ n *atomic.Int64 }

func (t *countTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	t.n.Add(1)
	return ctx
}
func (t *countTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (t *countTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	t.n.Add(1)
	return ctx
}
func (t *countTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (t *countTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// pgCPU is the CPU of every process named postgres this machine's /proc
// shows (-1 when it shows none).
func pgCPU() time.Duration {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	found := false
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || !bytes.Contains(b[:i], []byte("(postgres")) {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(string(f[11]), 10, 64) // utime, field 14
		s, _ := strconv.ParseInt(string(f[12]), 10, 64) // stime, field 15
		ticks += u + s
		found = true
	}
	if !found {
		return -1
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ = 100 on Linux
}
