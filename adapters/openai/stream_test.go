package openai_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-dev/gatehouse/adapters/openai"
	"github.com/gatehouse-dev/gatehouse/adapters/openai/openaitest"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/store"
)

// deltas collects what loop.Run streams to Options.OnDelta.
type deltas struct {
	mu sync.Mutex
	ds []loop.Delta
}

func (d *deltas) add(x loop.Delta) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ds = append(d.ds, x)
}

// turn returns turn n's text deltas concatenated, its calls' argument
// deltas concatenated by index, the IDs and names its calls' deltas
// carried, and how many deltas it had.
func (d *deltas) turn(n int) (text string, args map[int]string, ids []string, count int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	args = map[int]string{}
	for _, x := range d.ds {
		if x.Turn != n {
			continue
		}
		count++
		if c := x.ToolCall; c != nil {
			args[c.Index] += c.Args
			if c.ID != "" || c.Name != "" {
				ids = append(ids, fmt.Sprintf("%d:%s:%s", c.Index, c.ID, c.Name))
			}
			continue
		}
		b.WriteString(x.Text)
	}
	return b.String(), args, ids, count
}

// rows returns a run's journal records as "id state fingerprint outcome"
// lines, sorted (parallel calls are recorded in any order), the effect
// server's random receipts masked.
func rows(t *testing.T, s store.Store, runID string) []string {
	t.Helper()
	recs, err := s.ListRecords(context.Background(), "", runID)
	if err != nil {
		t.Fatal(err)
	}
	receipt := regexp.MustCompile(`rcpt_[0-9a-f]+`)
	var out []string
	for _, r := range recs {
		out = append(out, r.ToolCallID+" "+string(r.State)+" "+r.Fingerprint+" "+receipt.ReplaceAllString(string(r.Outcome), "rcpt_X"))
	}
	sort.Strings(out)
	return out
}

// streamScript is a turn of text and two parallel calls, then an answer.
func streamScript() []openaitest.Reply {
	return []openaitest.Reply{
		{Text: "Let me charge that and echo the note.", Calls: []openaitest.Call{
			{ID: "call_s1", Name: "pay__charge_once", Args: `{"amount":5}`},
			{ID: "call_s2", Name: "pay__echo", Args: `{"say":"hello there, streaming world – für dich"}`},
		}},
		{Text: "Charged 5 and echoed: hello there, streaming world."},
	}
}

// TestStreamDeltas drives loop.Run with OnDelta through each API's model
// and the real SDK against the wire server streaming server-sent events
// (Chat's chunks and [DONE], the Responses API's typed events): the
// deltas arrive in pieces, in order, and concatenate to each turn's text
// and each call's arguments; the journal's rows read back equal those of
// the same run without streaming.
func TestStreamDeltas(t *testing.T) {
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			streamed := func(d *deltas) ([]string, *loop.Result, *openaitest.Server) {
				ts, file := openEffects(t, nil)
				srv := openaitest.NewServer(streamScript()...)
				t.Cleanup(srv.Close)
				st := sqliteStore(t, "")
				opts := loop.Options{RunID: "run-stream", Journal: newJournal(t, st), Model: newModel(api, srv),
					Tools: toolsetTools(t, ts), System: "You are a cashier.", Prompt: "Charge 5 and say hello."}
				if d != nil {
					opts.OnDelta = d.add
				}
				res, err := loop.Run(ctxT(t), opts)
				if err != nil {
					t.Fatal(err)
				}
				if got := effects(t, file); len(got) != 1 || got["run-stream:call_s1"] != 1 {
					t.Fatalf("effects %v", got)
				}
				for i, b := range srv.Bodies() {
					if s, _ := body(t, b)["stream"].(bool); s != (d != nil) {
						t.Fatalf("request %d: stream %v, want %v", i, s, d != nil)
					}
				}
				return rows(t, st, "run-stream"), res, srv
			}
			var d deltas
			got, res, _ := streamed(&d)
			if res.Text != "Charged 5 and echoed: hello there, streaming world." || res.Turns != 2 {
				t.Fatalf("result %q, %d turns", res.Text, res.Turns)
			}
			turn0 := res.Messages[1]
			text, args, ids, n := d.turn(0)
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
			if text, args, _, n := d.turn(1); text != res.Text || len(args) != 0 || n < 5 {
				t.Fatalf("turn 1 streamed %q %v in %d deltas", text, args, n)
			}
			// In order: every delta of turn 0 before turn 1's, and turn 0's
			// text before its calls (as the server sent them).
			for i := 1; i < len(d.ds); i++ {
				a, b := d.ds[i-1], d.ds[i]
				if b.Turn < a.Turn || (a.Turn == b.Turn && a.ToolCall != nil && b.ToolCall == nil) ||
					(a.ToolCall != nil && b.ToolCall != nil && a.Turn == b.Turn && b.ToolCall.Index < a.ToolCall.Index) {
					t.Fatalf("delta %d (%+v) after %+v", i, b, a)
				}
			}
			want, _, _ := streamed(nil)
			if strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) != 4 {
				t.Fatalf("journal streamed:\n%s\nnot streamed:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestStreamCut: the wire server closes the connection mid-stream (turn
// 0, after its text began and before the calls' arguments ended). The
// run fails with the transport's error, nothing ran, the turn's record
// holds no response; the resume streams the turn again from its start and
// finishes with one effect.
func TestStreamCut(t *testing.T) {
	for _, api := range apis {
		// Cut in the text, and in a call's arguments.
		cuts := map[string][]int{"chat": {3, 12}, "responses": {7, 16}}
		for _, at := range cuts[api] {
			t.Run(fmt.Sprintf("%s/after-%d-events", api, at), func(t *testing.T) {
				ts, file := openEffects(t, nil)
				srv := openaitest.NewServer(streamScript()...)
				defer srv.Close()
				st := sqliteStore(t, "")
				var d deltas
				opts := loop.Options{RunID: "run-cut", Journal: newJournal(t, st), Model: newModel(api, srv),
					Tools: toolsetTools(t, ts), Prompt: "Charge 5 and say hello.", OnDelta: d.add}
				srv.CutNext(at)
				res, err := loop.Run(ctxT(t), opts)
				if err == nil || !strings.Contains(err.Error(), "EOF") {
					t.Fatalf("Run after a cut stream: %v, want an unexpected EOF", err)
				}
				if res.Turns != 0 || len(effects(t, file)) != 0 {
					t.Fatalf("after the cut: %d turns, effects %v", res.Turns, effects(t, file))
				}
				if _, _, _, n := d.turn(0); n == 0 {
					t.Fatal("nothing streamed before the cut")
				}
				recs, err := st.ListRecords(context.Background(), "", "run-cut")
				if err != nil {
					t.Fatal(err)
				}
				if len(recs) != 1 || recs[0].ToolCallID != "turn-0" || recs[0].State != store.StateInDoubt || len(recs[0].Outcome) != 0 {
					t.Fatalf("journal after the cut: %+v", recs)
				}

				var again deltas
				opts.Journal = newJournal(t, st)
				opts.OnDelta = again.add
				res, err = loop.Run(ctxT(t), opts)
				if err != nil {
					t.Fatal(err)
				}
				if res.Text != streamScript()[1].Text || res.ReplayedTurns != 0 || srv.Requests() != 3 {
					t.Fatalf("resume: %+v, %d requests", res, srv.Requests())
				}
				if text, args, _, _ := again.turn(0); text != streamScript()[0].Text || args[1] != streamScript()[0].Calls[1].Args {
					t.Fatalf("the resume streamed turn 0 as %q %v", text, args)
				}
				if got := effects(t, file); len(got) != 1 || got["run-cut:call_s1"] != 1 {
					t.Fatalf("effects %v", got)
				}
			})
		}
	}
}

// TestStreamEndsEarly: a stream that ends cleanly (the body closed
// properly) before the response is whole — Chat chunks without a finish
// reason or [DONE], a Responses stream without response.completed — is
// ErrIncomplete, and the turn records no response.
func TestStreamEndsEarly(t *testing.T) {
	partial := map[string]string{
		"chat": "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Half an \"},\"finish_reason\":null}]}\n\n" +
			"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"answer\"},\"finish_reason\":null}]}\n\n",
		"responses": "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":3,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Half an \",\"logprobs\":[]}\n\n" +
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":4,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"answer\",\"logprobs\":[]}\n\n",
	}
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte(partial[api]))
			}))
			defer hs.Close()
			st := sqliteStore(t, "")
			var d deltas
			var model loop.Model = openai.NewResponsesModel(clientAt(hs.URL), "gpt-test")
			if api == "chat" {
				model = openai.NewChatModel(clientAt(hs.URL), "gpt-test")
			}
			_, err := loop.Run(ctxT(t), loop.Options{RunID: "run-early", Journal: newJournal(t, st), Model: model,
				Prompt: "hi", OnDelta: d.add})
			if !errors.Is(err, openai.ErrIncomplete) {
				t.Fatalf("Run: %v, want ErrIncomplete", err)
			}
			if text, _, _, _ := d.turn(0); text != "Half an answer" {
				t.Fatalf("streamed %q", text)
			}
			rec, err := st.GetRecord(context.Background(), store.RecordKey{RunID: "run-early", ToolCallID: "turn-0"})
			if err != nil || rec.State != store.StateInDoubt || len(rec.Outcome) != 0 {
				t.Fatalf("turn record %+v, %v", rec, err)
			}
		})
	}
}
