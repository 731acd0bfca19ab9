package fantasy

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"charm.land/fantasy"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// Model is a loop.Model over a fantasy.LanguageModel, so loop.Run drives
// it: each turn is one Generate call (one Stream call when
// loop.Options.OnDelta is set: see TurnStream) with the run's system
// prompt, its conversation and its tools.
type Model struct {
	lm   fantasy.LanguageModel
	base fantasy.Call
}

var _ loop.Model = (*Model)(nil)

// ModelOptions configure a Model.
type ModelOptions struct {
	// Call holds the settings of every call (MaxOutputTokens,
	// Temperature, ToolChoice, ProviderOptions, Headers, ...); its Prompt
	// and Tools are the turn's.
	Call fantasy.Call
}

// NewModel returns a Model over lm; opts may be nil.
func NewModel(lm fantasy.LanguageModel, opts *ModelOptions) *Model {
	m := &Model{lm: lm}
	if opts != nil {
		m.base = opts.Call
	}
	return m
}

// Turn asks the language model for its next response and returns its text
// (the text parts joined) and its client-executed tool calls, with the
// model's call IDs. The tools are function tools with their input schemas
// whole (FunctionTools).
func (m *Model) Turn(ctx context.Context, req loop.ModelRequest) (loop.ModelResponse, error) {
	call, err := m.call(req)
	if err != nil {
		return loop.ModelResponse{}, err
	}
	resp, err := m.lm.Generate(ctx, call)
	if err != nil {
		return loop.ModelResponse{}, fmt.Errorf("fantasy: generate: %w", err)
	}
	if resp == nil {
		return loop.ModelResponse{}, errors.New("fantasy: generate: no response")
	}
	var text []string
	for _, c := range resp.Content {
		if t, ok := fantasy.AsContentType[fantasy.TextContent](c); ok && t.Text != "" {
			text = append(text, t.Text)
		}
	}
	return loop.ModelResponse{Text: strings.Join(text, "\n"), ToolCalls: ToolCalls(resp.Content)}, nil
}

// call is the turn's fantasy.Call: the template with the turn's prompt
// and tools.
func (m *Model) call(req loop.ModelRequest) (fantasy.Call, error) {
	call := m.base
	prompt, err := Prompt(req)
	if err != nil {
		return call, err
	}
	call.Prompt = prompt
	call.Tools, err = FunctionTools(req.Tools)
	return call, err
}

// FunctionTools returns the definitions as fantasy function tools for a
// fantasy.Call: names, descriptions and input schemas whole (numbers as
// written), which fantasy's providers send as they are, except that a
// top-level oneOf, anyOf, allOf, enum or not, which OpenAI and Anthropic
// refuse, is merged into one object schema by toolset.ProviderSchema,
// whose note on the alternatives is appended to the description. An agent built
// with fantasy.NewAgent takes AgentTools instead (Tools), whose schemas
// fantasy reduces to their properties.
func FunctionTools(defs []loop.ToolDef) ([]fantasy.Tool, error) {
	out := make([]fantasy.Tool, len(defs))
	for i, d := range defs {
		schema, err := decodeSchema(d.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", d.Name, err)
		}
		schema, note := toolset.ProviderSchema(schema)
		out[i] = fantasy.FunctionTool{Name: d.Name, Description: describe(d.Description, note), InputSchema: schema}
	}
	return out, nil
}

// Prompt returns a turn's conversation as a fantasy prompt: the system
// prompt (when set), then each message; an assistant message's tool calls
// and the tool results answering them carry the calls' IDs, and
// consecutive tool results share one tool message.
func Prompt(req loop.ModelRequest) (fantasy.Prompt, error) {
	out := make(fantasy.Prompt, 0, len(req.Messages)+1)
	if req.System != "" {
		out = append(out, fantasy.NewSystemMessage(req.System))
	}
	for i, m := range req.Messages {
		switch m.Role {
		case loop.RoleUser:
			out = append(out, fantasy.NewUserMessage(m.Content))
		case loop.RoleAssistant:
			msg := fantasy.Message{Role: fantasy.MessageRoleAssistant}
			if m.Content != "" {
				msg.Content = append(msg.Content, fantasy.TextPart{Text: m.Content})
			}
			for _, c := range m.ToolCalls {
				args := string(c.Args)
				if args == "" {
					args = "{}"
				}
				msg.Content = append(msg.Content, fantasy.ToolCallPart{ToolCallID: c.ID, ToolName: c.Name, Input: args})
			}
			out = append(out, msg)
		case loop.RoleTool:
			part := fantasy.ToolResultPart{ToolCallID: m.ToolCallID, Output: fantasy.ToolResultOutputContentText{Text: m.Content}}
			if m.IsError {
				part.Output = fantasy.ToolResultOutputContentError{Error: errors.New(m.Content)}
			}
			if n := len(out); n > 0 && out[n-1].Role == fantasy.MessageRoleTool {
				out[n-1].Content = append(out[n-1].Content, part)
			} else {
				out = append(out, fantasy.Message{Role: fantasy.MessageRoleTool, Content: []fantasy.MessagePart{part}})
			}
		default:
			return nil, fmt.Errorf("fantasy: message %d: unknown role %q", i, m.Role)
		}
	}
	return out, nil
}
