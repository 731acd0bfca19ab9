package policy_test

import (
	"context"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/store/memory"
)

// A read-only policy in front of the firewall: reads are allowed, at most
// two per run and tool; writes are denied before the firewall counts them.
func Example() {
	ctx := context.Background()
	st, _ := memory.New(nil) // in production: the gateway's SQLite or PostgreSQL store
	defer st.Close()

	fw, err := policy.NewFirewall(policy.FirewallOptions{
		Deny:           []string{"bank__delete_account"},
		MaxCallsPerRun: 2,
		Counters:       st,
	})
	if err != nil {
		panic(err)
	}
	p := policy.Compose(policy.ReadOnly("bank__balance"), fw)

	for i, tool := range []string{"bank__balance", "bank__transfer", "bank__balance", "bank__balance"} {
		d, err := policy.Evaluate(ctx, p, policy.Call{RunID: "run-1", ToolCallID: fmt.Sprint("c", i), Tool: tool})
		fmt.Println(tool, d.Verdict, d.Code, err)
	}
	// Output:
	// bank__balance allow  <nil>
	// bank__transfer deny denied <nil>
	// bank__balance allow  <nil>
	// bank__balance deny call_limit <nil>
}
