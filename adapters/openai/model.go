package openai

import (
	"context"
	"errors"
	"fmt"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// ErrNoChoice is returned by ChatModel.Turn when the API answers without
// a choice.
var ErrNoChoice = errors.New("openai: the completion has no choice")

// ErrFailed is wrapped by ResponsesModel.Turn's error when the API
// answers a response whose status is "failed".
var ErrFailed = errors.New("openai: the response failed")

// ResponsesModel is a loop.Model over the Responses API (POST
// /v1/responses). Every turn sends the whole conversation as input items
// (stateless: no previous_response_id, so a resumed run sends exactly
// what the journal holds): the system prompt as instructions, user and
// assistant messages, the model's function_call items with their call_id,
// and each tool result as a function_call_output. Function calls come
// back as loop.ToolCalls with the API's call_id as ID.
//
// Reasoning items are not carried from turn to turn (the loop's
// conversation has no place for them); the API accepts the function calls
// without them, since they are sent without their item IDs.
type ResponsesModel struct {
	// Client is the SDK client (its options: key, base URL, retries).
	Client oai.Client
	// Params is the template of every request: Model and any settings.
	// Instructions, Input and Tools are set per turn.
	Params responses.ResponseNewParams
	// Tools shape the tool definitions (deferred loading, strict).
	Tools ToolOptions
	// RequestOptions are passed to every call.
	RequestOptions []option.RequestOption
}

var _ loop.Model = (*ResponsesModel)(nil)

// NewResponsesModel returns a ResponsesModel for the named model.
func NewResponsesModel(client oai.Client, model string) *ResponsesModel {
	return &ResponsesModel{Client: client, Params: responses.ResponseNewParams{Model: shared.ResponsesModel(model)}}
}

// Turn sends one request and returns the model's text and function
// calls.
func (m *ResponsesModel) Turn(ctx context.Context, req loop.ModelRequest) (loop.ModelResponse, error) {
	params, err := m.Request(req)
	if err != nil {
		return loop.ModelResponse{}, err
	}
	resp, err := m.Client.Responses.New(ctx, params, m.RequestOptions...)
	if err != nil {
		return loop.ModelResponse{}, fmt.Errorf("openai: responses: %w", err)
	}
	if resp.Status == responses.ResponseStatusFailed {
		return loop.ModelResponse{}, fmt.Errorf("%w: %s: %s", ErrFailed, resp.Error.Code, resp.Error.Message)
	}
	return ResponsesResponse(resp), nil
}

// Request returns the request Turn sends for req.
func (m *ResponsesModel) Request(req loop.ModelRequest) (responses.ResponseNewParams, error) {
	params := m.Params
	if req.System != "" {
		params.Instructions = oai.String(req.System)
	}
	tools, err := ResponsesTools(req.Tools, &m.Tools)
	if err != nil {
		return params, err
	}
	params.Tools = tools
	input := make(responses.ResponseInputParam, 0, len(req.Messages))
	for _, msg := range req.Messages {
		switch msg.Role {
		case loop.RoleUser:
			input = append(input, responses.ResponseInputItemParamOfMessage(msg.Content, responses.EasyInputMessageRoleUser))
		case loop.RoleAssistant:
			if msg.Content != "" {
				input = append(input, responses.ResponseInputItemParamOfMessage(msg.Content, responses.EasyInputMessageRoleAssistant))
			}
			for _, c := range msg.ToolCalls {
				input = append(input, responses.ResponseInputItemParamOfFunctionCall(argsText(c.Args), c.ID, c.Name))
			}
		case loop.RoleTool:
			it := responses.ResponseInputItemParamOfFunctionCallOutput(msg.Content)
			it.OfFunctionCallOutput.CallID = oai.String(msg.ToolCallID)
			input = append(input, it)
		default:
			return params, fmt.Errorf("openai: message role %q", msg.Role)
		}
	}
	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
	return params, nil
}

// ResponsesResponse returns a response's text (its output_text and
// refusal parts, in order) and function calls (call_id as ID, arguments
// as the model wrote them) as a loop.ModelResponse.
func ResponsesResponse(resp *responses.Response) loop.ModelResponse {
	var out loop.ModelResponse
	var text strings.Builder
	for _, it := range resp.Output {
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				switch c.Type {
				case "output_text":
					text.WriteString(c.Text)
				case "refusal":
					text.WriteString(c.Refusal)
				}
			}
		case "function_call":
			out.ToolCalls = append(out.ToolCalls, loop.ToolCall{ID: it.CallID, Name: it.Name, Args: argsOf(it.Arguments.OfString)})
		}
	}
	out.Text = text.String()
	return out
}

// ChatModel is a loop.Model over Chat Completions (POST
// /v1/chat/completions): the system prompt as a system message, the
// conversation as user, assistant (with tool_calls) and tool messages,
// and the tools as function tools. Tool calls come back with the API's
// IDs.
type ChatModel struct {
	// Client is the SDK client.
	Client oai.Client
	// Params is the template of every request: Model and any settings.
	// Messages and Tools are set per turn.
	Params oai.ChatCompletionNewParams
	// Tools shape the tool definitions (Strict; Deferred does not apply).
	Tools ToolOptions
	// RequestOptions are passed to every call.
	RequestOptions []option.RequestOption
}

var _ loop.Model = (*ChatModel)(nil)

// NewChatModel returns a ChatModel for the named model.
func NewChatModel(client oai.Client, model string) *ChatModel {
	return &ChatModel{Client: client, Params: oai.ChatCompletionNewParams{Model: shared.ChatModel(model)}}
}

// Turn sends one request and returns the first choice's text and tool
// calls.
func (m *ChatModel) Turn(ctx context.Context, req loop.ModelRequest) (loop.ModelResponse, error) {
	params, err := m.Request(req)
	if err != nil {
		return loop.ModelResponse{}, err
	}
	resp, err := m.Client.Chat.Completions.New(ctx, params, m.RequestOptions...)
	if err != nil {
		return loop.ModelResponse{}, fmt.Errorf("openai: chat completions: %w", err)
	}
	if len(resp.Choices) == 0 {
		return loop.ModelResponse{}, ErrNoChoice
	}
	return ChatResponse(resp.Choices[0].Message), nil
}

// Request returns the request Turn sends for req.
func (m *ChatModel) Request(req loop.ModelRequest) (oai.ChatCompletionNewParams, error) {
	params := m.Params
	tools, err := ChatTools(req.Tools, &m.Tools)
	if err != nil {
		return params, err
	}
	params.Tools = tools
	msgs := make([]oai.ChatCompletionMessageParamUnion, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, oai.SystemMessage(req.System))
	}
	for _, msg := range req.Messages {
		switch msg.Role {
		case loop.RoleUser:
			msgs = append(msgs, oai.UserMessage(msg.Content))
		case loop.RoleAssistant:
			a := &oai.ChatCompletionAssistantMessageParam{}
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				a.Content.OfString = oai.String(msg.Content)
			}
			for _, c := range msg.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
					ID: c.ID, Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: argsText(c.Args)}}})
			}
			msgs = append(msgs, oai.ChatCompletionMessageParamUnion{OfAssistant: a})
		case loop.RoleTool:
			msgs = append(msgs, oai.ToolMessage(msg.Content, msg.ToolCallID))
		default:
			return params, fmt.Errorf("openai: message role %q", msg.Role)
		}
	}
	params.Messages = msgs
	return params, nil
}

// ChatResponse returns an assistant message's text (its refusal when it
// has no content) and tool calls as a loop.ModelResponse.
func ChatResponse(msg oai.ChatCompletionMessage) loop.ModelResponse {
	text := msg.Content
	if text == "" {
		text = msg.Refusal
	}
	return loop.ModelResponse{Text: text, ToolCalls: chatCalls(msg)}
}
