package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/dsn"
)

// TestSIGKILLUnderLoadKeepsAuditWithJournal: a real `gatehouse serve` on a
// SQLite store takes keyed calls from 8 sessions at once and is SIGKILLed
// mid-load, three times over (each restart continues the same chain).
// Afterwards every journal completion has its audit entry and every entry
// its completion (they commit in one transaction): every call a client saw
// answered has its entry, the succeeded records and the call entries are
// as many, and `gatehouse audit verify` passes. With the entries of keyed
// calls in the writer's queue instead, the calls answered in the last
// milliseconds before each kill lose theirs.
func TestSIGKILLUnderLoadKeepsAuditWithJournal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sigkillUnderLoad(t, dir, "sqlite:"+filepath.Join(dir, "gh.db"))
}

// sigkillUnderLoad is TestSIGKILLUnderLoadKeepsAuditWithJournal on the
// store db, the gateway's config in dir.
func sigkillUnderLoad(t *testing.T, dir, db string) {
	writeConfig(t, dir, fmt.Sprintf("store: %q\nservers:\n%s", db, fixtureServer("fx", "-tools", "echo")))

	var mu sync.Mutex
	answered := map[string]bool{} // the arguments' digest of every call a client saw answered
	const rounds, sessions = 3, 8
	for round := range rounds {
		g := startGateway(t, dir)
		var n atomic.Int64
		var wg sync.WaitGroup
		for s := range sessions {
			cs := connect(t, g.url, "")
			wg.Go(func() {
				for i := 0; ; i++ {
					arg := fmt.Sprintf("r%d-s%d-i%d", round, s, i)
					res, err := call(t, cs, "fx__echo", map[string]any{"text": arg}, key(arg))
					if err != nil {
						return // the gateway is gone
					}
					if res.IsError || text(res) != arg {
						t.Errorf("call %s answered %+v", arg, res)
						return
					}
					b, _ := json.Marshal(map[string]any{"text": arg})
					mu.Lock()
					answered[audit.ArgsDigest(b)] = true
					mu.Unlock()
					n.Add(1)
				}
			})
		}
		// Kill it mid-load, a different moment each round.
		want := int64(60 + 40*round)
		deadline := time.Now().Add(60 * time.Second)
		for n.Load() < want && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if n.Load() < want {
			t.Fatalf("round %d: only %d calls answered in 60s:\n%s", round, n.Load(), g.logText())
		}
		g.stop(syscall.SIGKILL)
		wg.Wait()
	}

	ctx := context.Background()
	st, err := dsn.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.ListRuns(ctx, store.RunFilter{AnyOwner: true})
	if err != nil {
		t.Fatal(err)
	}
	var succeeded, started int64
	for _, r := range runs {
		succeeded += r.Succeeded
		started += r.Started
		if r.Failed+r.InDoubt != 0 {
			t.Errorf("run %+v: a call failed or is in doubt", r)
		}
	}
	entries, err := st.ListAudit(ctx, store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	inTrail := map[string]int{}
	var calls int64
	for _, e := range entries {
		if e.Kind != audit.KindCall || e.Tool != "fx__echo" {
			continue
		}
		// Each was committed with its journal completion: its detail names
		// its record (the caller's key, runId, toolCallId) and says neither
		// replayed nor notRecorded.
		if d := string(e.Detail); e.Outcome != "ok" || !strings.Contains(d, `"toolCallId"`) || strings.Contains(d, "replayed") || strings.Contains(d, "notRecorded") {
			t.Errorf("entry %s/%d: %+v", e.Chain, e.Seq, e)
		}
		calls++
		inTrail[e.ArgsDigest]++
	}
	lost := 0
	for d := range answered {
		if inTrail[d] != 1 {
			lost++
		}
	}
	t.Logf("%d calls answered, %d journal completions (%d records left started by the kills), %d call entries", len(answered), succeeded, started, calls)
	if lost > 0 {
		t.Errorf("%d of the %d calls answered have no audit entry (or more than one)", lost, len(answered))
	}
	if calls != succeeded {
		t.Errorf("%d call entries for %d journal completions: every completion must have its entry, and every entry its completion", calls, succeeded)
	}

	out, err := exec.Command(bins.gatehouse, "audit", "verify", "--store", db).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "verifies") {
		t.Fatalf("gatehouse audit verify: %v\n%s", err, out)
	}
}
