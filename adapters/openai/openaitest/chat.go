package openaitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// ChatMessage is a message of a Chat Completions request, as the server
// reads it (exported for assertions on request bodies: see ChatMessages).
type ChatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type chatRequest struct {
	Model    string        `json:"model"`
	Messages []ChatMessage `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

// ChatMessages decodes the messages of a Chat Completions request body.
func ChatMessages(body []byte) ([]ChatMessage, error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	return req.Messages, nil
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if _, ok := s.read(w, r, &req); !ok {
		return
	}
	if req.Model == "" {
		apiError(w, "you must provide a model parameter", "model")
		return
	}
	if len(req.Messages) == 0 {
		apiError(w, "[] is too short - 'messages'", "messages")
		return
	}
	seen := map[string]bool{}
	for i, t := range req.Tools {
		if t.Type != "function" {
			continue
		}
		if msg, p := checkFunction(t.Function.Name, t.Function.Parameters, "tools["+strconv.Itoa(i)+"].function", seen); msg != "" {
			apiError(w, msg, p)
			return
		}
	}
	turn := 0
	var pending []string
	unanswered := func() bool {
		if len(pending) == 0 {
			return false
		}
		apiError(w, "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: "+strings.Join(pending, ", "), "messages")
		return true
	}
	for i, m := range req.Messages {
		if m.Role == "tool" {
			if !contains(pending, m.ToolCallID) {
				apiError(w, fmt.Sprintf("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (messages[%d], tool_call_id %q).", i, m.ToolCallID), fmt.Sprintf("messages.[%d].role", i))
				return
			}
			pending = remove(pending, m.ToolCallID)
			continue
		}
		if unanswered() {
			return
		}
		if m.Role == "assistant" {
			turn++
			for _, c := range m.ToolCalls {
				pending = append(pending, c.ID)
			}
		}
	}
	if unanswered() {
		return
	}

	rep := s.reply(turn)
	s.mu.Lock()
	s.seq++
	id := "chatcmpl-" + strconv.Itoa(s.seq)
	s.mu.Unlock()
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil, "annotations": []any{}}
	if rep.Text != "" || len(rep.Calls) == 0 {
		msg["content"] = rep.Text
	}
	finish := "stop"
	if len(rep.Calls) > 0 {
		finish = "tool_calls"
		var calls []any
		for i, c := range rep.Calls {
			calls = append(calls, map[string]any{"id": callID(c, turn, i), "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Args}})
		}
		msg["tool_calls"] = calls
	}
	if req.Stream {
		s.chatStream(w, id, req.Model, rep, turn, finish)
		return
	}
	in, out := 0, 8
	for _, m := range req.Messages {
		in += tokens(m.Content)
	}
	writeJSON(w, map[string]any{
		"id": id, "object": "chat.completion", "created": 1767225600, "model": req.Model,
		"choices":            []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"usage":              map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
		"service_tier":       "default",
		"system_fingerprint": nil,
	})
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
