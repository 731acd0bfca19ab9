package fantasy_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	ghfantasy "github.com/gatehouse-dev/gatehouse/adapters/fantasy"
	"github.com/gatehouse-dev/gatehouse/adapters/fantasy/fantasytest"
	"github.com/gatehouse-dev/gatehouse/adapters/internal/agentcrash"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/store"
)

// streamScript is a turn of text and two parallel calls, then an answer.
func streamScript() []fantasytest.Reply {
	return []fantasytest.Reply{
		{Text: "Let me charge that and echo the note.", Calls: []fantasytest.Call{
			{ID: "call_s1", Name: "pay__charge_once", Args: `{"amount":5}`},
			{ID: "call_s2", Name: "pay__echo", Args: `{"say":"hello there, streaming world – für dich"}`},
		}},
		{Text: "Charged 5 and echoed: hello there, streaming world."},
	}
}

// TestStreamDeltas drives loop.Run with OnDelta through Model over
// fantasy's OpenAI provider, whose Stream reads the wire server's
// chat.completion.chunk events: the deltas arrive in pieces, in order,
// and concatenate to each turn's text and each call's arguments; the
// journal's rows read back equal those of the same run without streaming.
func TestStreamDeltas(t *testing.T) {
	run := func(d *agentcrash.Deltas) ([]string, *loop.Result) {
		ts, file := agentcrash.OpenToolset(t)
		srv := wireServer(t, streamScript()...)
		st := agentcrash.OpenStore(t, t.TempDir()+"/gatehouse.db")
		opts := loop.Options{RunID: "run-stream", Journal: agentcrash.NewJournal(t, st), Model: ghfantasy.NewModel(languageModel(t, srv), nil),
			Tools: agentcrash.Tools(t, ts), System: "You are a cashier.", Prompt: "Charge 5 and say hello."}
		if d != nil {
			opts.OnDelta = d.Add
		}
		res, err := loop.Run(agentcrash.Ctx(t), opts)
		if err != nil {
			t.Fatal(err)
		}
		if e := agentcrash.EffectsOf(t, file); agentcrash.Total(e) != 1 || e["run-stream:call_s1"] != 1 {
			t.Fatalf("effects %v", e)
		}
		for i := 0; i < srv.Requests(); i++ {
			if request(t, srv, i).Stream != (d != nil) {
				t.Fatalf("request %d: stream %v", i, d == nil)
			}
		}
		return agentcrash.Rows(t, st, "run-stream"), res
	}
	var d agentcrash.Deltas
	got, res := run(&d)
	if res.Text != "Charged 5 and echoed: hello there, streaming world." || res.Turns != 2 {
		t.Fatalf("result %q, %d turns", res.Text, res.Turns)
	}
	turn0 := res.Messages[1]
	text, args, ids, n := d.Turn(0)
	if text != turn0.Content || text != "Let me charge that and echo the note." {
		t.Fatalf("turn 0 streamed text %q, response %q", text, turn0.Content)
	}
	if len(turn0.ToolCalls) != 2 || args[0] != string(turn0.ToolCalls[0].Args) || args[1] != string(turn0.ToolCalls[1].Args) ||
		args[1] != `{"say":"hello there, streaming world – für dich"}` {
		t.Fatalf("turn 0 streamed args %v, calls %+v", args, turn0.ToolCalls)
	}
	if strings.Join(ids, " ") != "0:call_s1:pay__charge_once 1:call_s2:pay__echo" {
		t.Fatalf("call deltas named %v", ids)
	}
	if n < 10 {
		t.Fatalf("turn 0 came in %d deltas: not streamed in pieces", n)
	}
	if text, args, _, n := d.Turn(1); text != res.Text || len(args) != 0 || n < 5 {
		t.Fatalf("turn 1 streamed %q %v in %d deltas", text, args, n)
	}
	if err := d.InOrder(); err != nil {
		t.Fatal(err)
	}
	want, _ := run(nil)
	if strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) != 4 {
		t.Fatalf("journal streamed:\n%s\nnot streamed:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestStreamCut: the wire server closes the connection mid-stream (in
// turn 0's text; in a call's arguments). The run fails, nothing ran, the
// turn's record holds no response; the resume streams the turn again and
// finishes with one effect.
func TestStreamCut(t *testing.T) {
	for _, at := range []int{3, 12} {
		t.Run(fmt.Sprintf("after-%d-events", at), func(t *testing.T) {
			ts, file := agentcrash.OpenToolset(t)
			srv := wireServer(t, streamScript()...)
			st := agentcrash.OpenStore(t, t.TempDir()+"/gatehouse.db")
			var d agentcrash.Deltas
			opts := loop.Options{RunID: "run-cut", Journal: agentcrash.NewJournal(t, st), Model: ghfantasy.NewModel(languageModel(t, srv), nil),
				Tools: agentcrash.Tools(t, ts), Prompt: "Charge 5 and say hello.", OnDelta: d.Add}
			srv.CutNext(at)
			res, err := loop.Run(agentcrash.Ctx(t), opts)
			if err == nil {
				t.Fatal("Run after a cut stream: no error")
			}
			if res.Turns != 0 || agentcrash.Total(agentcrash.EffectsOf(t, file)) != 0 {
				t.Fatalf("after the cut (%v): %d turns, effects %v", err, res.Turns, agentcrash.EffectsOf(t, file))
			}
			if _, _, _, n := d.Turn(0); n == 0 {
				t.Fatal("nothing streamed before the cut")
			}
			rec, gerr := st.GetRecord(agentcrash.Ctx(t), store.RecordKey{RunID: "run-cut", ToolCallID: "turn-0"})
			if gerr != nil || rec.State != store.StateInDoubt || len(rec.Outcome) != 0 {
				t.Fatalf("turn record after the cut (%v): %+v, %v", err, rec, gerr)
			}

			var again agentcrash.Deltas
			opts.Journal = agentcrash.NewJournal(t, st)
			opts.OnDelta = again.Add
			res, err = loop.Run(agentcrash.Ctx(t), opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != streamScript()[1].Text || res.ReplayedTurns != 0 || srv.Requests() != 3 {
				t.Fatalf("resume: %+v, %d requests", res, srv.Requests())
			}
			if text, args, _, _ := again.Turn(0); text != streamScript()[0].Text || args[1] != streamScript()[0].Calls[1].Args {
				t.Fatalf("the resume streamed turn 0 as %q %v", text, args)
			}
			if e := agentcrash.EffectsOf(t, file); agentcrash.Total(e) != 1 || e["run-cut:call_s1"] != 1 {
				t.Fatalf("effects %v", e)
			}
		})
	}
}

// TestStreamEndsEarly: chunks that end cleanly without a finish reason
// (and without [DONE]) are an error — fantasy's OpenAI provider reports
// the stream's unexpected end itself, before TurnStream would find the
// finish part missing (ErrIncomplete) — and the turn records no response.
func TestStreamEndsEarly(t *testing.T) {
	const partial = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Half an \"},\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"answer\"},\"finish_reason\":null}]}\n\n"
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(partial))
	}))
	defer hs.Close()
	lm, err := newLanguageModel(agentcrash.Ctx(t), hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	st := agentcrash.OpenStore(t, t.TempDir()+"/gatehouse.db")
	var d agentcrash.Deltas
	_, err = loop.Run(agentcrash.Ctx(t), loop.Options{RunID: "run-early", Journal: agentcrash.NewJournal(t, st), Model: ghfantasy.NewModel(lm, nil),
		Prompt: "hi", OnDelta: d.Add})
	if err == nil || !(errors.Is(err, ghfantasy.ErrIncomplete) || strings.Contains(err.Error(), "unexpected EOF")) {
		t.Fatalf("Run: %v, want the stream's unexpected end", err)
	}
	if text, _, _, _ := d.Turn(0); text != "Half an answer" {
		t.Fatalf("streamed %q", text)
	}
	rec, err := st.GetRecord(agentcrash.Ctx(t), store.RecordKey{RunID: "run-early", ToolCallID: "turn-0"})
	if err != nil || rec.State != store.StateInDoubt || len(rec.Outcome) != 0 {
		t.Fatalf("turn record %+v, %v", rec, err)
	}
}
