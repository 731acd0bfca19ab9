package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/chattest"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
)

var bg = context.Background()

func TestRunToCompletion(t *testing.T) {
	for _, kind := range storeKinds() {
		t.Run(kind, func(t *testing.T) {
			s := openStore(t, kind)
			b, tools := startBank(t)
			chat, model := newChat(t, chattest.ByTurn(
				chattest.Reply{Text: "checking", Calls: []chattest.Call{{ID: "c1", Name: "bank__balance", Args: `{}`}}},
				chattest.Reply{Text: "your balance is fine"},
			))
			res := run(t, loop.Options{RunID: "run-1", Journal: newJournal(t, s), Model: model, Tools: tools,
				Prompt: "how is my balance?", System: "be brief"})
			if res.Text != "your balance is fine" || res.Paused || res.Turns != 2 || res.ReplayedTurns != 0 {
				t.Fatalf("result: %+v", res)
			}
			if got := chat.Requests(); got != 2 {
				t.Fatalf("model requests = %d, want 2", got)
			}
			if b.count("balance") != 1 {
				t.Fatalf("balance effects = %d", b.count("balance"))
			}
			m := toolMessage(t, res, "c1")
			if !strings.Contains(m.Content, "balance ok #1 key=run-1:c1") || m.IsError {
				t.Fatalf("tool message: %+v", m)
			}
			// The model saw the system prompt, the tools, and the result.
			log := chat.Log()
			if log[0].System != "be brief" || len(log[0].Tools) != 4 || log[0].Messages[0].Content != "how is my balance?" {
				t.Fatalf("first request: %+v", log[0])
			}
			last := log[1].Messages[len(log[1].Messages)-1]
			if last.Role != "tool" || last.ToolCallID != "c1" || !strings.Contains(last.Content, "balance ok") {
				t.Fatalf("second request's last message: %+v", last)
			}
			// Both turns and the call are in the journal.
			recs, err := s.ListRecords(bg, "", "run-1")
			if err != nil {
				t.Fatal(err)
			}
			ids := map[string]store.State{}
			for _, r := range recs {
				ids[r.ToolCallID] = r.State
			}
			for _, id := range []string{"turn-0", "turn-1", "c1"} {
				if ids[id] != store.StateSucceeded {
					t.Fatalf("record %s: %q (records %v)", id, ids[id], ids)
				}
			}
		})
	}
}

// A run stopped part-way (here by MaxTurns, as a crash between turns would
// leave it) resumes in a new process: recorded turns are replayed without
// asking the model, recorded calls without running their effects.
func TestResumeReplaysTurnsAndEffects(t *testing.T) {
	for _, kind := range storeKinds() {
		t.Run(kind, func(t *testing.T) {
			s := openStore(t, kind)
			b, tools := startBank(t)
			chat, model := newChat(t, chattest.ByTurn(
				chattest.Reply{Calls: []chattest.Call{{ID: "a", Name: "bank__charge", Args: `{"amount":5}`}}},
				chattest.Reply{Calls: []chattest.Call{{ID: "b", Name: "bank__charge", Args: `{"amount":7}`},
					{ID: "c", Name: "bank__balance"}}},
				chattest.Reply{Text: "charged twice"},
			))
			opts := loop.Options{RunID: "run-r", Journal: newJournal(t, s), Model: model, Tools: tools,
				Prompt: "charge me", MaxTurns: 2}
			res, err := loop.Run(bg, opts)
			if !errors.Is(err, loop.ErrMaxTurns) || res.Turns != 2 {
				t.Fatalf("first process: %+v, %v", res, err)
			}
			if chat.Requests() != 2 || b.count("charge") != 2 || b.count("balance") != 1 {
				t.Fatalf("first process: requests %d, charges %d, balance %d", chat.Requests(), b.count("charge"), b.count("balance"))
			}

			// "Second process": a new journal (new executor) on the reopened store.
			opts.Journal = newJournal(t, s.reopen(t))
			opts.MaxTurns = 0
			res = run(t, opts)
			if res.Text != "charged twice" || res.ReplayedTurns != 2 || res.Turns != 3 {
				t.Fatalf("resumed: %+v", res)
			}
			if chat.Requests() != 3 {
				t.Fatalf("model requests after resume = %d, want 3 (only the new turn)", chat.Requests())
			}
			if b.count("charge") != 2 || b.count("balance") != 1 {
				t.Fatalf("effects re-ran: charges %d, balance %d", b.count("charge"), b.count("balance"))
			}
			// The new turn saw the replayed results of the old calls.
			last := chat.Log()[2]
			if n := len(last.Messages); n != 6 || !strings.Contains(last.Messages[4].Content, "charge ok #2") {
				t.Fatalf("third request messages: %+v", last.Messages)
			}

			// Running a finished run again replays everything: no request, no effect.
			opts.Journal = newJournal(t, s.reopen(t))
			again := run(t, opts)
			if again.Text != "charged twice" || again.ReplayedTurns != 3 || chat.Requests() != 3 || b.total() != 3 {
				t.Fatalf("re-run of a finished run: %+v; requests %d, effects %d", again, chat.Requests(), b.total())
			}
		})
	}
}

// A model failure mid-run leaves the turn in doubt; the resume asks the
// model again for that turn (a turn has no effect) and nothing else.
func TestResumeAfterModelFailure(t *testing.T) {
	s := openStore(t, "sqlite")
	b, tools := startBank(t)
	failing := true
	chat, model := newChat(t, func(req chattest.Request) chattest.Reply {
		switch req.Turn() {
		case 0:
			return chattest.Reply{Calls: []chattest.Call{{ID: "a", Name: "bank__charge", Args: `{"amount":1}`}}}
		case 1:
			if failing {
				return chattest.Reply{Status: 503}
			}
		}
		return chattest.Reply{Text: "done"}
	})
	opts := loop.Options{RunID: "run-f", Journal: newJournal(t, s), Model: model, Tools: tools, Prompt: "go"}
	_, err := loop.Run(bg, opts)
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("want the model's 503, got %v", err)
	}
	failing = false
	opts.Journal = newJournal(t, s.reopen(t))
	res := run(t, opts)
	if res.Text != "done" || res.ReplayedTurns != 1 {
		t.Fatalf("resumed: %+v", res)
	}
	if chat.Requests() != 3 || b.count("charge") != 1 {
		t.Fatalf("requests %d (want 3: turn 0, failed turn 1, retried turn 1), charges %d", chat.Requests(), b.count("charge"))
	}
	rec, err := s.GetRecord(bg, store.RecordKey{RunID: "run-f", ToolCallID: "turn-1"})
	if err != nil || rec.State != store.StateInDoubt {
		t.Fatalf("failed turn record: %+v, %v", rec, err)
	}
	if _, err := s.GetRecord(bg, store.RecordKey{RunID: "run-f", ToolCallID: "turn-1.retry-1"}); err != nil {
		t.Fatalf("retried turn record: %v", err)
	}
	// And a third run replays through the chain without asking.
	opts.Journal = newJournal(t, s.reopen(t))
	if res := run(t, opts); res.ReplayedTurns != 2 || chat.Requests() != 3 {
		t.Fatalf("third run: %+v, requests %d", res, chat.Requests())
	}
}

func approveTransfers() policy.Guard {
	return policy.GuardFunc(func(_ context.Context, c policy.Call) (policy.Decision, error) {
		if c.Tool == "bank__transfer" {
			return policy.NeedsApproval("transfers need an operator"), nil
		}
		return policy.Allowed(), nil
	})
}

func TestPauseOnApprovalThenApprove(t *testing.T) {
	for _, kind := range storeKinds() {
		t.Run(kind, func(t *testing.T) {
			s := openStore(t, kind)
			b, tools := startBank(t)
			chat, model := newChat(t, chattest.ByTurn(
				chattest.Reply{Calls: []chattest.Call{
					{ID: "t1", Name: "bank__transfer", Args: `{"amount":100}`},
					{ID: "b1", Name: "bank__balance"},
				}},
				chattest.Reply{Text: "transferred"},
			))
			opts := loop.Options{RunID: "run-a", Journal: newJournal(t, s), Model: model, Tools: tools,
				Guard: approveTransfers(), Prompt: "send 100", Owner: "alice"}
			res := run(t, opts)
			if !res.Paused || len(res.ApprovalIDs) != 1 || res.Text != "" {
				t.Fatalf("want paused on one approval: %+v", res)
			}
			id := res.ApprovalIDs[0]
			if b.count("transfer") != 0 || b.count("balance") != 1 || chat.Requests() != 1 {
				t.Fatalf("while paused: transfer %d, balance %d, requests %d", b.count("transfer"), b.count("balance"), chat.Requests())
			}
			a, err := s.GetApproval(bg, id)
			if err != nil || a.State != store.ApprovalPending || a.Tool != "bank__transfer" {
				t.Fatalf("approval: %+v, %v", a, err)
			}

			// Resuming before a decision: still paused, nothing re-sent.
			opts.Journal = newJournal(t, s.reopen(t))
			res = run(t, opts)
			if !res.Paused || len(res.ApprovalIDs) != 1 || res.ApprovalIDs[0] != id {
				t.Fatalf("resume before decision: %+v", res)
			}
			if b.total() != 1 || chat.Requests() != 1 {
				t.Fatalf("resume before decision re-ran something: effects %d, requests %d", b.total(), chat.Requests())
			}

			if _, err := s.DecideApproval(bg, id, true, "operator", time.Now()); err != nil {
				t.Fatal(err)
			}
			opts.Journal = newJournal(t, s.reopen(t))
			res = run(t, opts)
			if res.Paused || res.Text != "transferred" {
				t.Fatalf("after approval: %+v", res)
			}
			if b.count("transfer") != 1 || b.count("balance") != 1 || chat.Requests() != 2 {
				t.Fatalf("after approval: transfer %d, balance %d, requests %d", b.count("transfer"), b.count("balance"), chat.Requests())
			}
			if m := toolMessage(t, res, "t1"); !strings.Contains(m.Content, "transfer ok #1 key=run-a:t1") {
				t.Fatalf("transfer result: %+v", m)
			}
			// Once more: the approved call is not sent again.
			opts.Journal = newJournal(t, s.reopen(t))
			run(t, opts)
			if b.count("transfer") != 1 {
				t.Fatalf("approved transfer ran %d times", b.count("transfer"))
			}
		})
	}
}

func TestPauseOnApprovalThenDeny(t *testing.T) {
	s := openStore(t, "sqlite")
	b, tools := startBank(t)
	chat, model := newChat(t, chattest.ByTurn(
		chattest.Reply{Calls: []chattest.Call{{ID: "t1", Name: "bank__transfer", Args: `{"amount":100}`}}},
		chattest.Reply{Text: "could not transfer"},
	))
	opts := loop.Options{RunID: "run-d", Journal: newJournal(t, s), Model: model, Tools: tools,
		Guard: approveTransfers(), Prompt: "send 100"}
	res := run(t, opts)
	if !res.Paused {
		t.Fatalf("want paused: %+v", res)
	}
	if _, err := s.DecideApproval(bg, res.ApprovalIDs[0], false, "operator", time.Now()); err != nil {
		t.Fatal(err)
	}
	opts.Journal = newJournal(t, s.reopen(t))
	res = run(t, opts)
	if res.Paused || res.Text != "could not transfer" {
		t.Fatalf("after deny: %+v", res)
	}
	m := toolMessage(t, res, "t1")
	if !m.IsError || !strings.HasPrefix(m.Content, "[approval_denied]") {
		t.Fatalf("denied call's message: %+v", m)
	}
	if b.count("transfer") != 0 || chat.Requests() != 2 {
		t.Fatalf("transfer effects %d, requests %d", b.count("transfer"), chat.Requests())
	}
	// The model was told.
	last := chat.Log()[1].Messages
	if !strings.Contains(last[len(last)-1].Content, "[approval_denied]") {
		t.Fatalf("model's view: %+v", last[len(last)-1])
	}
}

// Calls of one turn run at the same time (the two allowed calls meet at a
// barrier inside their effects), and a denied sibling becomes that call's
// tool result without cancelling the others.
func TestParallelCallsOneDenied(t *testing.T) {
	for _, kind := range storeKinds() {
		t.Run(kind, func(t *testing.T) {
			s := openStore(t, kind)
			b, tools := startBank(t)
			b.gate = barrier("balance", "charge")
			chat, model := newChat(t, chattest.ByTurn(
				chattest.Reply{Calls: []chattest.Call{
					{ID: "x", Name: "bank__balance"},
					{ID: "y", Name: "bank__delete_account"},
					{ID: "z", Name: "bank__charge", Args: `{"amount":3}`},
				}},
				chattest.Reply{Text: "ok"},
			))
			fw, err := policy.NewFirewall(policy.FirewallOptions{Deny: []string{"bank__delete_account"}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			res, err := loop.Run(ctx, loop.Options{RunID: "run-p", Journal: newJournal(t, s), Model: model,
				Tools: tools, Guard: fw, Prompt: "go"})
			if err != nil {
				t.Fatal(err)
			}
			if b.count("balance") != 1 || b.count("charge") != 1 || b.count("delete_account") != 0 {
				t.Fatalf("effects: %v", b.effects)
			}
			if m := toolMessage(t, res, "x"); m.IsError || !strings.Contains(m.Content, "balance ok") {
				t.Fatalf("x: %+v", m)
			}
			if m := toolMessage(t, res, "z"); m.IsError || !strings.Contains(m.Content, "charge ok") {
				t.Fatalf("z: %+v", m)
			}
			m := toolMessage(t, res, "y")
			if !m.IsError || !strings.HasPrefix(m.Content, "[denied]") || !strings.Contains(m.Content, "bank__delete_account") {
				t.Fatalf("y: %+v", m)
			}
			// Results are in call order in what the model saw next.
			msgs := chat.Log()[1].Messages
			var order []string
			for _, wm := range msgs {
				if wm.Role == "tool" {
					order = append(order, wm.ToolCallID)
				}
			}
			if strings.Join(order, ",") != "x,y,z" {
				t.Fatalf("tool results order: %v", order)
			}
		})
	}
}

func TestReadOnlyPolicy(t *testing.T) {
	s := openStore(t, "memory")
	b, tools := startBank(t)
	_, model := newChat(t, chattest.ByTurn(
		chattest.Reply{Calls: []chattest.Call{
			{ID: "r", Name: "bank__balance"},
			{ID: "w", Name: "bank__charge", Args: `{"amount":9}`},
		}},
	))
	res := run(t, loop.Options{RunID: "run-ro", Journal: newJournal(t, s), Model: model, Tools: tools,
		Guard: policy.ReadOnly("bank__balance"), Prompt: "look only"})
	if b.count("balance") != 1 || b.count("charge") != 0 {
		t.Fatalf("effects: %v", b.effects)
	}
	m := toolMessage(t, res, "w")
	if !m.IsError || !strings.HasPrefix(m.Content, "[denied]") || !strings.Contains(m.Content, `"bank__charge"`) {
		t.Fatalf("write call: %+v", m)
	}
	if res.Text != "done" {
		t.Fatalf("result: %+v", res)
	}
}

// The firewall's cap counts distinct calls in the store, so it holds across
// a resume in a new process: replayed calls are not counted again.
func TestFirewallCapAcrossResume(t *testing.T) {
	for _, kind := range storeKinds() {
		t.Run(kind, func(t *testing.T) {
			s := openStore(t, kind)
			b, tools := startBank(t)
			chat, model := newChat(t, chattest.ByTurn(
				chattest.Reply{Calls: []chattest.Call{
					{ID: "c1", Name: "bank__charge", Args: `{"amount":1}`},
					{ID: "c2", Name: "bank__charge", Args: `{"amount":2}`},
				}},
				chattest.Reply{Calls: []chattest.Call{{ID: "c3", Name: "bank__charge", Args: `{"amount":3}`}}},
				chattest.Reply{Text: "stopped at the cap"},
			))
			firewall := func(c store.CounterStore) policy.Guard {
				g, err := policy.NewFirewall(policy.FirewallOptions{MaxCallsPerRun: 2, Counters: c})
				if err != nil {
					t.Fatal(err)
				}
				return g
			}
			opts := loop.Options{RunID: "run-cap", Journal: newJournal(t, s), Model: model, Tools: tools,
				Guard: firewall(s), Prompt: "charge", MaxTurns: 1}
			if _, err := loop.Run(bg, opts); !errors.Is(err, loop.ErrMaxTurns) {
				t.Fatalf("first process: %v", err)
			}
			if b.count("charge") != 2 {
				t.Fatalf("charges = %d", b.count("charge"))
			}
			s2 := s.reopen(t)
			opts.Journal, opts.Guard, opts.MaxTurns = newJournal(t, s2), firewall(s2), 0
			res := run(t, opts)
			if b.count("charge") != 2 {
				t.Fatalf("charges after resume = %d, want 2", b.count("charge"))
			}
			// The replayed calls kept their results (not re-counted into a refusal)...
			for _, id := range []string{"c1", "c2"} {
				if m := toolMessage(t, res, id); m.IsError {
					t.Fatalf("%s after resume: %+v", id, m)
				}
			}
			// ...and the third distinct call hit the cap.
			m := toolMessage(t, res, "c3")
			if !m.IsError || !strings.HasPrefix(m.Content, "[call_limit]") {
				t.Fatalf("c3: %+v", m)
			}
			if res.Text != "stopped at the cap" || chat.Requests() != 3 {
				t.Fatalf("result %+v, requests %d", res, chat.Requests())
			}
		})
	}
}

// A model that omits call IDs, repeats them, or uses the loop's reserved
// "turn-" prefix gets deterministic IDs, so a resume maps each call to its
// record and re-runs nothing.
func TestCallIDsDeterministic(t *testing.T) {
	s := openStore(t, "sqlite")
	b, tools := startBank(t)
	chat, model := newChat(t, chattest.ByTurn(
		chattest.Reply{Calls: []chattest.Call{
			{Name: "bank__charge", Args: `{"amount":1}`},
			{ID: "dup", Name: "bank__charge", Args: `{"amount":2}`},
			{ID: "dup", Name: "bank__charge", Args: `{"amount":3}`},
		}},
		chattest.Reply{Calls: []chattest.Call{
			{ID: "turn-3", Name: "bank__charge", Args: `{"amount":4}`}, // would collide with a turn record
			{ID: "dup", Name: "bank__charge", Args: `{"amount":5}`},    // reused across turns
		}},
	))
	opts := loop.Options{RunID: "run-ids", Journal: newJournal(t, s), Model: model, Tools: tools, Prompt: "go"}
	run(t, opts)
	if b.count("charge") != 5 {
		t.Fatalf("charges = %d, want 5 distinct calls", b.count("charge"))
	}
	want := []string{"run-ids:turn-0-call-0", "run-ids:dup", "run-ids:turn-0-call-2", "run-ids:turn-1-call-0", "run-ids:turn-1-call-1"}
	for _, k := range want {
		if b.keys[k] != "charge" {
			t.Fatalf("key %s not sent; keys %v", k, b.keys)
		}
	}
	opts.Journal = newJournal(t, s.reopen(t))
	res := run(t, opts)
	if b.count("charge") != 5 || chat.Requests() != 3 || res.ReplayedTurns != 3 {
		t.Fatalf("resume: charges %d, requests %d, %+v", b.count("charge"), chat.Requests(), res)
	}
}

func TestUnknownToolAndBadArguments(t *testing.T) {
	s := openStore(t, "memory")
	b, tools := startBank(t)
	_, model := newChat(t, chattest.ByTurn(
		chattest.Reply{Calls: []chattest.Call{
			{ID: "u", Name: "bank__steal"},
			{ID: "a", Name: "bank__charge", Args: `[1,2]`},
			{ID: "d", Name: "bank__charge", Args: `{"amount":1,"amount":2}`}, // duplicate keys
		}},
	))
	res := run(t, loop.Options{RunID: "run-u", Journal: newJournal(t, s), Model: model, Tools: tools, Prompt: "go"})
	if m := toolMessage(t, res, "u"); !m.IsError || !strings.Contains(m.Content, `unknown tool "bank__steal"`) {
		t.Fatalf("unknown tool: %+v", m)
	}
	if m := toolMessage(t, res, "a"); !m.IsError || !strings.Contains(m.Content, "invalid arguments") {
		t.Fatalf("array args: %+v", m)
	}
	if m := toolMessage(t, res, "d"); !m.IsError || !strings.Contains(m.Content, "invalid arguments") {
		t.Fatalf("duplicate-key args: %+v", m)
	}
	if b.total() != 0 || res.Text != "done" {
		t.Fatalf("effects %d, result %+v", b.total(), res)
	}
}

// Reusing a run ID for another prompt is refused, never replayed.
func TestRunIDReusedWithOtherPrompt(t *testing.T) {
	s := openStore(t, "memory")
	_, tools := startBank(t)
	chat, model := newChat(t, chattest.ByTurn())
	j := newJournal(t, s)
	run(t, loop.Options{RunID: "r", Journal: j, Model: model, Tools: tools, Prompt: "first"})
	_, err := loop.Run(bg, loop.Options{RunID: "r", Journal: j, Model: model, Tools: tools, Prompt: "second"})
	de, ok := refusal.As(err)
	if !ok || de.Code != refusal.KeyReused {
		t.Fatalf("want key_reused, got %v", err)
	}
	if chat.Requests() != 1 {
		t.Fatalf("requests = %d", chat.Requests())
	}
}

func TestInvalidOptions(t *testing.T) {
	s := openStore(t, "memory")
	j := newJournal(t, s)
	m := loop.ModelFunc(func(context.Context, loop.ModelRequest) (loop.ModelResponse, error) {
		return loop.ModelResponse{}, nil
	})
	call := loop.Tool{Name: "t", Call: nil}
	for name, o := range map[string]loop.Options{
		"no run id":      {Journal: j, Model: m},
		"no journal":     {RunID: "r", Model: m},
		"no model":       {RunID: "r", Journal: j},
		"negative turns": {RunID: "r", Journal: j, Model: m, MaxTurns: -1},
		"tool sans call": {RunID: "r", Journal: j, Model: m, Tools: []loop.Tool{call}},
	} {
		if _, err := loop.Run(bg, o); !errors.Is(err, loop.ErrInvalidOptions) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A call paused for approval is put to the guard again on every resume
// (it has no journal record yet). With the firewall's cap at 1 in front of
// the approval, the re-checks must not count it again: after approval it
// runs instead of hitting call_limit.
func TestCapAndApprovalAcrossResumes(t *testing.T) {
	s := openStore(t, "sqlite")
	b, tools := startBank(t)
	_, model := newChat(t, chattest.ByTurn(
		chattest.Reply{Calls: []chattest.Call{{ID: "t1", Name: "bank__transfer", Args: `{"amount":1}`}}},
		chattest.Reply{Calls: []chattest.Call{{ID: "t2", Name: "bank__transfer", Args: `{"amount":2}`}}},
		chattest.Reply{Text: "end"},
	))
	guard := func(st store.Store) policy.Guard {
		fw, err := policy.NewFirewall(policy.FirewallOptions{MaxCallsPerRun: 1, Counters: st})
		if err != nil {
			t.Fatal(err)
		}
		return policy.Compose(fw, approveTransfers())
	}
	opts := loop.Options{RunID: "run-ca", Journal: newJournal(t, s), Model: model, Tools: tools, Guard: guard(s), Prompt: "go"}
	res := run(t, opts)
	for i := 0; i < 3; i++ { // resumes before the decision re-check the call
		st := s.reopen(t)
		opts.Journal, opts.Guard = newJournal(t, st), guard(st)
		res = run(t, opts)
		if !res.Paused {
			t.Fatalf("resume %d: %+v", i, res)
		}
	}
	if _, err := s.DecideApproval(bg, res.ApprovalIDs[0], true, "op", time.Now()); err != nil {
		t.Fatal(err)
	}
	st := s.reopen(t)
	opts.Journal, opts.Guard = newJournal(t, st), guard(st)
	res = run(t, opts)
	if m := toolMessage(t, res, "t1"); m.IsError {
		t.Fatalf("approved call after re-checks: %+v", m)
	}
	if m := toolMessage(t, res, "t2"); !strings.HasPrefix(m.Content, "[call_limit]") {
		t.Fatalf("second transfer: %+v", m)
	}
	if b.count("transfer") != 1 || res.Text != "end" {
		t.Fatalf("transfers %d, %+v", b.count("transfer"), res)
	}
}

// A hostile model that repeats an approved call's ID with other arguments
// does not ride on that approval: the repeat gets its own ID and its own
// approval.
func TestApprovalNotReusedByRepeatedID(t *testing.T) {
	s := openStore(t, "memory")
	b, tools := startBank(t)
	_, model := newChat(t, chattest.ByTurn(
		chattest.Reply{Calls: []chattest.Call{{ID: "t1", Name: "bank__transfer", Args: `{"amount":1}`}}},
		chattest.Reply{Calls: []chattest.Call{{ID: "t1", Name: "bank__transfer", Args: `{"amount":1000}`}}},
	))
	opts := loop.Options{RunID: "run-h", Journal: newJournal(t, s), Model: model, Tools: tools,
		Guard: approveTransfers(), Prompt: "go"}
	res := run(t, opts)
	first := res.ApprovalIDs[0]
	if _, err := s.DecideApproval(bg, first, true, "op", time.Now()); err != nil {
		t.Fatal(err)
	}
	res = run(t, opts)
	if !res.Paused || len(res.ApprovalIDs) != 1 || res.ApprovalIDs[0] == first {
		t.Fatalf("repeat of an approved ID: %+v", res)
	}
	if b.count("transfer") != 1 {
		t.Fatalf("transfers = %d, want only the approved one", b.count("transfer"))
	}
	a, err := s.GetApproval(bg, res.ApprovalIDs[0])
	if err != nil || a.ToolCallID != "turn-1-call-0" {
		t.Fatalf("second approval: %+v, %v", a, err)
	}
}

// A Go tool's errors: one marked durable.Failed is a known failure the
// model reads and a replay repeats; an unmarked one leaves the outcome
// unknown (in_doubt) and is never re-sent.
func TestGoToolErrors(t *testing.T) {
	s := openStore(t, "memory")
	var mu sync.Mutex
	runs := map[string]int{}
	mk := func(name string, err error) loop.Tool {
		return loop.Tool{Name: name, Call: func(context.Context, json.RawMessage, string) (*mcp.CallToolResult, error) {
			mu.Lock() // the calls of a turn run in parallel
			defer mu.Unlock()
			runs[name]++
			return nil, err
		}}
	}
	tools := []loop.Tool{
		mk("known", durable.Failed(errors.New("card declined"))),
		mk("unknown", errors.New("connection reset")),
	}
	_, model := newChat(t, chattest.ByTurn(chattest.Reply{Calls: []chattest.Call{{ID: "k", Name: "known"}, {ID: "u", Name: "unknown"}}}))
	opts := loop.Options{RunID: "run-e", Journal: newJournal(t, s), Model: model, Tools: tools, Prompt: "go"}
	for i := 0; i < 2; i++ {
		res := run(t, opts)
		if m := toolMessage(t, res, "k"); !m.IsError || m.Content != "error: card declined" {
			t.Fatalf("round %d, known failure: %+v", i, m)
		}
		if m := toolMessage(t, res, "u"); !m.IsError || !strings.HasPrefix(m.Content, "[in_doubt]") {
			t.Fatalf("round %d, unknown outcome: %+v", i, m)
		}
	}
	if runs["known"] != 1 || runs["unknown"] != 1 {
		t.Fatalf("runs: %v", runs)
	}
}
