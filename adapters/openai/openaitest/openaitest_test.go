package openaitest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/adapters/openai/openaitest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// post sends a raw body and returns the status and the decoded answer.
func post(t *testing.T, srv *openaitest.Server, path, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, m
}

func errMessage(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

// TestRefusals: what the real API refuses, the server refuses with a 400
// and OpenAI's error body, one case per way a request can be wrong.
func TestRefusals(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Reply{Text: "hi"})
	defer srv.Close()
	const okTool = `{"type":"function","name":"ok","parameters":{"type":"object"}}`
	cases := []struct {
		name, path, body, want string
	}{
		{"not JSON", "/v1/responses", `{`, "could not parse"},
		{"no model", "/v1/responses", `{"input":"hi"}`, "'model'"},
		{"bad name", "/v1/responses", `{"model":"m","input":"hi","tools":[{"type":"function","name":"a.b","parameters":{"type":"object"}}]}`, "does not match pattern"},
		{"long name", "/v1/responses", `{"model":"m","input":"hi","tools":[{"type":"function","name":"` + strings.Repeat("a", 65) + `"}]}`, "does not match pattern"},
		{"duplicate name", "/v1/responses", `{"model":"m","input":"hi","tools":[` + okTool + `,` + okTool + `]}`, "Duplicate tool name"},
		{"schema not object", "/v1/responses", `{"model":"m","input":"hi","tools":[{"type":"function","name":"f","parameters":{"type":"array"}}]}`, `type: "object"`},
		{"schema top-level oneOf", "/v1/responses", `{"model":"m","input":"hi","tools":[{"type":"function","name":"f","parameters":{"type":"object","oneOf":[{"required":["a"]}]}}]}`, "not have 'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the top level"},
		{"schema top-level not (chat)", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","not":{}}}}]}`, "at the top level"},
		{"schema not JSON object", "/v1/responses", `{"model":"m","input":"hi","tools":[{"type":"function","name":"f","parameters":[1]}]}`, "JSON Schema object"},
		{"deferred without search", "/v1/responses", `{"model":"m","input":"hi","tools":[{"type":"function","name":"f","defer_loading":true}]}`, "requires a tool_search tool"},
		{"bad input", "/v1/responses", `{"model":"m","input":42}`, "Invalid 'input'"},
		{"output without call", "/v1/responses", `{"model":"m","input":[{"role":"user","content":"hi"},{"type":"function_call_output","call_id":"c9","output":"x"}]}`, "No tool call found for function call output with call_id c9"},
		{"call without output", "/v1/responses", `{"model":"m","input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}]}`, "No tool output found for function call c1"},
		{"call without ID", "/v1/responses", `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "call_id"},
		{"unknown previous", "/v1/responses", `{"model":"m","input":"hi","previous_response_id":"resp_nope"}`, "not found"},
		{"chat no model", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, "model"},
		{"chat no messages", "/v1/chat/completions", `{"model":"m","messages":[]}`, "too short"},
		{"chat bad name", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"a b"}}]}`, "does not match pattern"},
		{"chat tool without call", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c1","content":"x"}]}`, "must be a response to a preceeding message with 'tool_calls'"},
		{"chat call unanswered", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"x"}]}`, "did not have response messages: c2"},
		{"chat call answered late", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"and?"},{"role":"tool","tool_call_id":"c1","content":"x"}]}`, "did not have response messages: c1"},
	}
	for _, c := range cases {
		code, m := post(t, srv, c.path, c.body)
		if code != http.StatusBadRequest || !strings.Contains(errMessage(m), c.want) {
			t.Errorf("%s: %d %q, want 400 with %q", c.name, code, errMessage(m), c.want)
		}
		if e := m["error"].(map[string]any); e["type"] != "invalid_request_error" {
			t.Errorf("%s: error body %v", c.name, e)
		}
	}
	if n := srv.Requests(); n != len(cases) {
		t.Fatalf("%d requests counted, want %d", n, len(cases))
	}
}

// TestTurns: the reply is chosen by the turns the conversation holds,
// whoever sends it and however often: the same conversation gets the same
// answer, a continuation by previous_response_id counts the earlier
// turns, and past the script the last text comes without calls.
func TestTurns(t *testing.T) {
	srv := openaitest.NewServer(
		openaitest.Reply{Text: "looking", Calls: []openaitest.Call{{Name: "f", Args: `{}`}, {ID: "mine", Name: "g", Args: `{"a":1}`}}},
		openaitest.Reply{Text: "done"},
	)
	defer srv.Close()
	for range 2 {
		code, m := post(t, srv, "/v1/responses", `{"model":"m","input":"hi"}`)
		out := m["output"].([]any)
		if code != 200 || len(out) != 3 || out[1].(map[string]any)["call_id"] != "call_0_0" || out[2].(map[string]any)["call_id"] != "mine" {
			t.Fatalf("turn 0: %d %v", code, m)
		}
	}
	_, first := post(t, srv, "/v1/responses", `{"model":"m","input":"hi"}`)
	// Continued by ID: turn 1, and the previous calls must be answered.
	code, m := post(t, srv, "/v1/responses", `{"model":"m","previous_response_id":"`+first["id"].(string)+`","input":[
		{"type":"function_call_output","call_id":"call_0_0","output":"a"},{"type":"function_call_output","call_id":"mine","output":"b"}]}`)
	if code != 200 || m["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"] != "done" {
		t.Fatalf("continued: %d %v", code, m)
	}
	code, m = post(t, srv, "/v1/responses", `{"model":"m","previous_response_id":"`+first["id"].(string)+`","input":[
		{"type":"function_call_output","call_id":"mine","output":"b"}]}`)
	if code != 400 || !strings.Contains(errMessage(m), "call_0_0") {
		t.Fatalf("continued without every output: %d %v", code, m)
	}
	// The whole conversation sent again: turn 1 as well (model items in a
	// row are one turn).
	code, m = post(t, srv, "/v1/responses", `{"model":"m","input":[{"role":"user","content":"hi"},
		{"role":"assistant","content":"looking"},{"type":"function_call","call_id":"x","name":"f","arguments":"{}"},
		{"type":"function_call_output","call_id":"x","output":"a"}]}`)
	if code != 200 || m["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"] != "done" {
		t.Fatalf("replayed conversation: %d %v", code, m)
	}
	// Chat: turn 2 is past the script: the last text, no calls.
	code, m = post(t, srv, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"},
		{"role":"assistant","content":"a"},{"role":"user","content":"b"},{"role":"assistant","content":"c"},{"role":"user","content":"d"}]}`)
	ch := m["choices"].([]any)[0].(map[string]any)
	if code != 200 || ch["message"].(map[string]any)["content"] != "done" || ch["finish_reason"] != "stop" {
		t.Fatalf("chat past the script: %d %v", code, m)
	}
	code, m = post(t, srv, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	ch = m["choices"].([]any)[0].(map[string]any)
	if code != 200 || ch["finish_reason"] != "tool_calls" || len(ch["message"].(map[string]any)["tool_calls"].([]any)) != 2 {
		t.Fatalf("chat turn 0: %d %v", code, m)
	}
	bodies := srv.Bodies()
	if len(bodies) != srv.Requests() || !bytes.Contains(bodies[0], []byte(`"input":"hi"`)) {
		t.Fatalf("bodies %q", bodies)
	}
}

// TestParts reads both shapes of a content.
func TestParts(t *testing.T) {
	for raw, want := range map[string][]string{
		`"a"`: {"a"},
		`[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]`: {"a", "b"},
		`42`: nil,
	} {
		got := openaitest.Parts(json.RawMessage(raw))
		if strings.Join(got, "|") != strings.Join(want, "|") || (got == nil) != (want == nil) {
			t.Errorf("Parts(%s) = %q, want %q", raw, got, want)
		}
	}
}

// events reads a streamed answer: each event's name ("" without an
// event: line) and data, in order, checking the SSE framing.
func events(t *testing.T, srv *openaitest.Server, path, body string) ([][2]string, error) {
	t.Helper()
	resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
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
		var name, data string
		for _, line := range strings.Split(ev, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			default:
				t.Fatalf("line %q is not SSE", line)
			}
		}
		out = append(out, [2]string{name, data})
	}
	return out, err
}

// TestChatStreamWire: "stream": true on Chat Completions answers
// chat.completion.chunk events on data: lines (no event: names), the text
// word by word, each call's ID and name then its arguments in pieces, the
// finish reason, and "data: [DONE]" last.
func TestChatStreamWire(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Reply{Text: "One two three.", Calls: []openaitest.Call{{ID: "call_x", Name: "f", Args: `{"amount":12345}`}}})
	defer srv.Close()
	evs, err := events(t, srv, "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last != [2]string{"", "[DONE]"} {
		t.Fatalf("last event %v", last)
	}
	var text, args, finish string
	var texts int
	for _, ev := range evs[:len(evs)-1] {
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name, Arguments string
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if ev[0] != "" || json.Unmarshal([]byte(ev[1]), &c) != nil || c.Object != "chat.completion.chunk" || len(c.Choices) != 1 {
			t.Fatalf("event %v", ev)
		}
		ch := c.Choices[0]
		if ch.Delta.Content != "" {
			texts++
		}
		text += ch.Delta.Content
		for _, tc := range ch.Delta.ToolCalls {
			if tc.ID != "" && (tc.ID != "call_x" || tc.Function.Name != "f") {
				t.Fatalf("call header %+v", tc)
			}
			args += tc.Function.Arguments
		}
		if ch.FinishReason != nil {
			finish = *ch.FinishReason
		}
	}
	if text != "One two three." || texts != 3 || args != `{"amount":12345}` || finish != "tool_calls" {
		t.Fatalf("streamed text %q in %d, args %q, finish %q", text, texts, args, finish)
	}
}

// TestResponsesStreamWire: "stream": true on the Responses API answers
// typed events (an event: line naming the data's type), numbered in
// sequence, from response.created to response.completed holding the
// whole response; the deltas add up to the output.
func TestResponsesStreamWire(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Reply{Text: "One two.", Calls: []openaitest.Call{{ID: "call_y", Name: "g", Args: `{"a":"bcdefgh"}`}}})
	defer srv.Close()
	evs, err := events(t, srv, "/v1/responses", `{"model":"m","stream":true,"input":"hi"}`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var text, args string
	for i, ev := range evs {
		var e struct {
			Type     string `json:"type"`
			Seq      int    `json:"sequence_number"`
			Delta    string `json:"delta"`
			Response struct {
				Status string            `json:"status"`
				Output []json.RawMessage `json:"output"`
			} `json:"response"`
		}
		if json.Unmarshal([]byte(ev[1]), &e) != nil || e.Type != ev[0] || e.Seq != i {
			t.Fatalf("event %d: %v", i, ev)
		}
		names = append(names, e.Type)
		switch e.Type {
		case "response.output_text.delta":
			text += e.Delta
		case "response.function_call_arguments.delta":
			args += e.Delta
		case "response.completed":
			if e.Response.Status != "completed" || len(e.Response.Output) != 2 {
				t.Fatalf("completed %s", ev[1])
			}
		}
	}
	want := "response.created response.in_progress response.output_item.added response.content_part.added " +
		"response.output_text.delta response.output_text.delta response.output_text.done response.content_part.done " +
		"response.output_item.done response.output_item.added response.function_call_arguments.delta " +
		"response.function_call_arguments.delta response.function_call_arguments.delta response.function_call_arguments.done " +
		"response.output_item.done response.completed"
	if strings.Join(names, " ") != want || text != "One two." || args != `{"a":"bcdefgh"}` {
		t.Fatalf("events %v, text %q, args %q", names, text, args)
	}
}

// TestCutNext: the next stream stops after the given events with the
// connection closed mid-body (an unexpected EOF, no [DONE]); the one
// after streams whole.
func TestCutNext(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Reply{Text: "a b c d e f"})
	defer srv.Close()
	const req = `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	srv.CutNext(3)
	evs, err := events(t, srv, "/v1/chat/completions", req)
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(evs) != 3 {
		t.Fatalf("cut stream: %d events, %v", len(evs), err)
	}
	evs, err = events(t, srv, "/v1/chat/completions", req)
	if err != nil || evs[len(evs)-1][1] != "[DONE]" {
		t.Fatalf("next stream: %d events, %v", len(evs), err)
	}
}
