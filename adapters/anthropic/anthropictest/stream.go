package anthropictest

import (
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"
)

// CutNext makes the server cut its next streamed answer after n events:
// it closes the connection there, before message_stop, as a dropped
// connection does. Later answers stream whole again.
func (s *Server) CutNext(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cut = n
}

// stream answers with the Messages API's server-sent events: the message
// of message (turn, reply) told as message_start (empty content, no stop
// reason), a ping, then each block as content_block_start, its deltas
// (text word by word as text_delta; a tool_use's input in pieces as
// input_json_delta, the block starting with an empty input) and
// content_block_stop, then message_delta with the stop reason and
// message_stop.
func (s *Server) stream(w http.ResponseWriter, model string, turn int, r Reply) {
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
	send := func(v map[string]any) {
		if left == 0 {
			// Closes the connection mid-body: the client reads an
			// unexpected EOF, not the end of the stream.
			panic(http.ErrAbortHandler)
		}
		if left > 0 {
			left--
		}
		var b strings.Builder
		b.WriteString("event: " + v["type"].(string) + "\ndata: ")
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v) // ends with "\n"
		b.WriteString("\n")
		_, _ = w.Write([]byte(b.String()))
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	msg := message(model, turn, r)
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"] = []any{}
	start["stop_reason"] = nil
	start["usage"] = map[string]any{"input_tokens": 10, "output_tokens": 1}
	send(map[string]any{"type": "message_start", "message": start})
	send(map[string]any{"type": "ping"})
	for i, blk := range msg["content"].([]map[string]any) {
		switch blk["type"] {
		case "text":
			send(map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			for _, p := range textPieces(blk["text"].(string)) {
				send(map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": p}})
			}
		case "tool_use":
			send(map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{
				"type": "tool_use", "id": blk["id"], "name": blk["name"], "input": map[string]any{}}})
			for _, p := range jsonPieces(string(blk["input"].(json.RawMessage))) {
				send(map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
			}
		}
		send(map[string]any{"type": "content_block_stop", "index": i})
	}
	send(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": msg["stop_reason"], "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5}})
	send(map[string]any{"type": "message_stop"})
}

// textPieces splits text as the model streams it: a word and the spaces
// after it per piece.
func textPieces(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			return append(out, s)
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

// jsonPieces splits a tool_use input into pieces of about 6 bytes (on
// UTF-8 boundaries), as the API streams partial_json.
func jsonPieces(s string) []string {
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
