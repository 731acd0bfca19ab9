// Package openaitest is a local stand-in for the OpenAI API in tests and
// examples: an HTTP server on 127.0.0.1 that speaks the wire format of the
// Responses API (POST /v1/responses) and of Chat Completions (POST
// /v1/chat/completions) as OpenAI documents them, with answers scripted
// deterministically from the request. A request with "stream": true is
// answered with server-sent events, as the API streams: Chat's
// chat.completion.chunk events ending with "data: [DONE]", the Responses
// API's typed events ending with response.completed. CutNext makes the
// next stream stop mid-way, the connection closed, as a dropped one is.
//
//	srv := openaitest.NewServer(
//		openaitest.Reply{Calls: []openaitest.Call{{ID: "call_1", Name: "bank__charge", Args: `{"amount":5}`}}},
//		openaitest.Reply{Text: "Charged."},
//	)
//	defer srv.Close()
//	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("test"))
//
// The reply to a request is the one at index "turn": the number of
// assistant turns the request's conversation already holds (Chat: the
// assistant messages; Responses: the runs of consecutive model items —
// assistant messages, function calls, reasoning — in the input, plus the
// turns of the response named by previous_response_id). So a killed and
// restarted agent that sends the same conversation gets the same answer,
// and the server never counts on its own history. Past the script's end
// the server answers the last reply's text without calls.
//
// Like the real API, the server refuses (400, OpenAI's error body) what
// the real API refuses and a test must catch: a tool name outside
// ^[a-zA-Z0-9_-]{1,64}$ or used twice, function parameters that are not a
// JSON Schema object of type "object" or that have "oneOf", "anyOf",
// "allOf", "enum" or "not" at the top level, a deferred function
// (defer_loading) without a tool_search tool, a tool result answering a
// call the conversation does not hold, a call left without its result and
// a request without a model.
package openaitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
)

// Call is one function call of a scripted reply.
type Call struct {
	// ID is the call's ID (call_id); empty means "call_<turn>_<i>".
	ID string
	// Name is the function's name.
	Name string
	// Args is the arguments as the model writes them: a JSON text (or
	// anything: the model is not bound to valid JSON).
	Args string
}

// Reply is the model's answer on one turn: text, calls (in parallel), or
// both.
type Reply struct {
	Text  string
	Calls []Call
}

// Server is a running stand-in. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL without the /v1 path (http://127.0.0.1:port);
	// the SDK's base URL is URL+"/v1".
	URL string

	srv     *httptest.Server
	replies []Reply

	mu     sync.Mutex
	bodies [][]byte
	turns  map[string]int      // response ID -> turns its conversation holds after it
	prev   map[string][]string // response ID -> the call IDs it made
	seq    int
	cut    int // events before the next stream is cut (0: none)
}

// NewServer starts a server answering turn n with replies[n].
func NewServer(replies ...Reply) *Server {
	s := &Server{replies: replies, turns: map[string]int{}, prev: map[string][]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/responses", s.responses)
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	return s
}

// Close shuts the server down.
func (s *Server) Close() { s.srv.Close() }

// Requests returns how many requests the server has received (refused
// ones included).
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

// reply returns the scripted reply of a turn.
func (s *Server) reply(turn int) Reply {
	if turn < len(s.replies) {
		return s.replies[turn]
	}
	if len(s.replies) == 0 {
		return Reply{}
	}
	return Reply{Text: s.replies[len(s.replies)-1].Text}
}

// callID is the ID of the i-th call of a turn's reply.
func callID(c Call, turn, i int) string {
	if c.ID != "" {
		return c.ID
	}
	return "call_" + strconv.Itoa(turn) + "_" + strconv.Itoa(i)
}

// read keeps the body and decodes it into v.
func (s *Server) read(w http.ResponseWriter, r *http.Request, v any) ([]byte, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()
	if err != nil {
		apiError(w, "could not read the body: "+err.Error(), "")
		return nil, false
	}
	if err := json.Unmarshal(body, v); err != nil {
		apiError(w, "We could not parse the JSON body of your request. ("+err.Error()+")", "")
		return nil, false
	}
	return body, true
}

// apiError answers 400 with OpenAI's error body.
func apiError(w http.ResponseWriter, msg, param string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	var p any
	if param != "" {
		p = param
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": "invalid_request_error", "param": p, "code": nil}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// checkFunction checks a function definition as the API does.
func checkFunction(name string, params json.RawMessage, at string, seen map[string]bool) (string, string) {
	if !namePattern.MatchString(name) {
		return fmt.Sprintf("Invalid '%s.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$' of at most 64 characters, got %q.", at, name), at + ".name"
	}
	if seen[name] {
		return fmt.Sprintf("Duplicate tool name: '%s'.", name), at + ".name"
	}
	seen[name] = true
	if len(params) == 0 || string(params) == "null" {
		return "", "" // "omitting parameters defines a function with an empty parameter list"
	}
	var schema map[string]any
	if err := json.Unmarshal(params, &schema); err != nil || schema == nil {
		return fmt.Sprintf("Invalid schema for function '%s': schema must be a JSON Schema object.", name), at + ".parameters"
	}
	if schema["type"] != "object" {
		return fmt.Sprintf("Invalid schema for function '%s': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"%v\"'.", name, schema["type"]), at + ".parameters"
	}
	for _, k := range []string{"oneOf", "anyOf", "allOf", "enum", "not"} {
		if _, ok := schema[k]; ok {
			return fmt.Sprintf("Invalid schema for function '%s': schema must have type 'object' and not have 'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the top level.", name), at + ".parameters"
		}
	}
	return "", ""
}

// Parts returns the text of each part of a message or tool output (one
// part for a string content), for assertions on request bodies.
func Parts(raw json.RawMessage) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return nil
	}
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p.Text
	}
	return out
}
