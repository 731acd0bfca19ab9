package openaitest

import (
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"
)

// CutNext makes the server cut its next streamed answer (either API)
// after n server-sent events: it closes the connection there, without
// the end of the stream, as a dropped connection does. Later answers
// stream whole again.
func (s *Server) CutNext(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cut = n
}

// sse writes server-sent events, flushing each, and aborts the
// connection after left events when left >= 0.
type sse struct {
	w    http.ResponseWriter
	left int
}

// newSSE starts an event stream, taking the server's pending cut.
func (s *Server) newSSE(w http.ResponseWriter) *sse {
	s.mu.Lock()
	left := s.cut
	if left == 0 {
		left = -1
	}
	s.cut = 0
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, left: left}
}

// send writes one event: "event: <name>" when name is set (the Responses
// API's typed events), then "data: <v as JSON>" ("data: [DONE]" for the
// string "[DONE]").
func (e *sse) send(name string, v any) {
	if e.left == 0 {
		// Closes the connection mid-body: the client reads an unexpected
		// EOF in the chunked body, not the end of the stream.
		panic(http.ErrAbortHandler)
	}
	if e.left > 0 {
		e.left--
	}
	var b strings.Builder
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	if s, ok := v.(string); ok && s == "[DONE]" {
		b.WriteString("data: [DONE]\n\n")
	} else {
		j, _ := json.Marshal(v)
		b.WriteString("data: " + string(j) + "\n\n")
	}
	_, _ = e.w.Write([]byte(b.String()))
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}

// textPieces splits text as a model streams it: a word and the spaces
// after it per piece.
func textPieces(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		j := i
		for j < len(s) && s[j] == ' ' {
			j++
		}
		out = append(out, s[:j])
		s = s[j:]
	}
	return out
}

// argPieces splits a call's arguments into pieces of about 6 bytes (on
// UTF-8 boundaries), as the APIs stream them.
func argPieces(s string) []string {
	var out []string
	for len(s) > 6 {
		n := 6
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// chatStream answers a Chat Completions request with chat.completion.chunk
// events: the role, the text word by word, each tool call (its ID, type
// and name, then its arguments in pieces), the finish reason, then
// "data: [DONE]".
func (s *Server) chatStream(w http.ResponseWriter, id, model string, rep Reply, turn int, finish string) {
	e := s.newSSE(w)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1767225600, "model": model,
			"service_tier": "default", "system_fingerprint": nil,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
	}
	e.send("", chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil))
	for _, p := range textPieces(rep.Text) {
		e.send("", chunk(map[string]any{"content": p}, nil))
	}
	for i, c := range rep.Calls {
		e.send("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": callID(c, turn, i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil))
		for _, p := range argPieces(c.Args) {
			e.send("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil))
		}
	}
	e.send("", chunk(map[string]any{}, finish))
	e.send("", "[DONE]")
}

// responsesStream answers a Responses request with the API's typed
// events: response.created and response.in_progress, then per output item
// response.output_item.added, its content (a message's
// response.content_part.added, response.output_text.delta word by word,
// response.output_text.done and response.content_part.done; a function
// call's response.function_call_arguments.delta in pieces and
// response.function_call_arguments.done), response.output_item.done, and
// last response.completed with the whole response. Each event has its
// sequence_number.
func (s *Server) responsesStream(w http.ResponseWriter, resp map[string]any) {
	e := s.newSSE(w)
	seq := 0
	send := func(typ string, v map[string]any) {
		v["type"] = typ
		v["sequence_number"] = seq
		seq++
		e.send(typ, v)
	}
	start := map[string]any{}
	for k, v := range resp {
		start[k] = v
	}
	start["status"] = "in_progress"
	start["output"] = []any{}
	start["usage"] = nil
	send("response.created", map[string]any{"response": start})
	send("response.in_progress", map[string]any{"response": start})
	for i, it := range resp["output"].([]any) {
		item := it.(map[string]any)
		itemID := item["id"].(string)
		added := map[string]any{}
		for k, v := range item {
			added[k] = v
		}
		added["status"] = "in_progress"
		switch item["type"] {
		case "message":
			added["content"] = []any{}
			send("response.output_item.added", map[string]any{"output_index": i, "item": added})
			for j, c := range item["content"].([]any) {
				part := c.(map[string]any)
				text, _ := part["text"].(string)
				send("response.content_part.added", map[string]any{"item_id": itemID, "output_index": i, "content_index": j,
					"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
				for _, p := range textPieces(text) {
					send("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": i, "content_index": j,
						"delta": p, "logprobs": []any{}})
				}
				send("response.output_text.done", map[string]any{"item_id": itemID, "output_index": i, "content_index": j,
					"text": text, "logprobs": []any{}})
				send("response.content_part.done", map[string]any{"item_id": itemID, "output_index": i, "content_index": j, "part": part})
			}
		case "function_call":
			args, _ := item["arguments"].(string)
			added["arguments"] = ""
			send("response.output_item.added", map[string]any{"output_index": i, "item": added})
			for _, p := range argPieces(args) {
				send("response.function_call_arguments.delta", map[string]any{"item_id": itemID, "output_index": i, "delta": p})
			}
			send("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": i, "name": item["name"], "arguments": args})
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	send("response.completed", map[string]any{"response": resp})
}
