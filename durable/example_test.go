package durable_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store/memory"
)

// A run charges a card, "crashes" right after a second charge reached the
// bank but before its outcome was recorded, and is resumed by another
// process: the first charge is replayed, the second is in doubt (never sent
// again), and the run goes on. A panic stands in for the crash here; the
// package's TestCrashResume does the same with real processes killed by
// SIGKILL.
func Example_crashAndResume() {
	ctx := context.Background()
	st, _ := memory.New(nil) // sqlite.Open(ctx, "gatehouse.db", nil) in production
	defer st.Close()

	charges := map[string]int{} // the bank: charges per idempotency key
	charge := func(ctx context.Context, key string) (*mcp.CallToolResult, error) {
		charges[key]++
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "charged " + key}}}, nil
	}
	crashAfter := func(effect durable.Effect) durable.Effect {
		return func(ctx context.Context, key string) (*mcp.CallToolResult, error) {
			effect(ctx, key)
			panic("process killed")
		}
	}
	step := func(j *durable.Journal, id string, effect durable.Effect) {
		defer func() {
			if r := recover(); r != nil {
				fmt.Printf("%s: %v\n", id, r)
			}
		}()
		c := durable.Call{RunID: "order-42", ToolCallID: id, Server: "bank", Tool: "charge", Args: []byte(`{"amount":30}`)}
		res, replayed, err := j.Do(ctx, c, effect)
		if e, ok := refusal.As(err); ok {
			fmt.Printf("%s: refused %s (retryable %v)\n", id, e.Code, e.Retryable)
			return
		}
		fmt.Printf("%s: %s (replayed %v)\n", id, res.Content[0].(*mcp.TextContent).Text, replayed)
	}

	// The first process.
	first, _ := durable.NewJournal(st, &durable.JournalOptions{Lease: 30 * time.Second})
	step(first, "call-1", charge)
	step(first, "call-2", crashAfter(charge))

	// The resumed run, in a new process once the crashed one's lease has
	// run out (a clock 1 minute ahead stands in for the wait).
	later := func() time.Time { return time.Now().Add(time.Minute) }
	resumed, _ := durable.NewJournal(st, &durable.JournalOptions{Lease: 30 * time.Second, Clock: later})
	step(resumed, "call-1", charge)
	step(resumed, "call-2", charge)
	step(resumed, "call-3", charge)

	fmt.Println("charges:", charges)
	// Output:
	// call-1: charged order-42:call-1 (replayed false)
	// call-2: process killed
	// call-1: charged order-42:call-1 (replayed true)
	// call-2: refused in_doubt (retryable false)
	// call-3: charged order-42:call-3 (replayed false)
	// charges: map[order-42:call-1:1 order-42:call-2:1 order-42:call-3:1]
}

// A guard that requires an operator's approval for transfers: the first
// call is refused approval_required with the approval's ID and nothing
// runs; the operator approves through the store (what `gatehouse approvals
// approve` does, from any process); the same call with the same key then
// runs once, and a repeat is replayed from the journal without running.
func ExampleJournal_Guarded() {
	ctx := context.Background()
	st, _ := memory.New(nil)
	defer st.Close()
	journal, _ := durable.NewJournal(st, &durable.JournalOptions{Approvals: st})

	guard := policy.GuardFunc(func(_ context.Context, c policy.Call) (policy.Decision, error) {
		if c.Tool == "bank__transfer" {
			return policy.NeedsApproval("transfers need an operator"), nil
		}
		return policy.Allowed(), nil
	})
	runs := 0
	transfer := func(ctx context.Context, key string) (*mcp.CallToolResult, error) {
		runs++
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "transferred 500 (key " + key + ")"}}}, nil
	}
	c := durable.Call{RunID: "run-7", ToolCallID: "call-1", Server: "bank", Tool: "bank__transfer", Args: []byte(`{"cents":500}`)}

	_, _, err := journal.Guarded(ctx, c, guard, transfer)
	r, ok := refusal.As(err)
	if !ok {
		panic(err)
	}
	fmt.Println("first call:", r.Code, "retryable:", r.Retryable, "runs:", runs)
	fmt.Println(strings.ReplaceAll(r.Message, r.ApprovalID, "ID"))
	a, _ := st.GetApproval(ctx, r.ApprovalID)
	fmt.Printf("the operator sees: %s %s by %q, expiring %v after it was asked\n", a.Tool, a.Args, a.Owner, a.ExpiresAt.Sub(a.CreatedAt))

	// The operator's decision, by the approval's ID.
	if _, err := st.DecideApproval(ctx, r.ApprovalID, true, "alice", time.Now()); err != nil {
		panic(err)
	}

	for _, attempt := range []string{"retry", "repeat"} {
		res, replayed, err := journal.Guarded(ctx, c, guard, transfer)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %s (replayed %v) runs: %d\n", attempt, res.Content[0].(*mcp.TextContent).Text, replayed, runs)
	}
	// Output:
	// first call: approval_required retryable: true runs: 0
	// the call to bank__transfer needs an operator's approval: transfers need an operator (approval ID); once approved, retry the same call with the same key
	// the operator sees: bank__transfer {"cents":500} by "", expiring 24h0m0s after it was asked
	// retry: transferred 500 (key run-7:call-1) (replayed false) runs: 1
	// repeat: transferred 500 (key run-7:call-1) (replayed true) runs: 1
}
