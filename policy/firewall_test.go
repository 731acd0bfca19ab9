package policy_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/memory"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// counterStore is what the firewall tests need of a store.
type counterStore interface {
	store.CounterStore
	Close() error
}

// stores returns a fresh memory store, a fresh SQLite file store and a
// fresh PostgreSQL schema (skipped without $GATEHOUSE_TEST_POSTGRES), and
// for the last two a function that reopens the same database (a new
// process).
func stores(t *testing.T) map[string]func(t *testing.T) (counterStore, func() counterStore) {
	return map[string]func(t *testing.T) (counterStore, func() counterStore){
		"memory": func(t *testing.T) (counterStore, func() counterStore) {
			m, err := memory.New(nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			return m, func() counterStore { return m }
		},
		"sqlite": func(t *testing.T) (counterStore, func() counterStore) {
			path := filepath.Join(t.TempDir(), "gh.db")
			open := func() counterStore {
				s, err := sqlite.Open(ctx, path, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
			return open(), open
		},
		"postgres": func(t *testing.T) (counterStore, func() counterStore) {
			dsn := pgtest.Schema(t, "policy_test", "the firewall on PostgreSQL")
			open := func() counterStore {
				s, err := postgres.Open(ctx, dsn, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
			return open(), open
		},
	}
}

func newFirewall(t *testing.T, o policy.FirewallOptions) policy.Guard {
	t.Helper()
	g, err := policy.NewFirewall(o)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func check(t *testing.T, g policy.Guard, c policy.Call) policy.Decision {
	t.Helper()
	d, err := policy.Evaluate(ctx, g, c)
	if err != nil {
		t.Fatalf("check %+v: %v", c, err)
	}
	return d
}

func TestFirewallLists(t *testing.T) {
	g := newFirewall(t, policy.FirewallOptions{
		Allow: []string{"bank__balance", "bank__transfer"},
		Deny:  []string{"bank__transfer"},
	})
	cases := []struct {
		tool string
		want policy.Verdict
	}{
		{"bank__balance", policy.Allow},
		{"bank__transfer", policy.Deny}, // deny wins over allow
		{"bank__delete", policy.Deny},   // not on the allow list: fail closed
		{"Bank__balance", policy.Deny},
		{"", policy.Deny},
	}
	for _, c := range cases {
		d := check(t, g, policy.Call{Tool: c.tool, Server: "bank"})
		if d.Verdict != c.want {
			t.Errorf("%q: got %+v, want %v", c.tool, d, c.want)
		}
		if d.Verdict == policy.Deny && (d.Code != refusal.Denied || d.Reason == "") {
			t.Errorf("%q: deny without code or reason: %+v", c.tool, d)
		}
	}
	// An empty allow list allows everything not denied.
	g = newFirewall(t, policy.FirewallOptions{Deny: []string{"x"}})
	if d := check(t, g, policy.Call{Tool: "y"}); d.Verdict != policy.Allow {
		t.Fatalf("empty allow list: %+v", d)
	}
	if d := check(t, g, policy.Call{Tool: "x"}); d.Verdict != policy.Deny {
		t.Fatalf("deny list: %+v", d)
	}
}

// contracts is a table of (server, remote tool) -> pinned, current.
type contracts map[[2]string][2]string

func (m contracts) Pinned(_ context.Context, server, tool string) (string, string, error) {
	v := m[[2]string{server, tool}]
	return v[0], v[1], nil
}

func TestFirewallPinning(t *testing.T) {
	cs := contracts{
		{"bank", "balance"}:  {"fp1", "fp1"},
		{"bank", "transfer"}: {"fp2", "fp2-poisoned"},
		{"bank", "gone"}:     {"fp3", ""},
	}
	g := newFirewall(t, policy.FirewallOptions{Contracts: cs})
	d := check(t, g, policy.Call{Server: "bank", Tool: "bank__balance", RemoteName: "balance"})
	if d.Verdict != policy.Allow {
		t.Fatalf("pinned and unchanged: %+v", d)
	}
	d = check(t, g, policy.Call{Server: "bank", Tool: "bank__transfer", RemoteName: "transfer"})
	if d.Verdict != policy.RequireApproval || d.Reason != "tool description changed — poisoning risk" {
		t.Fatalf("changed contract: %+v", d)
	}
	d = check(t, g, policy.Call{Server: "bank", Tool: "bank__gone", RemoteName: "gone"})
	if d.Verdict != policy.RequireApproval || d.Reason != policy.ReasonContractChanged {
		t.Fatalf("pinned, current unknown: %+v", d)
	}
	// The remote name is what is looked up, not the projected name: a
	// projected name equal to another tool's remote name gets no pass.
	d = check(t, g, policy.Call{Server: "bank", Tool: "balance", RemoteName: "transfer"})
	if d.Verdict != policy.RequireApproval {
		t.Fatalf("lookup by remote name: %+v", d)
	}
	// Go tools (no server) are not subject to pinning.
	d = check(t, g, policy.Call{Tool: "local_tool"})
	if d.Verdict != policy.Allow {
		t.Fatalf("Go tool: %+v", d)
	}
	// Unpinned MCP tools: require approval by default, or as configured.
	unpinned := policy.Call{Server: "bank", Tool: "bank__new", RemoteName: "new"}
	if d := check(t, g, unpinned); d.Verdict != policy.RequireApproval || d.Reason != policy.ReasonNotPinned {
		t.Fatalf("unpinned default: %+v", d)
	}
	for _, v := range []policy.Verdict{policy.Allow, policy.Deny, policy.RequireApproval} {
		g := newFirewall(t, policy.FirewallOptions{Contracts: cs, Unpinned: v})
		if d := check(t, g, unpinned); d.Verdict != v {
			t.Fatalf("Unpinned %v: %+v", v, d)
		}
	}
}

func TestFirewallContractsErrorFailsClosed(t *testing.T) {
	boom := errors.New("baseline store unreachable")
	g := newFirewall(t, policy.FirewallOptions{Contracts: policy.ContractsFunc(
		func(context.Context, string, string) (string, string, error) { return "", "", boom })})
	d, err := g.Check(ctx, policy.Call{Server: "s", Tool: "s__t"})
	if !errors.Is(err, boom) || d.Verdict != policy.Deny {
		t.Fatalf("got %+v, %v; want deny and %v", d, err, boom)
	}
}

func TestFirewallOptionsInvalid(t *testing.T) {
	m, _ := memory.New(nil)
	defer m.Close()
	for name, o := range map[string]policy.FirewallOptions{
		"cap without counters": {MaxCallsPerRun: 3},
		"negative cap":         {MaxCallsPerRun: -1, Counters: m},
		"negative ttl":         {CounterTTL: -time.Second},
		"bad unpinned verdict": {Unpinned: "sometimes"},
	} {
		if _, err := policy.NewFirewall(o); !errors.Is(err, policy.ErrInvalidOptions) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func call(run, tool string, i int) policy.Call {
	return policy.Call{RunID: run, Tool: tool, ToolCallID: fmt.Sprintf("call-%d", i)}
}

func TestFirewallCallCap(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s, reopen := open(t)
			g := newFirewall(t, policy.FirewallOptions{MaxCallsPerRun: 2, Counters: s})
			want := []policy.Verdict{policy.Allow, policy.Allow, policy.Deny, policy.Deny}
			for i, w := range want {
				d := check(t, g, call("run-1", "bank__transfer", i))
				if d.Verdict != w {
					t.Fatalf("call %d: got %+v, want %v", i, d, w)
				}
				if w == policy.Deny && d.Code != refusal.CallLimit {
					t.Fatalf("call %d: code %q, want call_limit", i, d.Code)
				}
			}
			// Re-checking calls already seen (a replay, a resume after an
			// approval) neither counts them again nor changes their answer:
			// call-0 is still allowed although the count is past the cap.
			for round := 0; round < 3; round++ {
				for i, w := range want {
					if d := check(t, g, call("run-1", "bank__transfer", i)); d.Verdict != w {
						t.Fatalf("re-check %d of call %d: got %v, want %v", round, i, d.Verdict, w)
					}
				}
			}
			// A resume: a new firewall on the same store (for SQLite, a new
			// connection to the same file, as a new process would open).
			s2 := reopen()
			g2 := newFirewall(t, policy.FirewallOptions{MaxCallsPerRun: 2, Counters: s2})
			if d := check(t, g2, call("run-1", "bank__transfer", 1)); d.Verdict != policy.Allow {
				t.Fatalf("resumed re-check of call-1: %+v", d)
			}
			if d := check(t, g2, call("run-1", "bank__transfer", 9)); d.Code != refusal.CallLimit {
				t.Fatalf("resumed new call past the cap: %+v", d)
			}
			// The count is exactly the distinct calls.
			n, err := s2.GetCounter(ctx, store.Key("fw", "", "run-1", "bank__transfer"), time.Now())
			if err != nil || n != 5 {
				t.Fatalf("stored count = %d, %v; want 5 distinct calls", n, err)
			}
			// Other tools and other runs have their own counts.
			if d := check(t, g2, call("run-1", "bank__balance", 0)); d.Verdict != policy.Allow {
				t.Fatalf("other tool: %+v", d)
			}
			if d := check(t, g2, call("run-2", "bank__transfer", 0)); d.Verdict != policy.Allow {
				t.Fatalf("other run: %+v", d)
			}
		})
	}
}

func TestFirewallCapScopes(t *testing.T) {
	m, _ := memory.New(nil)
	defer m.Close()
	a := newFirewall(t, policy.FirewallOptions{MaxCallsPerRun: 1, Counters: m, Scope: "a"})
	b := newFirewall(t, policy.FirewallOptions{MaxCallsPerRun: 1, Counters: m, Scope: "b"})
	if d := check(t, a, call("r", "t", 0)); d.Verdict != policy.Allow {
		t.Fatal(d)
	}
	if d := check(t, b, call("r", "t", 1)); d.Verdict != policy.Allow {
		t.Fatalf("scope b shares scope a's count: %+v", d)
	}
}

// A hostile model chooses tool call IDs (and a hostile server tool names)
// with the key separators in them: no choice reaches another call's or
// another tool's counter.
func TestFirewallCapKeysCannotBeForged(t *testing.T) {
	m, _ := memory.New(nil)
	defer m.Close()
	g := newFirewall(t, policy.FirewallOptions{MaxCallsPerRun: 1, Counters: m})
	// Fill tool "t" in run "r" to its cap with call "x".
	if d := check(t, g, policy.Call{RunID: "r", Tool: "t", ToolCallID: "x"}); d.Verdict != policy.Allow {
		t.Fatal(d)
	}
	// Try to make a new call look already counted (ordinal 1, allowed)
	// by crafting IDs and names that would collide under naive joining.
	for _, c := range []policy.Call{
		{RunID: "r", Tool: "t/1:x", ToolCallID: ""},
		{RunID: "r/1:t", Tool: "x", ToolCallID: "y"},
		{RunID: "r", Tool: "t", ToolCallID: "x/1:y"},
		{RunID: "r", Tool: "t", ToolCallID: "x:"},
	} {
		d := check(t, g, c)
		if c.Tool == "t" && c.RunID == "r" {
			if d.Code != refusal.CallLimit {
				t.Errorf("%+v: got %+v, want call_limit", c, d)
			}
		} else if d.Verdict != policy.Allow {
			t.Errorf("%+v: a different tool/run was charged: %+v", c, d)
		}
	}
}

func TestFirewallCapWithoutRunOrCallID(t *testing.T) {
	m, _ := memory.New(nil)
	defer m.Close()
	g := newFirewall(t, policy.FirewallOptions{MaxCallsPerRun: 1, Counters: m})
	for i := 0; i < 3; i++ {
		if d := check(t, g, policy.Call{Tool: "t"}); d.Verdict != policy.Allow {
			t.Fatalf("call outside a run is capped: %+v", d)
		}
	}
	// Without a call ID every check is a distinct call.
	check(t, g, policy.Call{RunID: "r", Tool: "t"})
	if d := check(t, g, policy.Call{RunID: "r", Tool: "t"}); d.Code != refusal.CallLimit {
		t.Fatalf("second anonymous call: %+v", d)
	}
}

func TestFirewallListsDoNotCount(t *testing.T) {
	m, _ := memory.New(nil)
	defer m.Close()
	g := newFirewall(t, policy.FirewallOptions{MaxCallsPerRun: 1, Counters: m, Deny: []string{"t"}})
	for i := 0; i < 3; i++ {
		check(t, g, call("r", "t", i))
	}
	if n, _ := m.GetCounter(ctx, store.Key("fw", "", "r", "t"), time.Now()); n != 0 {
		t.Fatalf("denied calls were counted: %d", n)
	}
}

func TestFirewallCounterTTL(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	m, _ := memory.New(&store.Options{Now: clock})
	defer m.Close()
	g := newFirewall(t, policy.FirewallOptions{MaxCallsPerRun: 1, Counters: m, CounterTTL: time.Hour, Clock: clock})
	check(t, g, call("r", "t", 0))
	if d := check(t, g, call("r", "t", 1)); d.Code != refusal.CallLimit {
		t.Fatalf("before expiry: %+v", d)
	}
	now = now.Add(2 * time.Hour)
	if d := check(t, g, call("r", "t", 2)); d.Verdict != policy.Allow {
		t.Fatalf("after expiry: %+v", d)
	}
}

func TestFirewallCounterErrorFailsClosed(t *testing.T) {
	m, _ := memory.New(nil)
	g := newFirewall(t, policy.FirewallOptions{MaxCallsPerRun: 5, Counters: m})
	m.Close()
	d, err := g.Check(ctx, call("r", "t", 0))
	if !errors.Is(err, store.ErrClosed) || d.Verdict != policy.Deny {
		t.Fatalf("got %+v, %v; want deny and ErrClosed", d, err)
	}
}

// Distinct calls racing from several goroutines and two connections to one
// SQLite file: exactly the cap is allowed.
func TestFirewallCapConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gh.db")
	var guards []policy.Guard
	for i := 0; i < 2; i++ {
		s, err := sqlite.Open(ctx, path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		guards = append(guards, newFirewall(t, policy.FirewallOptions{MaxCallsPerRun: 5, Counters: s}))
	}
	var mu sync.Mutex
	allowed, limited := 0, 0
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := guards[i%2].Check(ctx, call("r", "t", i))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Error(err)
			case d.Verdict == policy.Allow:
				allowed++
			case d.Code == refusal.CallLimit:
				limited++
			}
		}()
	}
	wg.Wait()
	if allowed != 5 || limited != 15 {
		t.Fatalf("allowed %d, limited %d; want 5 and 15", allowed, limited)
	}
}

func TestFirewallComposedOrder(t *testing.T) {
	// The firewall placed after a denying guard does not count the call.
	m, _ := memory.New(nil)
	defer m.Close()
	fw := newFirewall(t, policy.FirewallOptions{MaxCallsPerRun: 1, Counters: m})
	g := policy.Compose(policy.ReadOnly("ok"), fw)
	check(t, g, call("r", "write", 0))
	check(t, g, call("r", "write", 1))
	if d := check(t, g, call("r", "ok", 2)); d.Verdict != policy.Allow {
		t.Fatalf("%+v", d)
	}
	if d := check(t, g, call("r", "ok", 3)); d.Code != refusal.CallLimit {
		t.Fatalf("%+v", d)
	}
}
