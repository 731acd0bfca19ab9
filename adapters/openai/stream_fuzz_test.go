package openai_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/adapters/openai"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// rawSSE is a server answering every request with the body it holds, as
// an event stream.
type rawSSE struct {
	mu   sync.Mutex
	body []byte
	hs   *httptest.Server
}

func newRawSSE(f *testing.F) *rawSSE {
	r := &rawSSE{}
	r.hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.mu.Lock()
		b := r.body
		r.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(b)
	}))
	f.Cleanup(r.hs.Close)
	return r
}

func (r *rawSSE) serve(b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.body = b
}

// streamTurn runs one TurnStream against the body and returns the
// response, the text deltas joined, and the error.
func streamTurn(t *testing.T, m loop.StreamModel) (loop.ModelResponse, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	defer func() {
		if ctx.Err() != nil {
			t.Fatal("TurnStream did not end within 5 s")
		}
	}()
	var text strings.Builder
	resp, err := m.TurnStream(ctx, loop.ModelRequest{Messages: []loop.Message{{Role: loop.RoleUser, Content: "hi"}}}, func(d loop.Delta) {
		if d.ToolCall == nil {
			text.WriteString(d.Text)
		} else if d.ToolCall.Index < 0 {
			t.Fatalf("tool call delta with index %d", d.ToolCall.Index)
		}
	})
	return resp, text.String(), err
}

// FuzzChatStream: whatever a server streams as Chat Completions chunks,
// ChatModel.TurnStream does not panic; it answers a response only when a
// finish reason arrived (else an error of the adapter's), and then,
// unless a refusal was streamed, the text deltas joined are the
// response's text.
func FuzzChatStream(f *testing.F) {
	chunk := func(delta, finish string) string {
		return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
	}
	f.Add([]byte(chunk(`{"role":"assistant","content":""}`, "null") + chunk(`{"content":"Hello "}`, "null") + chunk(`{"content":"world."}`, "null") + chunk(`{}`, `"stop"`) + "data: [DONE]\n\n"))
	f.Add([]byte(chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}`, "null") +
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}`, "null") + chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}`, "null") +
		chunk(`{}`, `"tool_calls"`) + "data: [DONE]\n\n"))
	f.Add([]byte(chunk(`{"content":"cut"}`, "null")))
	f.Add([]byte(chunk(`{"refusal":"no"}`, "null") + chunk(`{}`, `"stop"`)))
	f.Add([]byte(`data: {"error":{"message":"overloaded"}}` + "\n\n"))
	f.Add([]byte("data: {not json\n\n"))
	srv := newRawSSE(f)
	model := openai.NewChatModel(clientAt(srv.hs.URL), "gpt-test")
	f.Fuzz(func(t *testing.T, body []byte) {
		srv.serve(body)
		resp, text, err := streamTurn(t, model)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "openai: ") {
				t.Fatalf("error not the adapter's: %v", err)
			}
			return
		}
		if !bytes.Contains(body, []byte(`"finish_reason"`)) {
			t.Fatalf("a response without a finish reason: %+v", resp)
		}
		if !bytes.Contains(body, []byte("refusal")) && text != resp.Text {
			t.Fatalf("deltas %q, response text %q", text, resp.Text)
		}
	})
}

// FuzzResponsesStream: whatever a server streams as Responses API events,
// ResponsesModel.TurnStream does not panic, and answers a response only
// when response.completed arrived (else an error).
func FuzzResponsesStream(f *testing.F) {
	ev := func(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }
	f.Add([]byte(ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":1,"item_id":"m","output_index":0,"content_index":0,"delta":"Hi"}`) +
		ev("response.completed", `{"type":"response.completed","sequence_number":2,"response":{"id":"r","object":"response","status":"completed","output":[{"type":"message","id":"m","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hi","annotations":[]}]}]}}`)))
	f.Add([]byte(ev("response.output_item.added", `{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"function_call","id":"fc","call_id":"call_1","name":"f","arguments":""}}`) +
		ev("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","sequence_number":2,"item_id":"fc","output_index":0,"delta":"{}"}`)))
	f.Add([]byte(ev("response.failed", `{"type":"response.failed","sequence_number":1,"response":{"id":"r","status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}}`)))
	f.Add([]byte(ev("response.incomplete", `{"type":"response.incomplete","sequence_number":1,"response":{"id":"r","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[]}}`)))
	f.Add([]byte(ev("error", `{"type":"error","sequence_number":1,"code":"rate_limit","message":"slow down"}`)))
	srv := newRawSSE(f)
	model := openai.NewResponsesModel(clientAt(srv.hs.URL), "gpt-test")
	f.Fuzz(func(t *testing.T, body []byte) {
		srv.serve(body)
		resp, _, err := streamTurn(t, model)
		if err == nil && !bytes.Contains(body, []byte("response.completed")) {
			t.Fatalf("a response without response.completed: %+v", resp)
		}
	})
}
