// Package chattest is a stand-in for an LLM provider in tests and examples:
// an HTTP server on 127.0.0.1 speaking a minimal chat-completions-like JSON
// API with scripted answers, and a loop.Model that calls it over HTTP.
//
// The wire format (a subset of the common chat-completions shape):
//
//	POST /v1/chat/completions
//	{"system": "...", "messages": [{"role", "content", "tool_calls": [{"id",
//	 "type": "function", "function": {"name", "arguments"}}], "tool_call_id",
//	 "name"}], "tools": [{"type": "function", "function": {"name",
//	 "description", "parameters"}}]}
//	-> {"choices": [{"message": {"role": "assistant", "content", "tool_calls"}}]}
//
// "arguments" is a JSON string holding the arguments object, as providers
// send it.
package chattest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// WireFunction is a function call or definition on the wire.
type WireFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Arguments   string          `json:"arguments,omitempty"`
}

// WireToolCall is a tool call on the wire.
type WireToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type"`
	Function WireFunction `json:"function"`
}

// WireMessage is a message on the wire.
type WireMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	ToolCalls  []WireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Name       string         `json:"name,omitempty"`
}

// WireTool is a tool definition on the wire.
type WireTool struct {
	Type     string       `json:"type"`
	Function WireFunction `json:"function"`
}

// Request is a chat request.
type Request struct {
	System   string        `json:"system,omitempty"`
	Messages []WireMessage `json:"messages"`
	Tools    []WireTool    `json:"tools,omitempty"`
}

// Turn returns the turn number of a request: how many assistant messages
// it carries.
func (r Request) Turn() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// Response is a chat response.
type Response struct {
	Choices []struct {
		Message WireMessage `json:"message"`
	} `json:"choices"`
}

// Reply is a scripted answer: text and tool calls.
type Reply struct {
	Text  string
	Calls []Call
	// Status, when not 0 or 200, makes the server fail the request with it.
	Status int
}

// Call is a scripted tool call.
type Call struct {
	ID   string
	Name string
	Args string // JSON object
}

// Script answers a request.
type Script func(req Request) Reply

// ByTurn answers turn n (see Request.Turn) with replies[n], and with a
// final "done" text past the end.
func ByTurn(replies ...Reply) Script {
	return func(req Request) Reply {
		if t := req.Turn(); t < len(replies) {
			return replies[t]
		}
		return Reply{Text: "done"}
	}
}

// Server is the scripted provider.
type Server struct {
	// URL is the base URL (http://127.0.0.1:port).
	URL string

	srv      *httptest.Server
	requests atomic.Int64
	mu       sync.Mutex
	script   Script
	log      []Request
}

// NewServer starts a server answering with script. Close it when done.
func NewServer(script Script) *Server {
	s := &Server{script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Requests returns how many chat requests the server received.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Log returns the requests received, in order.
func (s *Server) Log() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// SetScript replaces the script.
func (s *Server) SetScript(script Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = script
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	s.requests.Add(1)
	var req Request
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.log = append(s.log, req)
	script := s.script
	s.mu.Unlock()
	reply := script(req)
	if reply.Status != 0 && reply.Status != http.StatusOK {
		http.Error(w, "scripted failure", reply.Status)
		return
	}
	msg := WireMessage{Role: "assistant", Content: reply.Text}
	for _, c := range reply.Calls {
		msg.ToolCalls = append(msg.ToolCalls, WireToolCall{ID: c.ID, Type: "function",
			Function: WireFunction{Name: c.Name, Arguments: c.Args}})
	}
	var resp Response
	resp.Choices = append(resp.Choices, struct {
		Message WireMessage `json:"message"`
	}{msg})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// Model is a loop.Model calling a chat server over HTTP.
type Model struct {
	// URL is the server's base URL.
	URL string
	// Client is the HTTP client; nil means http.DefaultClient.
	Client *http.Client
}

var _ loop.Model = (*Model)(nil)

// Turn sends one chat request and decodes the answer.
func (m *Model) Turn(ctx context.Context, req loop.ModelRequest) (loop.ModelResponse, error) {
	wr := Request{System: req.System}
	for _, t := range req.Tools {
		wr.Tools = append(wr.Tools, WireTool{Type: "function", Function: WireFunction{
			Name: t.Name, Description: t.Description, Parameters: t.InputSchema}})
	}
	for _, msg := range req.Messages {
		wm := WireMessage{Role: string(msg.Role), Content: msg.Content, ToolCallID: msg.ToolCallID, Name: msg.Name}
		for _, c := range msg.ToolCalls {
			wm.ToolCalls = append(wm.ToolCalls, WireToolCall{ID: c.ID, Type: "function",
				Function: WireFunction{Name: c.Name, Arguments: string(c.Args)}})
		}
		wr.Messages = append(wr.Messages, wm)
	}
	body, err := json.Marshal(wr)
	if err != nil {
		return loop.ModelResponse{}, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return loop.ModelResponse{}, err
	}
	hr.Header.Set("Content-Type", "application/json")
	client := m.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(hr)
	if err != nil {
		return loop.ModelResponse{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return loop.ModelResponse{}, fmt.Errorf("chattest: model answered %s", resp.Status)
	}
	var out Response
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil {
		return loop.ModelResponse{}, fmt.Errorf("chattest: decode response: %w", err)
	}
	if len(out.Choices) == 0 {
		return loop.ModelResponse{}, fmt.Errorf("chattest: response has no choices")
	}
	msg := out.Choices[0].Message
	r := loop.ModelResponse{Text: msg.Content}
	for _, c := range msg.ToolCalls {
		args := json.RawMessage(c.Function.Arguments)
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		if !json.Valid(args) {
			return loop.ModelResponse{}, fmt.Errorf("chattest: tool call %q has arguments that are not JSON", c.Function.Name)
		}
		r.ToolCalls = append(r.ToolCalls, loop.ToolCall{ID: c.ID, Name: c.Function.Name, Args: args})
	}
	return r, nil
}
