package audit_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
)

// BenchmarkAuditTwoWritersPostgres: two writers (two replicas) appending
// to PostgreSQL, each to its own chain or both to one chain (appends
// serialized by the store: a writer whose batch does not follow the head
// re-reads it and tries again). One op is one entry appended and
// committed; 8 callers per writer keep its queue busy.
func BenchmarkAuditTwoWritersPostgres(b *testing.B) {
	for _, shared := range []bool{false, true} {
		b.Run(fmt.Sprintf("sharedChain=%v", shared), func(b *testing.B) {
			ctx := context.Background()
			dsn := pgtest.Schema(b, "audit_bench", "the audit writers benchmark on PostgreSQL")
			var ws []*audit.Writer
			for i := range 2 {
				st, err := postgres.Open(ctx, dsn, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				chain := fmt.Sprintf("gw/%d", i)
				if shared {
					chain = "gw/shared"
				}
				w, err := audit.NewWriter(ctx, st, &audit.WriterOptions{Chain: chain, Instance: fmt.Sprint(i)})
				if err != nil {
					b.Fatal(err)
				}
				ws = append(ws, w)
			}
			b.ResetTimer()
			var wg sync.WaitGroup
			per := b.N / 16
			for i := range 16 {
				w := ws[i%2]
				wg.Go(func() {
					for j := range per {
						if err := w.Append(ctx, entry(j)); err != nil {
							b.Error(err)
						}
					}
				})
			}
			wg.Wait()
			for _, w := range ws {
				if err := w.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			for _, w := range ws {
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
