package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	anthropic "github.com/gatehouse-dev/gatehouse/adapters/anthropic"
	"github.com/gatehouse-dev/gatehouse/adapters/anthropic/anthropictest"
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

// rows returns a run's journal records as sorted "id state fingerprint
// outcome" lines, the effect server's random receipts masked.
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

// streamScript is a turn of text and two parallel tool_use blocks, then
// an answer.
func streamScript() []anthropictest.Reply {
	return []anthropictest.Reply{
		{Text: "Let me charge that and echo the note.", Calls: []anthropictest.Call{
			{ID: "toolu_s1", Name: "effects__charge_once", Args: `{"amount":5}`},
			{ID: "toolu_s2", Name: "effects__echo", Args: `{"say":"hello there, streaming world – für dich"}`},
		}},
		{Text: "Charged 5 and echoed: hello there, streaming world."},
	}
}

func streamModel(client *sdk.Client) *anthropic.Model {
	return &anthropic.Model{Client: client, Params: sdk.MessageNewParams{Model: "claude-test", MaxTokens: 512}}
}

// TestStreamDeltas drives loop.Run with OnDelta through Model and the
// real SDK against the wire server streaming the Messages API's events:
// the deltas arrive in pieces, in order, and concatenate to each turn's
// text and each tool_use input; the journal's rows read back equal those
// of the same run without streaming.
func TestStreamDeltas(t *testing.T) {
	run := func(d *deltas) ([]string, *loop.Result) {
		tools, file := effects(t)
		srv, client := wire(t, streamScript()...)
		st := openStore(t, filepath.Join(t.TempDir(), "gh.db"))
		opts := loop.Options{RunID: "run-stream", Journal: newJournal(t, st), Model: streamModel(client),
			Tools: tools, System: "You are a cashier.", Prompt: "Charge 5 and say hello."}
		if d != nil {
			opts.OnDelta = d.add
		}
		res, err := loop.Run(ctxT(t), opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := effectCount(t, file); len(got) != 1 || got["run-stream:toolu_s1"] != 1 {
			t.Fatalf("effects %v", got)
		}
		for i := 0; i < srv.Requests(); i++ {
			if request(t, srv, i).Stream != (d != nil) {
				t.Fatalf("request %d: stream %v, want %v", i, !(d != nil), d != nil)
			}
		}
		return rows(t, st, "run-stream"), res
	}
	var d deltas
	got, res := run(&d)
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
	if strings.Join(ids, " ") != "0:toolu_s1:effects__charge_once 1:toolu_s2:effects__echo" {
		t.Fatalf("call deltas named %v", ids)
	}
	if n < 10 {
		t.Fatalf("turn 0 came in %d deltas: not streamed in pieces", n)
	}
	if text, args, _, n := d.turn(1); text != res.Text || len(args) != 0 || n < 5 {
		t.Fatalf("turn 1 streamed %q %v in %d deltas", text, args, n)
	}
	for i := 1; i < len(d.ds); i++ {
		a, b := d.ds[i-1], d.ds[i]
		if b.Turn < a.Turn || (a.Turn == b.Turn && a.ToolCall != nil && b.ToolCall == nil) ||
			(a.ToolCall != nil && b.ToolCall != nil && a.Turn == b.Turn && b.ToolCall.Index < a.ToolCall.Index) {
			t.Fatalf("delta %d (%+v) after %+v", i, b, a)
		}
	}
	want, _ := run(nil)
	if strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) != 4 {
		t.Fatalf("journal streamed:\n%s\nnot streamed:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestStreamCut: the wire server closes the connection mid-stream (in
// turn 0's text; in a tool_use input). The run fails with the transport's
// error, nothing ran, the turn's record holds no response; the resume
// streams the turn again from its start and finishes with one effect.
func TestStreamCut(t *testing.T) {
	for _, at := range []int{5, 16} {
		t.Run(fmt.Sprintf("after-%d-events", at), func(t *testing.T) {
			tools, file := effects(t)
			srv, client := wire(t, streamScript()...)
			st := openStore(t, filepath.Join(t.TempDir(), "gh.db"))
			var d deltas
			opts := loop.Options{RunID: "run-cut", Journal: newJournal(t, st), Model: streamModel(client),
				Tools: tools, Prompt: "Charge 5 and say hello.", OnDelta: d.add}
			srv.CutNext(at)
			res, err := loop.Run(ctxT(t), opts)
			if err == nil || !strings.Contains(err.Error(), "EOF") {
				t.Fatalf("Run after a cut stream: %v, want an unexpected EOF", err)
			}
			if res.Turns != 0 || len(effectCount(t, file)) != 0 {
				t.Fatalf("after the cut: %d turns, effects %v", res.Turns, effectCount(t, file))
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
			if got := effectCount(t, file); len(got) != 1 || got["run-cut:toolu_s1"] != 1 {
				t.Fatalf("effects %v", got)
			}
		})
	}
}

// TestStreamEndsEarly: a stream whose body ends cleanly before
// message_stop is ErrIncomplete, and the turn records no response.
func TestStreamEndsEarly(t *testing.T) {
	const partial = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-test\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Half an \"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"answer\"}}\n\n"
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(partial))
	}))
	defer hs.Close()
	client := sdk.NewClient(option.WithBaseURL(hs.URL), option.WithAPIKey("test-key"), option.WithMaxRetries(0), option.WithoutOpenTelemetry())
	st := openStore(t, filepath.Join(t.TempDir(), "gh.db"))
	var d deltas
	_, err := loop.Run(ctxT(t), loop.Options{RunID: "run-early", Journal: newJournal(t, st), Model: streamModel(&client),
		Prompt: "hi", OnDelta: d.add})
	if !errors.Is(err, anthropic.ErrIncomplete) {
		t.Fatalf("Run: %v, want ErrIncomplete", err)
	}
	if text, _, _, _ := d.turn(0); text != "Half an answer" {
		t.Fatalf("streamed %q", text)
	}
	rec, err := st.GetRecord(context.Background(), store.RecordKey{RunID: "run-early", ToolCallID: "turn-0"})
	if err != nil || rec.State != store.StateInDoubt || len(rec.Outcome) != 0 {
		t.Fatalf("turn record %+v, %v", rec, err)
	}
}
