// Package anthropictest is a local Anthropic Messages API for tests and
// examples: an HTTP server on 127.0.0.1 that answers POST /v1/messages in
// the API's wire format, scripted deterministically from the request. A
// request with "stream": true gets the API's server-sent events
// (message_start, content_block_start, ping, content_block_delta with
// text_delta or input_json_delta, content_block_stop, message_delta,
// message_stop), and CutNext cuts the next stream mid-way, the connection
// closed. A request on a message thread ("thread") is refused with a 400:
// the SDK's tool runner needs DisableThread.
//
// The reply to a request is chosen by its turn: the number of assistant
// messages already in its conversation. So an agent that is killed and
// started again, resending a conversation it had, gets the same answers.
// Past the script's end the server answers the last reply's text with no
// tool calls (end_turn).
//
// The server checks what the real API checks and an adapter could get
// wrong, answering the API's error shape ({"type":"error","error":{...}})
// when it does not hold: the x-api-key and anthropic-version headers;
// model, max_tokens and messages present; roles alternating from user;
// tool names matching ^[a-zA-Z0-9_-]{1,64}$ with an object input_schema
// of type "object" without oneOf, allOf or anyOf at its top level;
// and every tool_use of an assistant message answered by a tool_result
// with its ID in the very next user message, before any other content.
package anthropictest

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

// Reply is the model's scripted answer on one turn: text, tool calls, or
// both.
type Reply struct {
	Text  string
	Calls []Call
}

// Call is one tool_use block of a reply. An empty ID becomes
// "toolu_t<turn>_<index>"; Args is the input's JSON ("{}" when empty).
type Call struct {
	ID, Name, Args string
}

// Server is the local Messages API. Its methods are safe for concurrent
// use.
type Server struct {
	// URL is the server's base URL (http://127.0.0.1:port), for the SDK's
	// option.WithBaseURL.
	URL string

	srv     *httptest.Server
	replies []Reply

	mu     sync.Mutex
	bodies [][]byte
	cut    int // events before the next stream is cut (0: none)
}

// NewServer starts a server answering turn n with replies[n].
func NewServer(replies ...Reply) *Server {
	s := &Server{replies: replies}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close shuts the server down.
func (s *Server) Close() { s.srv.Close() }

// Requests returns how many requests reached POST /v1/messages (answered
// or refused).
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// Bodies returns the raw bodies of those requests, in arrival order.
func (s *Server) Bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]byte, len(s.bodies))
	copy(out, s.bodies)
	return out
}

// apiVersion is the shape of the anthropic-version header (a date; the
// SDK sends its own).
var apiVersion = regexp.MustCompile(`^20[0-9]{2}-[01][0-9]-[0-3][0-9]$`)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/messages" {
		writeError(w, http.StatusNotFound, "not_found_error", "no route "+r.Method+" "+r.URL.Path)
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method "+r.Method+" not allowed")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "read body: "+err.Error())
		return
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()
	if r.Header.Get("x-api-key") == "" && r.Header.Get("Authorization") == "" {
		writeError(w, http.StatusUnauthorized, "authentication_error", "x-api-key header is required")
		return
	}
	if v := r.Header.Get("anthropic-version"); !apiVersion.MatchString(v) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("anthropic-version header %q: want a version date such as %q", v, "2023-06-01"))
		return
	}
	req, err := ParseRequest(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	turn := req.Turn()
	reply := s.reply(turn)
	w.Header().Set("request-id", "req_t"+strconv.Itoa(turn))
	if req.Stream {
		s.stream(w, req.Model, turn, reply)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // as the API sends it: "<", not "\u003c"
	_ = enc.Encode(message(req.Model, turn, reply))
}

// reply is the script's answer for turn n.
func (s *Server) reply(n int) Reply {
	switch {
	case n < len(s.replies):
		return s.replies[n]
	case len(s.replies) == 0:
		return Reply{Text: "done"}
	}
	return Reply{Text: s.replies[len(s.replies)-1].Text}
}

// message is the API's Message object for a reply.
func message(model string, turn int, r Reply) map[string]any {
	content := []map[string]any{}
	if r.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": r.Text})
	}
	for i, c := range r.Calls {
		id := c.ID
		if id == "" {
			id = "toolu_t" + strconv.Itoa(turn) + "_" + strconv.Itoa(i)
		}
		args := json.RawMessage(c.Args)
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		content = append(content, map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": args})
	}
	stop := "end_turn"
	if len(r.Calls) > 0 {
		stop = "tool_use"
	}
	return map[string]any{
		"id":            "msg_t" + strconv.Itoa(turn),
		"type":          "message",
		"role":          "assistant",
		"model":         model,
		"content":       content,
		"stop_reason":   stop,
		"stop_sequence": nil,
		"usage":         map[string]any{"input_tokens": 10, "output_tokens": 5},
	}
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
}

// toolName is the API's rule for client tool names.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
