package policy_test

import (
	"context"
	"testing"

	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/store/memory"
)

// TestPure: which guards declare that asking them changes nothing.
func TestPure(t *testing.T) {
	m, err := memory.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pinning, err := policy.NewFirewall(policy.FirewallOptions{Deny: []string{"x"},
		Contracts: policy.ContractsFunc(func(context.Context, string, string) (string, string, error) { return "a", "a", nil })})
	if err != nil {
		t.Fatal(err)
	}
	counting, err := policy.NewFirewall(policy.FirewallOptions{MaxCallsPerRun: 3, Counters: m})
	if err != nil {
		t.Fatal(err)
	}
	fn := policy.GuardFunc(func(context.Context, policy.Call) (policy.Decision, error) { return policy.Allowed(), nil })
	pure := policy.PureFunc(func(context.Context, policy.Call) (policy.Decision, error) { return policy.Allowed(), nil })
	for _, tc := range []struct {
		name string
		g    policy.Guard
		want bool
	}{
		{"nil", nil, true},
		{"AllowAll", policy.AllowAll(), true},
		{"ReadOnly", policy.ReadOnly("a"), true},
		{"PureFunc", pure, true},
		{"GuardFunc", fn, false},
		{"firewall without a cap", pinning, true},
		{"firewall with a cap", counting, false},
		{"Compose()", policy.Compose(), true},
		{"Compose(pure ones, nil)", policy.Compose(pure, nil, pinning, policy.ReadOnly("a")), true},
		{"Compose(pure, GuardFunc)", policy.Compose(pure, fn), false},
		{"Compose(pure, counting firewall)", policy.Compose(pure, counting), false},
		{"Compose(Compose(pure), fn)", policy.Compose(policy.Compose(pure), fn), false},
	} {
		if got := policy.IsPure(tc.g); got != tc.want {
			t.Errorf("IsPure(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
	// The composed guard still decides as before.
	d, err := policy.Compose(pure, policy.ReadOnly("a")).Check(context.Background(), policy.Call{Tool: "b"})
	if err != nil || d.Verdict != policy.Deny {
		t.Errorf("Compose(pure, ReadOnly(a)) on b: %+v %v, want deny", d, err)
	}
}
