// Package fantasytest is a local stand-in for the chat model a fantasy
// agent talks to: an HTTP server on 127.0.0.1 speaking OpenAI's Chat
// Completions wire format (the format of fantasy's OpenAI and
// OpenAI-compatible providers), with answers scripted by turn.
//
//	srv := fantasytest.NewServer(
//		fantasytest.Reply{Calls: []fantasytest.Call{
//			{ID: "call_1", Name: "bank__charge", Args: `{"amount":5}`},
//			{ID: "call_2", Name: "bank__balance", Args: `{}`},
//		}},
//		fantasytest.Reply{Text: "Charged."},
//	)
//	defer srv.Close()
//	provider, err := openai.New(openai.WithBaseURL(srv.URL), openai.WithAPIKey("test"))
//
// The answer is chosen from the request alone: the turn is the number of
// assistant messages already in the request's conversation, and the reply
// for that turn is returned (past the last reply: the last reply's text,
// with no calls). An agent killed and restarted therefore gets the same
// answers, and Requests counts what it asked.
//
// The server checks requests as the real API does and answers 400 with an
// OpenAI error object when a request is malformed: a tool whose name does
// not match ^[a-zA-Z0-9_-]{1,64}$ or whose parameters are not a JSON
// object, a tool message that answers no preceding tool call, or an
// assistant message whose tool calls are not all answered before the next
// message. Responses are chat.completion objects (finish_reason
// "tool_calls" with parallel calls, "stop" otherwise) or, for "stream":
// true, chat.completion.chunk events ending with "data: [DONE]".
package fantasytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
)

// Reply is the model's answer on one turn: text, tool calls, or both.
type Reply struct {
	Text  string
	Calls []Call
}

// Call is one tool call of a Reply. Args is the arguments' JSON text as
// the model sends it (it need not be valid JSON: models make mistakes).
// An empty ID is answered as "call_<turn>_<index>".
type Call struct {
	ID, Name, Args string
}

// Server is the local Chat Completions server.
type Server struct {
	// URL is the base URL to give the client ("http://127.0.0.1:port/v1").
	URL string

	hs      *httptest.Server
	replies []Reply

	mu     sync.Mutex
	bodies [][]byte
}

// NewServer starts a server answering turn n with replies[n].
func NewServer(replies ...Reply) *Server {
	s := &Server{replies: replies}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.serve)
	mux.HandleFunc("POST /chat/completions", s.serve)
	s.hs = httptest.NewServer(mux)
	s.URL = s.hs.URL + "/v1"
	return s
}

// Close stops the server.
func (s *Server) Close() { s.hs.Close() }

// Requests returns the number of chat completion requests received
// (malformed ones included).
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// Bodies returns the raw bodies of the requests received, in order.
func (s *Server) Bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]byte, len(s.bodies))
	copy(out, s.bodies)
	return out
}

// Request is the part of a Chat Completions request the server reads.
type Request struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools,omitempty"`
	Stream   bool      `json:"stream,omitempty"`
}

// Message is one message of a request.
type Message struct {
	Role string `json:"role"`
	// Content is a string or an array of content parts.
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCalls  []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Name       string          `json:"name,omitempty"`
}

// Text returns the message's content as text (the text parts joined).
func (m Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// ToolCall is a tool call of an assistant message.
type ToolCall struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"`
	Function Function `json:"function"`
}

// Function is a function call (Arguments) or definition (Description,
// Parameters).
type Function struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Arguments   string          `json:"arguments,omitempty"`
}

// Tool is a tool definition of a request.
type Tool struct {
	Type     string   `json:"type"`
	Function Function `json:"function"`
}

// ParseRequest decodes a request body as the server does.
func ParseRequest(body []byte) (Request, error) {
	var r Request
	if err := json.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("fantasytest: request body: %w", err)
	}
	return r, nil
}

// Turn returns the turn of a request: the number of assistant messages in
// its conversation.
func (r Request) Turn() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// legalName is the function name pattern of OpenAI's API.
var legalName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// check returns what the real API would refuse in r, or "".
func check(r Request) (msg, param string) {
	if r.Model == "" {
		return "you must provide a model parameter", "model"
	}
	if len(r.Messages) == 0 {
		return "'messages' must contain at least one message", "messages"
	}
	for i, t := range r.Tools {
		if t.Type != "function" {
			return fmt.Sprintf("Invalid value for 'tools[%d].type': %q", i, t.Type), fmt.Sprintf("tools[%d].type", i)
		}
		if !legalName.MatchString(t.Function.Name) {
			return fmt.Sprintf("Invalid 'tools[%d].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", i), fmt.Sprintf("tools[%d].function.name", i)
		}
		if len(t.Function.Parameters) > 0 && !bytes.HasPrefix(bytes.TrimSpace(t.Function.Parameters), []byte("{")) {
			return fmt.Sprintf("Invalid schema for function '%s': schema must be a JSON Schema of 'type: \"object\"'.", t.Function.Name), fmt.Sprintf("tools[%d].function.parameters", i)
		}
	}
	var open map[string]bool // tool calls of the last assistant message not yet answered
	for i, m := range r.Messages {
		if m.Role == "tool" {
			if !open[m.ToolCallID] {
				return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", fmt.Sprintf("messages.[%d].role", i)
			}
			delete(open, m.ToolCallID)
			continue
		}
		if len(open) > 0 {
			var ids []string
			for id := range open {
				ids = append(ids, id)
			}
			return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(ids, ", "), "messages"
		}
		open = nil
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			open = map[string]bool{}
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		}
	}
	if len(open) > 0 {
		return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'.", "messages"
	}
	return "", ""
}

func (s *Server) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()
	if err != nil {
		return
	}
	r, err := ParseRequest(body)
	if err != nil {
		writeError(w, "We could not parse the JSON body of your request.", "")
		return
	}
	if msg, param := check(r); msg != "" {
		writeError(w, msg, param)
		return
	}
	turn := r.Turn()
	reply := Reply{}
	switch {
	case turn < len(s.replies):
		reply = s.replies[turn]
	case len(s.replies) > 0:
		reply = Reply{Text: s.replies[len(s.replies)-1].Text}
	}
	calls := make([]ToolCall, len(reply.Calls))
	for i, c := range reply.Calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", turn, i)
		}
		calls[i] = ToolCall{ID: id, Type: "function", Function: Function{Name: c.Name, Arguments: c.Args}}
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	id := fmt.Sprintf("chatcmpl-fantasytest-%d", turn)
	if r.Stream {
		writeStream(w, id, r.Model, reply.Text, calls, finish)
		return
	}
	var content any // null when the reply has only calls, as the API sends it
	if reply.Text != "" || len(calls) == 0 {
		content = reply.Text
	}
	msg := map[string]any{"role": "assistant", "content": content, "refusal": nil}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": id, "object": "chat.completion", "created": 1700000000, "model": r.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
}

// writeStream answers as server-sent chat.completion.chunk events: the
// role, the text, each call (whole, with its index), the finish reason.
func writeStream(w http.ResponseWriter, id, model, text string, calls []ToolCall, finish string) {
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	if text != "" {
		chunk(map[string]any{"content": text}, nil)
	}
	for i, c := range calls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Function.Name, "arguments": c.Function.Arguments},
		}}}, nil)
	}
	chunk(map[string]any{}, finish)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func writeError(w http.ResponseWriter, msg, param string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	var p any
	if param != "" {
		p = param
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": "invalid_request_error", "param": p, "code": nil,
	}})
}
