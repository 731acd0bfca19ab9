package policy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/memory"
)

// hostile are runs, tools and call IDs a caller may choose: a NUL byte
// (PostgreSQL text refuses it), a megabyte (an index refuses a row of a few
// KiB), invalid UTF-8 (PostgreSQL refuses it), non-ASCII, and the old
// key's own separators. "run" and "run\x00one" are two runs: a store that
// cut a key at its NUL would merge them.
var hostile = map[string]string{
	"plain":        "run",
	"nul":          "run\x00one",
	"huge":         strings.Repeat("r", 1<<20),
	"unicode":      "ラン-🚀-\u202e",
	"invalid-utf8": "run\xff\xfe",
	"separators":   "fw/v1/0:/1:r/1:t",
}

// TestFirewallHostileRunsOnStores runs the call cap end to end on each real
// store with runs, tools, call IDs and a scope a caller could choose: every
// run is counted on its own, the cap holds, a re-check keeps its answer,
// and a reopened store (another process) agrees.
func TestFirewallHostileRunsOnStores(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s, reopen := open(t)
			const scope = "scope\x00/x"
			opts := policy.FirewallOptions{MaxCallsPerRun: 2, Counters: s, Scope: scope}
			g := newFirewall(t, opts)
			hcall := func(run string, i int) policy.Call {
				return policy.Call{RunID: run, Tool: "tool\x00" + run[:min(len(run), 8)],
					ToolCallID: run + "\x00call-" + string(rune('0'+i))}
			}
			for label, run := range hostile {
				for i, want := range []policy.Verdict{policy.Allow, policy.Allow, policy.Deny} {
					d, err := policy.Evaluate(ctx, g, hcall(run, i))
					if err != nil {
						t.Fatalf("%s: call %d: %v", label, i, err)
					}
					if d.Verdict != want || (want == policy.Deny && d.Code != refusal.CallLimit) {
						t.Fatalf("%s: call %d: got %+v, want %v", label, i, d, want)
					}
				}
			}
			opts.Counters = reopen()
			g2 := newFirewall(t, opts)
			for label, run := range hostile {
				if d := check(t, g2, hcall(run, 0)); d.Verdict != policy.Allow {
					t.Fatalf("%s: re-check of call 0 after reopening: %+v", label, d)
				}
				if d := check(t, g2, hcall(run, 2)); d.Code != refusal.CallLimit {
					t.Fatalf("%s: re-check of call 2 after reopening: %+v", label, d)
				}
				c := hcall(run, 0)
				n, err := opts.Counters.GetCounter(ctx, store.Key("fw", scope, c.RunID, c.Tool), time.Now())
				if err != nil || n != 3 {
					t.Fatalf("%s: stored count = %d, %v; want the 3 distinct calls", label, n, err)
				}
			}
		})
	}
}

// TestFirewallKeysAreShortAndPlain: whatever the caller chose, the keys the
// firewall writes are short printable ASCII.
func TestFirewallKeysAreShortAndPlain(t *testing.T) {
	m, err := memory.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rec := &recordingCounters{CounterStore: m}
	g := newFirewall(t, policy.FirewallOptions{MaxCallsPerRun: 5, Counters: rec, Scope: "s\x00"})
	for _, run := range hostile {
		check(t, g, policy.Call{RunID: run, Tool: run, ToolCallID: run})
		check(t, g, policy.Call{RunID: run, Tool: run})
	}
	if len(rec.keys) == 0 {
		t.Fatal("no key written")
	}
	for _, k := range rec.keys {
		if len(k) > 64 {
			t.Errorf("key of %d bytes", len(k))
		}
		for _, b := range []byte(k) {
			if b < 0x21 || b > 0x7e {
				t.Fatalf("key %q holds byte %#x", k, b)
			}
		}
	}
}

// recordingCounters is a memory store that records the keys written to it.
type recordingCounters struct {
	store.CounterStore
	keys []string
}

func (r *recordingCounters) IncrBy(ctx context.Context, key string, delta int64, exp time.Time) (int64, error) {
	r.keys = append(r.keys, key)
	return r.CounterStore.IncrBy(ctx, key, delta, exp)
}
