package anthropictest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Request is a Messages API request as the server read it.
type Request struct {
	Model     string
	MaxTokens int
	// System is the system prompt (text blocks joined with "\n").
	System   string
	Messages []Message
	Tools    []Tool
	// Stream is the request's "stream": the answer is server-sent events.
	Stream bool
}

// Message is one message of a request.
type Message struct {
	Role   string
	Blocks []Block
}

// Block is one content block: text, tool_use or tool_result (other types
// keep only Type).
type Block struct {
	Type string
	// Text of a text block.
	Text string
	// ID, Name and Input of a tool_use block.
	ID    string
	Name  string
	Input json.RawMessage
	// ToolUseID, IsError and Content (its text, blocks joined with "\n")
	// of a tool_result block; Texts has each text block apart.
	ToolUseID string
	IsError   bool
	Content   string
	Texts     []string
}

// Tool is a tool definition of a request.
type Tool struct {
	// Type is "" or "custom" for a client tool; server tools keep theirs.
	Type        string
	Name        string
	Description string
	InputSchema json.RawMessage
}

// Turn is the request's turn: the number of assistant messages in it.
func (r *Request) Turn() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// ErrRequest is wrapped by every error of ParseRequest.
var ErrRequest = errors.New("anthropictest: invalid request")

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRequest}, args...)...)
}

// ParseRequest reads and checks a POST /v1/messages body as the API
// would (see the package documentation for what is checked).
func ParseRequest(body []byte) (*Request, error) {
	var raw struct {
		Model     *string           `json:"model"`
		MaxTokens *int              `json:"max_tokens"`
		System    json.RawMessage   `json:"system"`
		Messages  []json.RawMessage `json:"messages"`
		Tools     []json.RawMessage `json:"tools"`
		Stream    bool              `json:"stream"`
		Thread    json.RawMessage   `json:"thread"`
	}
	if err := strictObject(body, &raw); err != nil {
		return nil, bad("body: %v", err)
	}
	switch {
	case raw.Model == nil || *raw.Model == "":
		return nil, bad("model: field required")
	case raw.MaxTokens == nil:
		return nil, bad("max_tokens: field required")
	case *raw.MaxTokens < 1:
		return nil, bad("max_tokens: %d is less than 1", *raw.MaxTokens)
	case len(raw.Thread) > 0 && string(raw.Thread) != "null":
		return nil, bad("thread: message threads are not supported by anthropictest (create the SDK's tool runner with DisableThread)")
	case len(raw.Messages) == 0:
		return nil, bad("messages: at least one message is required")
	}
	req := &Request{Model: *raw.Model, MaxTokens: *raw.MaxTokens, Stream: raw.Stream}
	sys, err := systemText(raw.System)
	if err != nil {
		return nil, err
	}
	req.System = sys
	names := map[string]bool{}
	for i, t := range raw.Tools {
		tool, err := parseTool(t)
		if err != nil {
			return nil, bad("tools.%d: %v", i, err)
		}
		if names[tool.Name] {
			return nil, bad("tools.%d: tool names must be unique: %q", i, tool.Name)
		}
		names[tool.Name] = true
		req.Tools = append(req.Tools, tool)
	}
	for i, m := range raw.Messages {
		msg, err := parseMessage(m)
		if err != nil {
			return nil, bad("messages.%d: %v", i, err)
		}
		req.Messages = append(req.Messages, msg)
	}
	if err := checkToolPairs(req.Messages); err != nil {
		return nil, err
	}
	return req, nil
}

// strictObject decodes a JSON object into v, refusing anything else.
func strictObject(b []byte, v any) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return errors.New("not a JSON object")
	}
	return json.Unmarshal(b, v)
}

func systemText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", bad("system: not a string or an array of text blocks")
	}
	texts := make([]string, len(blocks))
	for i, b := range blocks {
		if b.Type != "text" {
			return "", bad("system.%d: type %q, want \"text\"", i, b.Type)
		}
		texts[i] = b.Text
	}
	return strings.Join(texts, "\n"), nil
}

func parseTool(raw json.RawMessage) (Tool, error) {
	var t struct {
		Type        string          `json:"type"`
		Name        *string         `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	if err := strictObject(raw, &t); err != nil {
		return Tool{}, err
	}
	tool := Tool{Type: t.Type, Description: t.Description, InputSchema: t.InputSchema}
	if t.Name != nil {
		tool.Name = *t.Name
	}
	if t.Type != "" && t.Type != "custom" {
		return tool, nil // a server tool: its own rules
	}
	if !toolName.MatchString(tool.Name) {
		return Tool{}, fmt.Errorf("name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$': %q", tool.Name)
	}
	var schema map[string]any
	if err := strictObject(t.InputSchema, &schema); err != nil {
		return Tool{}, fmt.Errorf("input_schema: %v", err)
	}
	if schema["type"] != "object" {
		return Tool{}, fmt.Errorf("input_schema.type: want \"object\", got %v", schema["type"])
	}
	for _, k := range []string{"oneOf", "allOf", "anyOf"} {
		if _, ok := schema[k]; ok {
			return Tool{}, errors.New("input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level")
		}
	}
	return tool, nil
}

func parseMessage(raw json.RawMessage) (Message, error) {
	var m struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := strictObject(raw, &m); err != nil {
		return Message{}, err
	}
	if m.Role != "user" && m.Role != "assistant" {
		return Message{}, fmt.Errorf("role: %q is not \"user\" or \"assistant\"", m.Role)
	}
	msg := Message{Role: m.Role}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		msg.Blocks = []Block{{Type: "text", Text: s}}
		return msg, nil
	}
	var blocks []json.RawMessage
	if err := json.Unmarshal(m.Content, &blocks); err != nil || blocks == nil {
		return Message{}, errors.New("content: not a string or an array of blocks")
	}
	if len(blocks) == 0 && m.Role == "user" {
		return Message{}, errors.New("content: a user message must not be empty")
	}
	for i, b := range blocks {
		blk, err := parseBlock(b, m.Role)
		if err != nil {
			return Message{}, fmt.Errorf("content.%d: %v", i, err)
		}
		msg.Blocks = append(msg.Blocks, blk)
	}
	return msg, nil
}

func parseBlock(raw json.RawMessage, role string) (Block, error) {
	var b struct {
		Type      string          `json:"type"`
		Text      *string         `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		IsError   bool            `json:"is_error"`
		Content   json.RawMessage `json:"content"`
	}
	if err := strictObject(raw, &b); err != nil {
		return Block{}, err
	}
	blk := Block{Type: b.Type}
	switch b.Type {
	case "text":
		if b.Text == nil || *b.Text == "" {
			return Block{}, errors.New("text: text content blocks must be non-empty")
		}
		blk.Text = *b.Text
	case "tool_use":
		if role != "assistant" {
			return Block{}, errors.New("tool_use blocks are only allowed in assistant messages")
		}
		if b.ID == "" || b.Name == "" {
			return Block{}, errors.New("tool_use: id and name are required")
		}
		var in map[string]any
		if err := strictObject(b.Input, &in); err != nil {
			return Block{}, fmt.Errorf("tool_use.input: %v", err)
		}
		blk.ID, blk.Name, blk.Input = b.ID, b.Name, b.Input
	case "tool_result":
		if role != "user" {
			return Block{}, errors.New("tool_result blocks are only allowed in user messages")
		}
		if b.ToolUseID == "" {
			return Block{}, errors.New("tool_result: tool_use_id is required")
		}
		blk.ToolUseID, blk.IsError = b.ToolUseID, b.IsError
		texts, err := resultTexts(b.Content)
		if err != nil {
			return Block{}, fmt.Errorf("tool_result.content: %v", err)
		}
		blk.Texts, blk.Content = texts, strings.Join(texts, "\n")
	case "":
		return Block{}, errors.New("type: field required")
	}
	return blk, nil
}

func resultTexts(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}, nil
	}
	var blocks []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, errors.New("not a string or an array of blocks")
	}
	var texts []string
	for i, b := range blocks {
		if b.Type == "text" {
			if b.Text == nil || *b.Text == "" {
				return nil, fmt.Errorf("%d: text content blocks must be non-empty", i)
			}
			texts = append(texts, *b.Text)
		}
	}
	return texts, nil
}

// checkToolPairs enforces the API's tool rules across messages: tool_use
// IDs are unique; every tool_use of an assistant message is answered by a
// tool_result at the start of the next message, a user message; and a
// tool_result answers a tool_use of the assistant message just before.
func checkToolPairs(msgs []Message) error {
	seen := map[string]bool{}
	var open map[string]bool // tool_use IDs of the previous assistant message
	for i, m := range msgs {
		if m.Role == "assistant" {
			if len(open) > 0 {
				return bad("messages.%d: tool_use ids were found without tool_result blocks immediately after: %s", i-1, keys(open))
			}
			open = map[string]bool{}
			for _, b := range m.Blocks {
				if b.Type == "tool_use" {
					if seen[b.ID] {
						return bad("messages.%d: tool_use ids must be unique: %q", i, b.ID)
					}
					seen[b.ID] = true
					open[b.ID] = true
				}
			}
			continue
		}
		for j, b := range m.Blocks {
			if b.Type != "tool_result" {
				if len(open) > 0 {
					return bad("messages.%d: tool_use ids were found without tool_result blocks immediately after: %s", i-1, keys(open))
				}
				continue
			}
			if !open[b.ToolUseID] {
				return bad("messages.%d.content.%d: unexpected tool_use_id found in tool_result blocks: %s. Each tool_result block must have a corresponding tool_use block in the previous message.", i, j, b.ToolUseID)
			}
			delete(open, b.ToolUseID)
		}
		if len(open) > 0 {
			return bad("messages.%d: tool_use ids were found without tool_result blocks immediately after: %s", i-1, keys(open))
		}
		open = nil
	}
	return nil
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
