package loop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/chattest"
)

// chatModel is a loop.Model calling a chattest server over HTTP: what an
// adapter to a provider's chat API looks like, in a few dozen lines.
type chatModel struct {
	// URL is the server's base URL.
	URL string
	// Client is the HTTP client; nil means http.DefaultClient.
	Client *http.Client
}

var _ loop.Model = (*chatModel)(nil)

// Turn sends one chat request and decodes the answer.
func (m *chatModel) Turn(ctx context.Context, req loop.ModelRequest) (loop.ModelResponse, error) {
	wr := chattest.Request{System: req.System}
	for _, t := range req.Tools {
		wr.Tools = append(wr.Tools, chattest.WireTool{Type: "function", Function: chattest.WireFunction{
			Name: t.Name, Description: t.Description, Parameters: t.InputSchema}})
	}
	for _, msg := range req.Messages {
		wm := chattest.WireMessage{Role: string(msg.Role), Content: msg.Content, ToolCallID: msg.ToolCallID, Name: msg.Name}
		for _, c := range msg.ToolCalls {
			wm.ToolCalls = append(wm.ToolCalls, chattest.WireToolCall{ID: c.ID, Type: "function",
				Function: chattest.WireFunction{Name: c.Name, Arguments: string(c.Args)}})
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
	var out chattest.Response
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
