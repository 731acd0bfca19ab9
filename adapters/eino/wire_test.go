package eino_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/adapters/internal/agentcrash"

	"github.com/cloudwego/eino/schema"

	"github.com/gatehouse-dev/gatehouse/adapters/eino/einotest"
)

// TestWireServerRefusesWhatTheAPIRefuses: einotest answers 400 with an
// OpenAI error object where the real API would: an illegal tool name,
// parameters that are not an object, a tool message answering no call, a
// call left unanswered, no model, no messages, a body that is not JSON.
func TestWireServerRefusesWhatTheAPIRefuses(t *testing.T) {
	srv := wireServer(t, einotest.Reply{Text: "hi"})
	user := `{"role":"user","content":"x"}`
	for _, c := range []struct{ body, want string }{
		{`{"model":"m","messages":[` + user + `],"tools":[{"type":"function","function":{"name":"a.b"}}]}`, "tools[0].function.name"},
		{`{"model":"m","messages":[` + user + `],"tools":[{"type":"function","function":{"name":"` + strings.Repeat("a", 65) + `"}}]}`, "tools[0].function.name"},
		{`{"model":"m","messages":[` + user + `],"tools":[{"type":"function","function":{"name":"a","parameters":[1]}}]}`, "tools[0].function.parameters"},
		{`{"model":"m","messages":[` + user + `,{"role":"tool","tool_call_id":"c9","content":"r"}]}`, "messages.[1].role"},
		{`{"model":"m","messages":[` + user + `,{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"a","arguments":"{}"}}]},` + user + `]}`, "c1"},
		{`{"model":"m","messages":[` + user + `,{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"a","arguments":"{}"}}]}]}`, "messages"},
		{`{"messages":[` + user + `]}`, "model"},
		{`{"model":"m","messages":[]}`, "messages"},
		{`{"model":`, "parse the JSON"},
	} {
		resp, err := http.Post(srv.URL+"/chat/completions", "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Error struct {
				Message, Type string
				Param         *string
			}
		}
		if resp.StatusCode != 400 || json.Unmarshal(b, &e) != nil || e.Error.Type != "invalid_request_error" ||
			!strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %s, want 400 naming %q", c.body, resp.StatusCode, b, c.want)
		}
	}
	if srv.Requests() != 9 || !bytes.Equal(srv.Bodies()[8], []byte(`{"model":`)) {
		t.Fatalf("requests %d", srv.Requests())
	}
}

// TestWireServerStreams: the streamed answer (chat.completion.chunk
// events) read by eino-ext's OpenAI model: text and parallel calls with
// their IDs, as the non-streamed answer has them.
func TestWireServerStreams(t *testing.T) {
	srv := wireServer(t, einotest.Reply{Text: "Both.", Calls: []einotest.Call{
		{ID: "s1", Name: "a", Args: `{"x":1}`}, {Name: "b", Args: `{}`},
	}})
	sr, err := chatModel(t, srv).Stream(agentcrash.Ctx(t), []*schema.Message{schema.UserMessage("go")})
	if err != nil {
		t.Fatal(err)
	}
	var chunks []*schema.Message
	for {
		m, err := sr.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, m)
	}
	sr.Close()
	msg, err := schema.ConcatMessages(chunks)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Content != "Both." || len(msg.ToolCalls) != 2 || msg.ToolCalls[0].ID != "s1" || msg.ToolCalls[0].Function.Arguments != `{"x":1}` ||
		msg.ToolCalls[1].ID != "call_0_1" || msg.ToolCalls[1].Function.Name != "b" {
		t.Fatalf("streamed message: %+v", msg)
	}
	r := request(t, srv, 0)
	if !r.Stream {
		t.Fatalf("the request did not stream: %s", srv.Bodies()[0])
	}
}
