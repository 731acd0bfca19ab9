package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// DefaultMaxTokens is the max_tokens a Model sends when its Params leave
// it zero.
const DefaultMaxTokens = 4096

// ErrConversation is returned (wrapped) for a conversation the Messages
// API cannot be sent: a tool message that answers no tool call of the
// assistant message before it, or an unknown role.
var ErrConversation = errors.New("anthropic: conversation cannot be sent")

// Model is a loop.Model over the Messages API: each turn is one
// POST /v1/messages (streamed when loop.Options.OnDelta is set: see
// TurnStream) with the run's system prompt, its
// conversation and its tools; the reply's text and tool_use blocks are the
// turn's response. The tool_use IDs the API gave are kept as the calls'
// IDs, and loop.Run journals them with the turn, so a resumed run sends
// the same tool_use and tool_result IDs it sent before: never new ones.
//
//	model := &anthropic.Model{Client: &client, Params: sdk.MessageNewParams{Model: sdk.ModelClaudeSonnet5_5}}
//	res, err := loop.Run(ctx, loop.Options{RunID: "ticket-1", Journal: j, Model: model, Tools: tools, Prompt: "..."})
type Model struct {
	// Client sends the requests. Required.
	Client *sdk.Client
	// Params is the request's template: Model (required), MaxTokens
	// (DefaultMaxTokens when zero), temperature, tool choice, ... Its
	// System, Messages and Tools are replaced by the turn's. Extended
	// thinking (Params.Thinking) does not fit: a loop turn keeps no
	// thinking blocks, which the API wants back beside tool_use blocks.
	Params sdk.MessageNewParams
	// Options are added to every request (after the client's).
	Options []option.RequestOption
}

// Turn sends req as one Messages API request and returns the reply as a
// loop.ModelResponse. An API error (HTTP status, transport) is returned
// wrapped: loop.Run asks again on a resume, never replays it.
func (m *Model) Turn(ctx context.Context, req loop.ModelRequest) (loop.ModelResponse, error) {
	if m.Client == nil {
		return loop.ModelResponse{}, errors.New("anthropic: Model.Client is nil")
	}
	params, err := Request(m.Params, req)
	if err != nil {
		return loop.ModelResponse{}, err
	}
	msg, err := m.Client.Messages.New(ctx, params, m.Options...)
	if err != nil {
		return loop.ModelResponse{}, fmt.Errorf("anthropic: messages: %w", err)
	}
	return Response(msg)
}

// Request builds the Messages API request of a loop turn on the template
// params: System from req.System, Tools from req.Tools (see ToolParams),
// and Messages from req.Messages, where an assistant message's tool calls
// become tool_use blocks (IDs kept) and the tool messages that follow it
// become one user message of tool_result blocks, in order. Consecutive
// user texts are merged into one user message (the API alternates roles).
func Request(params sdk.MessageNewParams, req loop.ModelRequest) (sdk.MessageNewParams, error) {
	tools, err := ToolParams(req.Tools)
	if err != nil {
		return params, err
	}
	msgs, err := Messages(req.Messages)
	if err != nil {
		return params, err
	}
	params.Tools = tools
	params.Messages = msgs
	params.System = nil
	if req.System != "" {
		params.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	if params.MaxTokens == 0 {
		params.MaxTokens = DefaultMaxTokens
	}
	return params, nil
}

// Messages converts a loop conversation to the Messages API's, as Request
// does.
func Messages(msgs []loop.Message) ([]sdk.MessageParam, error) {
	var (
		out     []sdk.MessageParam
		pending map[string]bool // tool_use IDs of the last assistant message not yet answered
	)
	// appendUser adds blocks to the trailing user message, or starts one.
	appendUser := func(blocks ...sdk.ContentBlockParamUnion) {
		if n := len(out); n > 0 && out[n-1].OfUser != nil {
			out[n-1].OfUser.Content = append(out[n-1].OfUser.Content, blocks...)
			return
		}
		out = append(out, sdk.NewUserMessage(blocks...))
	}
	for i, m := range msgs {
		switch m.Role {
		case loop.RoleUser:
			if m.Content == "" {
				continue
			}
			appendUser(sdk.NewTextBlock(m.Content))
		case loop.RoleAssistant:
			var blocks []sdk.ContentBlockParamUnion
			if m.Content != "" {
				blocks = append(blocks, sdk.NewTextBlock(m.Content))
			}
			pending = map[string]bool{}
			for _, c := range m.ToolCalls {
				args := c.Args
				if len(args) == 0 {
					args = json.RawMessage("{}")
				}
				blocks = append(blocks, sdk.NewToolUseBlock(c.ID, args, c.Name))
				pending[c.ID] = true
			}
			if len(blocks) == 0 {
				blocks = append(blocks, sdk.NewTextBlock("(no text)"))
			}
			out = append(out, sdk.NewAssistantMessage(blocks...))
		case loop.RoleTool:
			if !pending[m.ToolCallID] {
				return nil, fmt.Errorf("%w: message %d answers tool call %q, which the assistant message before it did not make", ErrConversation, i, m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
			content := m.Content
			blk := sdk.NewToolResultBlock(m.ToolCallID, content, m.IsError)
			if content == "" {
				blk.OfToolResult.Content = nil
			}
			appendUser(blk)
		default:
			return nil, fmt.Errorf("%w: message %d has role %q", ErrConversation, i, m.Role)
		}
	}
	return out, nil
}

// ErrReply is returned (wrapped) for a reply a loop turn cannot take: one
// cut short (stop_reason max_tokens or model_context_window_exceeded) with
// tool_use blocks, whose last input may be incomplete, and a paused turn
// (pause_turn, from server tools, which Model does not drive).
var ErrReply = errors.New("anthropic: reply cannot be a loop turn")

// Response converts a Messages API reply to a loop.ModelResponse: its
// text blocks joined, and when it stopped for tool use (stop_reason
// tool_use) its tool_use blocks as tool calls with the API's IDs. A reply
// that stopped otherwise (end_turn, stop_sequence, refusal) has no calls
// to run, so it ends the run with its text.
func Response(msg *sdk.Message) (loop.ModelResponse, error) {
	var (
		texts []string
		calls []loop.ToolCall
	)
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "tool_use":
			calls = append(calls, loop.ToolCall{ID: b.ID, Name: b.Name, Args: append(json.RawMessage(nil), b.Input...)})
		}
	}
	resp := loop.ModelResponse{Text: strings.Join(texts, "")}
	switch msg.StopReason {
	case sdk.StopReasonToolUse:
		resp.ToolCalls = calls
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		if len(calls) > 0 {
			return resp, fmt.Errorf("%w: stop_reason %s with %d tool_use blocks (raise max_tokens)", ErrReply, msg.StopReason, len(calls))
		}
	case sdk.StopReasonPauseTurn:
		return resp, fmt.Errorf("%w: stop_reason pause_turn (server tools are not driven by Model)", ErrReply)
	}
	return resp, nil
}
