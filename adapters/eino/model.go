package eino

import (
	"context"
	"errors"
	"fmt"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// Model is a loop.Model over an eino chat model, so loop.Run drives it:
// each turn is one Generate call (one Stream call when
// loop.Options.OnDelta is set: see TurnStream) with the run's system
// prompt, its conversation and its tools.
type Model struct {
	cm   model.BaseChatModel
	opts []model.Option
}

var _ loop.Model = (*Model)(nil)

// NewModel returns a Model over cm. When cm is a model.ToolCallingChatModel
// the turn's tools are bound with WithTools (a new instance per turn, cm
// is not changed); otherwise they are passed as the model.WithTools
// option. opts are passed to every Generate call (temperature, model
// name, ...).
func NewModel(cm model.BaseChatModel, opts ...model.Option) *Model {
	return &Model{cm: cm, opts: opts}
}

// Turn asks the chat model for its next message and returns its text and
// tool calls, with the model's call IDs. Arguments that are not JSON are
// kept as a JSON string (the executor answers the call with an error the
// model reads).
func (m *Model) Turn(ctx context.Context, req loop.ModelRequest) (loop.ModelResponse, error) {
	cm, msgs, opts, err := m.prepare(req)
	if err != nil {
		return loop.ModelResponse{}, err
	}
	out, err := cm.Generate(ctx, msgs, opts...)
	if err != nil {
		return loop.ModelResponse{}, fmt.Errorf("eino: generate: %w", err)
	}
	if out == nil {
		return loop.ModelResponse{}, errors.New("eino: generate: the model returned no message")
	}
	return loop.ModelResponse{Text: out.Content, ToolCalls: ToolCalls(out)}, nil
}

// prepare returns the chat model with the turn's tools bound (or the
// options carrying them), and the turn's messages.
func (m *Model) prepare(req loop.ModelRequest) (model.BaseChatModel, []*schema.Message, []model.Option, error) {
	msgs, err := Messages(req)
	if err != nil {
		return nil, nil, nil, err
	}
	cm, opts := m.cm, m.opts
	if len(req.Tools) > 0 {
		infos, err := ToolInfos(req.Tools)
		if err != nil {
			return nil, nil, nil, err
		}
		if tc, ok := cm.(model.ToolCallingChatModel); ok {
			bound, err := tc.WithTools(infos)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("eino: bind tools: %w", err)
			}
			cm = bound
		} else {
			opts = append(append(make([]model.Option, 0, len(opts)+1), opts...), model.WithTools(infos))
		}
	}
	return cm, msgs, opts, nil
}

// Messages returns a turn's conversation as eino messages: the system
// prompt (when set), then each message, tool calls and tool results with
// their call IDs.
func Messages(req loop.ModelRequest) ([]*schema.Message, error) {
	out := make([]*schema.Message, 0, len(req.Messages)+1)
	if req.System != "" {
		out = append(out, schema.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		switch m.Role {
		case loop.RoleUser:
			out = append(out, schema.UserMessage(m.Content))
		case loop.RoleAssistant:
			var calls []schema.ToolCall
			for _, c := range m.ToolCalls {
				args := string(c.Args)
				if args == "" {
					args = "{}"
				}
				calls = append(calls, schema.ToolCall{ID: c.ID, Type: "function",
					Function: schema.FunctionCall{Name: c.Name, Arguments: args}})
			}
			out = append(out, schema.AssistantMessage(m.Content, calls))
		case loop.RoleTool:
			out = append(out, schema.ToolMessage(m.Content, m.ToolCallID, schema.WithToolName(m.Name)))
		default:
			return nil, fmt.Errorf("eino: message %d: unknown role %q", i, m.Role)
		}
	}
	return out, nil
}
