package openaitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// responsesRequest is the part of a Responses API request the server
// reads.
type responsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       string          `json:"instructions"`
	Tools              []responsesTool `json:"tools"`
	PreviousResponseID string          `json:"previous_response_id"`
	Stream             bool            `json:"stream"`
}

// responsesTool is a tool of a Responses request: function tools are
// flat ({"type": "function", "name", "parameters", ...}).
type responsesTool struct {
	Type         string          `json:"type"`
	Name         string          `json:"name"`
	Parameters   json.RawMessage `json:"parameters"`
	DeferLoading bool            `json:"defer_loading"`
}

// InputItem is an item of a Responses request's input, as the server
// reads it (exported for assertions on request bodies: see
// ResponsesInput).
type InputItem struct {
	// Type is "message" (or empty, for the easy message form),
	// "function_call", "function_call_output", "reasoning", ...
	Type string `json:"type"`
	// Role and Content are a message's.
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// CallID, Name and Arguments are a function call's; CallID and Output
	// a function call output's.
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// ResponsesInput decodes the input items of a Responses request body (a
// string input is one user message).
func ResponsesInput(body []byte) ([]InputItem, error) {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	return inputItems(req.Input)
}

func inputItems(raw json.RawMessage) ([]InputItem, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		c, _ := json.Marshal(s)
		return []InputItem{{Type: "message", Role: "user", Content: c}}, nil
	}
	var items []InputItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, err
	}
	return items, nil
}

// modelItem says whether an input item was produced by the model.
func modelItem(it InputItem) bool {
	switch it.Type {
	case "function_call", "reasoning", "custom_tool_call", "tool_search_call":
		return true
	case "message", "":
		return it.Role == "assistant"
	}
	return false
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	body, ok := s.read(w, r, &req)
	if !ok {
		return
	}
	if req.Model == "" {
		apiError(w, "Missing required parameter: 'model'.", "model")
		return
	}
	seen := map[string]bool{}
	search, deferred := false, ""
	for i, t := range req.Tools {
		switch t.Type {
		case "function":
			if msg, p := checkFunction(t.Name, t.Parameters, "tools["+strconv.Itoa(i)+"]", seen); msg != "" {
				apiError(w, msg, p)
				return
			}
			if t.DeferLoading && deferred == "" {
				deferred = t.Name
			}
		case "tool_search":
			search = true
		}
	}
	if deferred != "" && !search {
		apiError(w, fmt.Sprintf("Function '%s' has defer_loading set, which requires a tool_search tool.", deferred), "tools")
		return
	}
	items, err := inputItems(req.Input)
	if err != nil {
		apiError(w, "Invalid 'input': "+err.Error(), "input")
		return
	}

	turn := 0
	var pending []string // calls awaiting their output, in order
	known := map[string]bool{}
	if req.PreviousResponseID != "" {
		s.mu.Lock()
		st, ok := s.turns[req.PreviousResponseID]
		prev := s.prev[req.PreviousResponseID]
		s.mu.Unlock()
		if !ok {
			apiError(w, fmt.Sprintf("Previous response with id '%s' not found.", req.PreviousResponseID), "previous_response_id")
			return
		}
		turn = st
		for _, id := range prev {
			pending = append(pending, id)
			known[id] = true
		}
	}
	inModel := false
	for i, it := range items {
		m := modelItem(it)
		if m && !inModel {
			turn++
		}
		inModel = m
		switch it.Type {
		case "function_call":
			if it.CallID == "" {
				apiError(w, fmt.Sprintf("Missing required parameter: 'input[%d].call_id'.", i), fmt.Sprintf("input[%d].call_id", i))
				return
			}
			pending = append(pending, it.CallID)
			known[it.CallID] = true
		case "function_call_output":
			if !known[it.CallID] {
				apiError(w, fmt.Sprintf("No tool call found for function call output with call_id %s.", it.CallID), fmt.Sprintf("input[%d]", i))
				return
			}
			pending = remove(pending, it.CallID)
		}
	}
	if len(pending) > 0 {
		apiError(w, fmt.Sprintf("No tool output found for function call %s.", pending[0]), "input")
		return
	}

	rep := s.reply(turn)
	s.mu.Lock()
	s.seq++
	id := "resp_" + strconv.Itoa(s.seq)
	s.mu.Unlock()
	output := []any{}
	if rep.Text != "" || len(rep.Calls) == 0 {
		output = append(output, map[string]any{
			"type": "message", "id": "msg_" + strconv.Itoa(s.seq), "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": rep.Text, "annotations": []any{}, "logprobs": []any{}}},
		})
	}
	var calls []string
	for i, c := range rep.Calls {
		cid := callID(c, turn, i)
		calls = append(calls, cid)
		output = append(output, map[string]any{
			"type": "function_call", "id": "fc_" + strings.TrimPrefix(cid, "call_"), "call_id": cid,
			"name": c.Name, "arguments": c.Args, "status": "completed",
		})
	}
	s.mu.Lock()
	s.turns[id] = turn + 1
	s.prev[id] = calls
	s.mu.Unlock()

	var prevID any
	if req.PreviousResponseID != "" {
		prevID = req.PreviousResponseID
	}
	var instr any
	if req.Instructions != "" {
		instr = req.Instructions
	}
	var echo struct {
		Tools []json.RawMessage `json:"tools"`
	}
	_ = json.Unmarshal(body, &echo)
	tools := []json.RawMessage{}
	tools = append(tools, echo.Tools...)
	in, out := tokens(req.Input), 8*len(output)
	resp := map[string]any{
		"id": id, "object": "response", "created_at": 1767225600, "status": "completed",
		"error": nil, "incomplete_details": nil, "instructions": instr, "max_output_tokens": nil,
		"model": req.Model, "output": output, "parallel_tool_calls": true, "previous_response_id": prevID,
		"reasoning": map[string]any{"effort": nil, "summary": nil}, "store": true, "temperature": 1.0,
		"text": map[string]any{"format": map[string]any{"type": "text"}}, "tool_choice": "auto",
		"tools": tools, "top_p": 1.0, "truncation": "disabled", "metadata": map[string]any{},
		"usage": map[string]any{
			"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": out, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": in + out,
		},
	}
	if req.Stream {
		s.responsesStream(w, resp)
		return
	}
	writeJSON(w, resp)
}

// tokens is a stand-in token count: four bytes a token.
func tokens(b []byte) int { return len(b)/4 + 1 }

func remove(ids []string, id string) []string {
	for i, x := range ids {
		if x == id {
			return append(ids[:i:i], ids[i+1:]...)
		}
	}
	return ids
}
