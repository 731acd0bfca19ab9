package loop_test

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/store"
)

// streamModel is a loop.StreamModel over a script of responses by turn:
// it streams each response's text in pieces of size bytes, then each
// call's arguments. cutAt, when > 0, makes the next live turn fail after
// that many deltas, as a connection closed mid-stream would.
type streamModel struct {
	script []loop.ModelResponse
	size   int

	mu      sync.Mutex
	asked   int // turns asked (streamed or not)
	streams int // turns asked through TurnStream
	cutAt   int
}

var errCut = errors.New("stream cut")

func (m *streamModel) respond(req loop.ModelRequest) loop.ModelResponse {
	n := 0
	for _, msg := range req.Messages {
		if msg.Role == loop.RoleAssistant {
			n++
		}
	}
	if n >= len(m.script) {
		n = len(m.script) - 1
	}
	return m.script[n]
}

func (m *streamModel) Turn(_ context.Context, req loop.ModelRequest) (loop.ModelResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked++
	return m.respond(req), nil
}

func (m *streamModel) TurnStream(_ context.Context, req loop.ModelRequest, emit func(loop.Delta)) (loop.ModelResponse, error) {
	m.mu.Lock()
	m.asked++
	m.streams++
	cut := m.cutAt
	m.cutAt = 0
	m.mu.Unlock()
	resp := m.respond(req)
	var ds []loop.Delta
	for _, p := range pieces(resp.Text, m.size) {
		ds = append(ds, loop.Delta{Text: p})
	}
	for i, c := range resp.ToolCalls {
		for j, p := range pieces(string(c.Args), m.size) {
			d := &loop.ToolCallDelta{Index: i, Args: p}
			if j == 0 {
				d.ID, d.Name = c.ID, c.Name
			}
			ds = append(ds, loop.Delta{ToolCall: d})
		}
	}
	for i, d := range ds {
		if cut > 0 && i == cut {
			return loop.ModelResponse{}, errCut
		}
		emit(d)
	}
	return resp, nil
}

func pieces(s string, size int) []string {
	var out []string
	for len(s) > size {
		out = append(out, s[:size])
		s = s[size:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// collect gathers the deltas of a run.
type collect struct {
	mu sync.Mutex
	ds []loop.Delta
}

func (c *collect) add(d loop.Delta) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ds = append(c.ds, d)
}

// text returns the text deltas of turn n, concatenated, and the arguments
// of each of its calls.
func (c *collect) turn(n int) (string, map[int]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	args := map[int]string{}
	for _, d := range c.ds {
		if d.Turn != n {
			continue
		}
		if d.ToolCall != nil {
			args[d.ToolCall.Index] += d.ToolCall.Args
			continue
		}
		b.WriteString(d.Text)
	}
	return b.String(), args
}

func (c *collect) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ds)
}

func streamScript() []loop.ModelResponse {
	return []loop.ModelResponse{
		{Text: "Checking your balance first.", ToolCalls: []loop.ToolCall{{ID: "c1", Name: "bank__balance", Args: []byte(`{"amount":3}`)}}},
		{Text: "Your balance is fine, and nothing was charged."},
	}
}

// records returns a run's journal rows as "ID state outcome", sorted
// (records made in the same instant list in any order).
func records(t *testing.T, s store.Store, runID string) []string {
	t.Helper()
	recs, err := s.ListRecords(bg, "", runID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, r.ToolCallID+" "+string(r.State)+" "+strings.ReplaceAll(string(r.Outcome), runID, "RUN"))
	}
	sort.Strings(out)
	return out
}

// TestStreamDeltas: with OnDelta set, a StreamModel's turns stream to it
// in order, tagged with their turn, and concatenate to the responses;
// the journal holds the same rows as a run without streaming.
func TestStreamDeltas(t *testing.T) {
	s := openStore(t, "sqlite")
	_, tools := startBank(t)
	m := &streamModel{script: streamScript(), size: 5}
	var c collect
	res := run(t, loop.Options{RunID: "run-s", Journal: newJournal(t, s), Model: m, Tools: tools, Prompt: "balance?", OnDelta: c.add})
	if res.Text != "Your balance is fine, and nothing was charged." || res.Turns != 2 || m.streams != 2 {
		t.Fatalf("result %+v, %d streams", res, m.streams)
	}
	text0, args0 := c.turn(0)
	text1, args1 := c.turn(1)
	if text0 != "Checking your balance first." || args0[0] != `{"amount":3}` || text1 != res.Text || len(args1) != 0 {
		t.Fatalf("deltas: turn 0 %q %v, turn 1 %q %v", text0, args0, text1, args1)
	}
	// In order: turn 0's deltas (text, then the call's) before turn 1's.
	last, sawCall := 0, false
	for _, d := range c.ds {
		if d.Turn < last {
			t.Fatalf("delta of turn %d after turn %d", d.Turn, last)
		}
		last = d.Turn
		if d.ToolCall != nil {
			if !sawCall && (d.ToolCall.ID != "c1" || d.ToolCall.Name != "bank__balance") {
				t.Fatalf("first call delta %+v", d.ToolCall)
			}
			sawCall = true
		} else if sawCall && d.Turn == 0 {
			t.Fatalf("text after the call's deltas: %+v", d)
		}
	}

	// The same run without streaming journals the same rows.
	s2 := openStore(t, "sqlite")
	_, tools2 := startBank(t)
	plain := &streamModel{script: streamScript(), size: 5}
	run(t, loop.Options{RunID: "run-s", Journal: newJournal(t, s2), Model: plain, Tools: tools2, Prompt: "balance?"})
	if plain.streams != 0 || plain.asked != 2 {
		t.Fatalf("without OnDelta: %d streams of %d turns", plain.streams, plain.asked)
	}
	a, b := records(t, s, "run-s"), records(t, s2, "run-s")
	if strings.Join(a, "\n") != strings.Join(b, "\n") || len(a) != 3 || !strings.Contains(a[0], "c1 succeeded") {
		t.Fatalf("journal with streaming:\n%s\nwithout:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
}

// TestStreamCutThenResume: a turn cut mid-stream fails the run and
// records no response (its record is in doubt); the resume replays the
// recorded turn without streaming it and streams the cut turn afresh.
func TestStreamCutThenResume(t *testing.T) {
	s := openStore(t, "sqlite")
	b, tools := startBank(t)
	m := &streamModel{script: []loop.ModelResponse{
		{ToolCalls: []loop.ToolCall{{ID: "c1", Name: "bank__charge", Args: []byte(`{"amount":1}`)}}},
		{Text: "Charged one, as you asked."},
	}, size: 4}
	var c collect
	opts := loop.Options{RunID: "run-c", Journal: newJournal(t, s), Model: m, Tools: tools, Prompt: "charge 1", OnDelta: c.add}
	// Turn 0 streams whole; turn 1 is cut after two deltas.
	first := true
	opts.OnDelta = func(d loop.Delta) {
		c.add(d)
		if first && d.Turn == 0 && d.ToolCall != nil {
			first = false
			m.mu.Lock()
			m.cutAt = 2
			m.mu.Unlock()
		}
	}
	_, err := loop.Run(bg, opts)
	if !errors.Is(err, errCut) {
		t.Fatalf("Run: %v, want the cut", err)
	}
	if text, _ := c.turn(1); text != "Charged " {
		t.Fatalf("turn 1 before the cut streamed %q", text)
	}
	rec, err := s.GetRecord(bg, store.RecordKey{RunID: "run-c", ToolCallID: "turn-1"})
	if err != nil || rec.State != store.StateInDoubt || len(rec.Outcome) != 0 {
		t.Fatalf("cut turn's record: %+v, %v", rec, err)
	}

	var c2 collect
	opts.Journal = newJournal(t, s.reopen(t))
	opts.OnDelta = c2.add
	res := run(t, opts)
	if res.Text != "Charged one, as you asked." || res.ReplayedTurns != 1 || b.count("charge") != 1 {
		t.Fatalf("resume: %+v, %d charges", res, b.count("charge"))
	}
	if text, args := c2.turn(0); text != "" || len(args) != 0 {
		t.Fatalf("the replayed turn streamed %q %v", text, args)
	}
	if text, _ := c2.turn(1); text != res.Text {
		t.Fatalf("the resumed turn streamed %q", text)
	}
	if m.streams != 3 {
		t.Fatalf("%d streams, want 3 (turn 0, the cut turn 1, turn 1 again)", m.streams)
	}
	if _, err := s.GetRecord(bg, store.RecordKey{RunID: "run-c", ToolCallID: "turn-1.retry-1"}); err != nil {
		t.Fatalf("retried turn's record: %v", err)
	}
}

// TestStreamPlainModel: OnDelta with a Model that cannot stream runs as
// without it: no deltas, the same answer.
func TestStreamPlainModel(t *testing.T) {
	s := openStore(t, "memory")
	model := loop.ModelFunc(func(context.Context, loop.ModelRequest) (loop.ModelResponse, error) {
		return loop.ModelResponse{Text: "hello"}, nil
	})
	var c collect
	res := run(t, loop.Options{RunID: "run-p", Journal: newJournal(t, s), Model: model, Prompt: "hi", OnDelta: c.add})
	if res.Text != "hello" || c.len() != 0 {
		t.Fatalf("result %+v, %d deltas", res, c.len())
	}
}
