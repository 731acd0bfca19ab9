package sqlstore_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/gatehouse-dev/gatehouse/store"
)

// TestCommitDelay: on both stores as opened (group commit and the commit
// delay on by default):
//   - a lone caller never yields (it has no siblings), and its calls read
//     back completed;
//   - a leader alone in the queue while calls are in flight lets a call
//     that is ready to run go first, and that call's completion shares
//     the leader's transaction. With one processor (GOMAXPROCS=1) the
//     goroutine started before the leader's Complete is ready but not
//     running: without the yield the leader commits alone and the other
//     completion takes a transaction of its own.
func TestCommitDelay(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			ctx := t.Context()
			lone := b.open(t, b.where(t), &store.Options{})
			for i := range 20 {
				k := fmt.Sprint("lone-", i)
				if claimed, _, err := lone.Claim(ctx, rec(k, "exec")); err != nil || !claimed {
					t.Fatalf("claim %s: %v %v", k, claimed, err)
				}
				if err := lone.Complete(ctx, key(k), "exec", store.StateSucceeded, []byte(k)); err != nil {
					t.Fatal(err)
				}
				if r, err := lone.GetRecord(ctx, key(k)); err != nil || r.State != store.StateSucceeded || string(r.Outcome) != k {
					t.Fatalf("%s reads back %+v, %v", k, r, err)
				}
			}
			if n := lone.GroupYielded(); n != 0 {
				t.Errorf("a lone caller's leader yielded %d times, want 0", n)
			}

			// Ten rounds of three calls in flight, two of them completing
			// at once on one processor; the race detector's scheduling
			// varies, so most rounds, not all, must share.
			st := b.open(t, b.where(t), &store.Options{})
			const rounds = 10
			shared := 0
			for r := range rounds {
				x, y, z := fmt.Sprint("x", r), fmt.Sprint("y", r), fmt.Sprint("z", r)
				for _, k := range []string{x, y, z} {
					if claimed, _, err := st.Claim(ctx, rec(k, "exec")); err != nil || !claimed {
						t.Fatalf("claim %s: %v %v", k, claimed, err)
					}
				}
				batches, _ := st.GroupStats()
				procs := runtime.GOMAXPROCS(1)
				other := make(chan error, 1)
				go func() { other <- st.Complete(ctx, key(x), "exec", store.StateSucceeded, []byte(x)) }()
				err := st.Complete(ctx, key(y), "exec", store.StateSucceeded, []byte(y))
				oerr := <-other
				runtime.GOMAXPROCS(procs)
				if err != nil || oerr != nil {
					t.Fatalf("completions: %v, %v", err, oerr)
				}
				if after, _ := st.GroupStats(); after > batches {
					shared++
				}
				if err := st.Complete(ctx, key(z), "exec", store.StateSucceeded, []byte(z)); err != nil {
					t.Fatal(err)
				}
				for _, k := range []string{x, y, z} {
					if r, err := st.GetRecord(ctx, key(k)); err != nil || r.State != store.StateSucceeded || string(r.Outcome) != k {
						t.Fatalf("%s reads back %+v, %v", k, r, err)
					}
				}
			}
			if shared < rounds/2 {
				t.Errorf("two completions ready at once shared a transaction in %d of %d rounds (yields %d), want most", shared, rounds, st.GroupYielded())
			}
		})
	}
}
