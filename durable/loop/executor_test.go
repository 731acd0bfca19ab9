package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
)

// TestExecutorCallsOnceAcrossProcesses: the calls of a provider's response
// made through an Executor run once; the same calls from a fresh process
// (a resumed agent) replay their outcomes, and the idempotency key the
// server sees is runID:<the provider's call ID>.
func TestExecutorCallsOnceAcrossProcesses(t *testing.T) {
	s := openStore(t, "sqlite")
	b, tools := startBank(t)
	calls := []loop.ToolCall{
		{ID: "call_a1", Name: "bank__charge", Args: json.RawMessage(`{"amount":5}`)},
		{ID: "call_b2", Name: "bank__balance"},
	}
	var first []loop.Outcome
	for round := range 3 {
		ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "run-x", Journal: newJournal(t, s.reopen(t)), Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		outs, err := ex.CallAll(bg, calls)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if round == 0 {
			first = outs
		}
		for i, o := range outs {
			if o.Message.Content != first[i].Message.Content || o.Message.ToolCallID != calls[i].ID || o.Message.Role != loop.RoleTool {
				t.Errorf("round %d call %d: %+v, want the first outcome %+v", round, i, o.Message, first[i].Message)
			}
		}
	}
	if b.count("charge") != 1 || b.count("balance") != 1 {
		t.Fatalf("effects: charge %d, balance %d; want 1 each", b.count("charge"), b.count("balance"))
	}
	if !strings.Contains(first[0].Message.Content, "key=run-x:call_a1") {
		t.Fatalf("the server did not see runID:callID: %q", first[0].Message.Content)
	}
}

// TestExecutorRefusalsAreOutcomes: a refusal of the guard (approval
// needed) is an outcome the model reads, with the refusal's structured
// content and the approval's ID; an unknown tool, a call without an ID and
// arguments that are not an object are error results; none of them is a
// Go error, and none runs an effect.
func TestExecutorRefusalsAreOutcomes(t *testing.T) {
	s := openStore(t, "sqlite")
	b, tools := startBank(t)
	ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "run-r", Journal: newJournal(t, s), Tools: tools, Guard: approveTransfers()})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := ex.CallAll(bg, []loop.ToolCall{
		{ID: "t1", Name: "bank__transfer", Args: json.RawMessage(`{"amount":100}`)},
		{ID: "u1", Name: "bank__nope"},
		{ID: "", Name: "bank__balance"},
		{ID: "a1", Name: "bank__balance", Args: json.RawMessage(`[1]`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	o := outs[0]
	if o.Code != refusal.ApprovalRequired || o.ApprovalID == "" || !o.Message.IsError || !strings.HasPrefix(o.Message.Content, "[approval_required]") {
		t.Fatalf("transfer: %+v", o)
	}
	sc, _ := o.Result.StructuredContent.(map[string]any)
	if sc["code"] != "approval_required" || sc["approvalId"] != o.ApprovalID {
		t.Fatalf("structured content %v", o.Result.StructuredContent)
	}
	for i, want := range []string{`unknown tool "bank__nope"`, "has no ID", "not a JSON object"} {
		o := outs[i+1]
		if !o.Message.IsError || !strings.Contains(o.Message.Content, want) || o.Code != "" {
			t.Errorf("call %d: %+v, want an error result with %q", i+1, o.Message, want)
		}
	}
	if b.total() != 0 {
		t.Fatalf("%d effects ran", b.total())
	}
	// Approved, the same call runs once.
	if _, err := s.DecideApproval(bg, o.ApprovalID, true, "operator", time.Now()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		o, err := ex.Call(bg, loop.ToolCall{ID: "t1", Name: "bank__transfer", Args: json.RawMessage(`{"amount":100}`)})
		if err != nil || o.Message.IsError || !strings.Contains(o.Message.Content, "transfer ok #1") {
			t.Fatalf("after approval: %+v, %v", o, err)
		}
	}
	if b.count("transfer") != 1 {
		t.Fatalf("transfer ran %d times", b.count("transfer"))
	}
	a, err := s.GetApproval(bg, outs[0].ApprovalID)
	if err != nil || a.State != store.ApprovalApproved && a.State != store.ApprovalUsed {
		t.Fatalf("approval after use: %+v, %v", a, err)
	}
}

// TestExecutorRunBusyIsAnError: while another executor drives the same
// call, run_busy is the one refusal returned as an error.
func TestExecutorRunBusyIsAnError(t *testing.T) {
	s := openStore(t, "sqlite")
	b, tools := startBank(t)
	entered, release := make(chan struct{}), make(chan struct{})
	b.gate = func(ctx context.Context, tool string) error {
		close(entered)
		<-release
		return nil
	}
	ex1, _ := loop.NewExecutor(loop.ExecutorOptions{RunID: "run-b", Journal: newJournal(t, s), Tools: tools})
	ex2, _ := loop.NewExecutor(loop.ExecutorOptions{RunID: "run-b", Journal: newJournal(t, s), Tools: tools})
	call := loop.ToolCall{ID: "c1", Name: "bank__charge", Args: json.RawMessage(`{"amount":1}`)}
	done := make(chan error, 1)
	go func() { _, err := ex1.Call(bg, call); done <- err }()
	<-entered
	o, err := ex2.Call(bg, call)
	close(release)
	if err1 := <-done; err1 != nil {
		t.Fatalf("first executor: %v", err1)
	}
	if de, ok := refusal.As(err); !ok || de.Code != refusal.RunBusy || o.Code != refusal.RunBusy {
		t.Fatalf("second executor: %+v, %v; want run_busy as an error", o, err)
	}
	if b.count("charge") != 1 {
		t.Fatalf("charge ran %d times", b.count("charge"))
	}
}

// TestJournalIDOfProviderIDs: usable IDs are kept; others (too long, not
// printable ASCII, the loop's reserved "turn-") map to a stable hashed ID.
func TestJournalIDOfProviderIDs(t *testing.T) {
	for _, id := range []string{"call_abc", "toolu_01A09q90qw90lq917835lq9"} {
		if got := loop.JournalID(id); got != id {
			t.Errorf("JournalID(%q) = %q", id, got)
		}
	}
	seen := map[string]bool{}
	for _, id := range []string{"turn-0", strings.Repeat("x", 129), "café", "a\nb"} {
		got := loop.JournalID(id)
		if got == id || !strings.HasPrefix(got, "id-") || len(got) != 35 || seen[got] || loop.JournalID(id) != got {
			t.Errorf("JournalID(%q) = %q", id, got)
		}
		seen[got] = true
	}
	if _, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "r"}); !errors.Is(err, loop.ErrInvalidOptions) {
		t.Errorf("no journal: %v", err)
	}
}
