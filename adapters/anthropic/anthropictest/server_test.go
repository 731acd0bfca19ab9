package anthropictest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/adapters/anthropic/anthropictest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const okTool = `{"name":"t","input_schema":{"type":"object"}}`

func body(extra string) string {
	return `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]` + extra + `}`
}

// TestParseRequestRefuses: every way a request can be wrong is refused
// with an error that says where.
func TestParseRequestRefuses(t *testing.T) {
	use := `{"role":"assistant","content":[{"type":"tool_use","id":"u1","name":"t","input":{}}]}`
	for _, c := range []struct{ name, body, want string }{
		{"not an object", `[1]`, "not a JSON object"},
		{"bad JSON", `{"model":`, "body"},
		{"no model", `{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "model"},
		{"no max_tokens", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "max_tokens: field required"},
		{"max_tokens 0", `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, "less than 1"},
		{"thread", body(`,"thread":{"type":"continue","previous_message_id":"msg_1"}`), "DisableThread"},
		{"no messages", `{"model":"m","max_tokens":5,"messages":[]}`, "at least one message"},
		{"system not text", body(`,"system":[{"type":"image"}]`), "system.0"},
		{"system wrong type", body(`,"system":5`), "system"},
		{"tool name", body(`,"tools":[{"name":"a.b","input_schema":{"type":"object"}}]`), "tools.0: name"},
		{"tool name long", body(`,"tools":[{"name":"` + strings.Repeat("a", 65) + `","input_schema":{"type":"object"}}]`), "tools.0: name"},
		{"tool no schema", body(`,"tools":[{"name":"t"}]`), "input_schema"},
		{"tool schema top-level oneOf", body(`,"tools":[{"name":"t","input_schema":{"type":"object","oneOf":[{"required":["a"]}]}}]`), "does not support oneOf, allOf, or anyOf at the top level"},
		{"tool schema top-level allOf", body(`,"tools":[{"name":"t","input_schema":{"type":"object","allOf":[]}}]`), "at the top level"},
		{"tool schema type", body(`,"tools":[{"name":"t","input_schema":{"type":"string"}}]`), "input_schema.type"},
		{"tool twice", body(`,"tools":[` + okTool + `,` + okTool + `]`), "unique"},
		{"tool not object", body(`,"tools":[1]`), "tools.0"},
		{"role", `{"model":"m","max_tokens":5,"messages":[{"role":"system","content":"hi"}]}`, "role"},
		{"content", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":5}]}`, "content"},
		{"empty user", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[]}]}`, "must not be empty"},
		{"empty text", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`, "non-empty"},
		{"no block type", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"text":"x"}]}]}`, "type: field required"},
		{"tool_use from user", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_use","id":"u","name":"t","input":{}}]}]}`, "only allowed in assistant"},
		{"tool_use no id", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","name":"t","input":{}}]}]}`, "id and name"},
		{"tool_use input", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"u","name":"t","input":[1]}]}]}`, "tool_use.input"},
		{"tool_result from assistant", `{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"u"}]}]}`, "only allowed in user"},
		{"tool_result no id", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result"}]}]}`, "tool_use_id is required"},
		{"tool_result content", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"u","content":5}]}]}`, "tool_result.content"},
		{"tool_result empty text", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"u","content":[{"type":"text","text":""}]}]}]}`, "non-empty"},
		{"unanswered", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},` + use + `,{"role":"user","content":"next"}]}`, "without tool_result"},
		{"unanswered at the end", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},` + use + `,{"role":"assistant","content":"x"}]}`, "without tool_result"},
		{"text before result", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},` + use + `,{"role":"user","content":[{"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"u1"}]}]}`, "without tool_result"},
		{"unknown result", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},` + use + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"u2"}]}]}`, "unexpected tool_use_id"},
		{"result twice", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},` + use + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"u1"},{"type":"tool_result","tool_use_id":"u1"}]}]}`, "unexpected tool_use_id"},
		{"tool_use id twice", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},` + use + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"u1"}]},` + use + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"u1"}]}]}`, "unique"},
	} {
		_, err := anthropictest.ParseRequest([]byte(c.body))
		if !errors.Is(err, anthropictest.ErrRequest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrRequest with %q", c.name, err, c.want)
		}
	}
}

func post(t *testing.T, url, body string, header map[string]string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/messages", strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return resp.StatusCode, m
}

// TestServerScriptsByTurn: the reply is the turn's (assistant messages in
// the request), whatever came before: parallel tool_use blocks with
// stop_reason tool_use, then past the script the last text; the headers
// are checked and errors have the API's shape.
func TestServerScriptsByTurn(t *testing.T) {
	srv := anthropictest.NewServer(
		anthropictest.Reply{Text: "a", Calls: []anthropictest.Call{{Name: "t", Args: `{"x":1}`}, {ID: "toolu_9", Name: "t"}}},
		anthropictest.Reply{Text: "b"},
	)
	defer srv.Close()
	h := map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01", "content-type": "application/json"}
	turn1 := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_t0_0","name":"t","input":{"x":1}},{"type":"tool_use","id":"toolu_9","name":"t","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_t0_0","content":"r"},{"type":"tool_result","tool_use_id":"toolu_9","is_error":true}]}]}`
	turn2 := strings.Replace(turn1, `]}]}`, `]},{"role":"assistant","content":"b"},{"role":"user","content":"more"}]}`, 1)
	for range 2 { // the same request, the same answer
		status, m := post(t, srv.URL, body(""), h)
		content, _ := m["content"].([]any)
		if status != 200 || m["stop_reason"] != "tool_use" || m["type"] != "message" || len(content) != 3 {
			t.Fatalf("turn 0: %d %v", status, m)
		}
		if c := content[1].(map[string]any); c["id"] != "toolu_t0_0" || c["type"] != "tool_use" {
			t.Fatalf("generated id: %v", c)
		}
	}
	if status, m := post(t, srv.URL, turn1, h); status != 200 || m["stop_reason"] != "end_turn" || m["content"].([]any)[0].(map[string]any)["text"] != "b" {
		t.Fatalf("turn 1: %d %v", status, m)
	}
	if status, m := post(t, srv.URL, turn2, h); status != 200 || m["content"].([]any)[0].(map[string]any)["text"] != "b" || len(m["content"].([]any)) != 1 {
		t.Fatalf("past the script: %d %v", status, m)
	}
	for name, hdr := range map[string]map[string]string{
		"no key":     {"anthropic-version": "2023-06-01"},
		"no version": {"x-api-key": "k"},
	} {
		status, m := post(t, srv.URL, body(""), hdr)
		if e, _ := m["error"].(map[string]any); status/100 != 4 || m["type"] != "error" || e["type"] == "" {
			t.Errorf("%s: %d %v", name, status, m)
		}
	}
	if srv.Requests() != 6 || !bytes.Contains(srv.Bodies()[2], []byte("toolu_9")) {
		t.Fatalf("requests %d", srv.Requests())
	}
}

// streamEvents posts a streaming request and reads the answer's events
// (name and data), checking the SSE framing, until the body ends.
func streamEvents(t *testing.T, srv *anthropictest.Server) ([][2]string, error) {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.URL+"/v1/messages", strings.NewReader(body(`,"stream":true`)))
	req.Header.Set("x-api-key", "k")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, ct)
	}
	raw, err := io.ReadAll(resp.Body)
	var out [][2]string
	for _, ev := range strings.Split(string(raw), "\n\n") {
		if ev == "" {
			continue
		}
		name, data, ok := strings.Cut(ev, "\n")
		if !ok || !strings.HasPrefix(name, "event: ") || !strings.HasPrefix(data, "data: ") || strings.Contains(data, "\n") {
			t.Fatalf("event %q is not SSE", ev)
		}
		out = append(out, [2]string{strings.TrimPrefix(name, "event: "), strings.TrimPrefix(data, "data: ")})
	}
	return out, err
}

// TestServerStreams: "stream": true is answered with the Messages API's
// events (each event: line naming its data's type): message_start, ping,
// per block its start, deltas and stop, message_delta with the stop
// reason, message_stop; the deltas add up to the reply. CutNext stops the
// next stream mid-body (an unexpected EOF), the one after streams whole.
func TestServerStreams(t *testing.T) {
	srv := anthropictest.NewServer(anthropictest.Reply{Text: "One two.", Calls: []anthropictest.Call{{ID: "toolu_1", Name: "t", Args: `{"x":"abcdefg"}`}}})
	defer srv.Close()
	evs, err := streamEvents(t, srv)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var text, input, stop string
	for _, ev := range evs {
		var e struct {
			Type  string `json:"type"`
			Delta struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			ContentBlock map[string]any `json:"content_block"`
		}
		if err := json.Unmarshal([]byte(ev[1]), &e); err != nil || e.Type != ev[0] {
			t.Fatalf("event %v: %v", ev, err)
		}
		names = append(names, e.Type)
		switch e.Delta.Type {
		case "text_delta":
			text += e.Delta.Text
		case "input_json_delta":
			input += e.Delta.PartialJSON
		}
		if e.Type == "message_delta" {
			stop = e.Delta.StopReason
		}
		if e.ContentBlock["type"] == "tool_use" && (e.ContentBlock["id"] != "toolu_1" || e.ContentBlock["name"] != "t") {
			t.Fatalf("tool_use start %v", e.ContentBlock)
		}
	}
	want := "message_start ping content_block_start content_block_delta content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if strings.Join(names, " ") != want || text != "One two." || input != `{"x":"abcdefg"}` || stop != "tool_use" {
		t.Fatalf("events %v, text %q, input %q, stop %q", names, text, input, stop)
	}
	srv.CutNext(4)
	if evs, err := streamEvents(t, srv); !errors.Is(err, io.ErrUnexpectedEOF) || len(evs) != 4 {
		t.Fatalf("cut stream: %d events, %v", len(evs), err)
	}
	if evs, err := streamEvents(t, srv); err != nil || evs[len(evs)-1][0] != "message_stop" {
		t.Fatalf("next stream: %d events, %v", len(evs), err)
	}
}

// FuzzParseRequest: ParseRequest never panics, and a request it takes has
// a turn within its messages and tool_result blocks only in user messages.
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(body("")))
	f.Add([]byte(body(`,"system":[{"type":"text","text":"s"}],"tools":[` + okTool + `]`)))
	f.Add([]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"u1","name":"t","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"u1","content":[{"type":"text","text":"r"}]}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := anthropictest.ParseRequest(b)
		if err != nil {
			if !errors.Is(err, anthropictest.ErrRequest) {
				t.Fatalf("error not ErrRequest: %v", err)
			}
			return
		}
		if n := req.Turn(); n < 0 || n > len(req.Messages) {
			t.Fatalf("turn %d of %d messages", n, len(req.Messages))
		}
		for _, m := range req.Messages {
			for _, blk := range m.Blocks {
				if blk.Type == "tool_result" && m.Role != "user" {
					t.Fatalf("tool_result in %s message", m.Role)
				}
			}
		}
	})
}
