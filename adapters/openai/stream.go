package openai

import (
	"context"
	"errors"
	"fmt"

	oai "github.com/openai/openai-go/v3"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// ErrIncomplete is wrapped by TurnStream's error when the stream ends
// before the response is whole: Chat Completions chunks without a finish
// reason, a Responses stream without response.completed (or with
// response.incomplete). loop.Run records no response for such a turn.
var ErrIncomplete = errors.New("openai: the stream ended before the response was complete")

var (
	_ loop.StreamModel = (*ChatModel)(nil)
	_ loop.StreamModel = (*ResponsesModel)(nil)
)

// TurnStream is Turn over a streamed completion ("stream": true; the
// SDK's NewStreaming parses the server-sent events): each content (or,
// when there is no content, refusal) fragment of the first choice is
// emitted as text, each tool call fragment as a loop.ToolCallDelta (its
// ID and name with its first fragment). The response is the chunks
// accumulated (oai.ChatCompletionAccumulator), returned once a finish
// reason has arrived; a stream that fails or ends before that is an
// error (ErrIncomplete when it ended cleanly).
func (m *ChatModel) TurnStream(ctx context.Context, req loop.ModelRequest, emit func(loop.Delta)) (loop.ModelResponse, error) {
	params, err := m.Request(req)
	if err != nil {
		return loop.ModelResponse{}, err
	}
	stream := m.Client.Chat.Completions.NewStreaming(ctx, params, m.RequestOptions...)
	defer stream.Close()
	var (
		acc      oai.ChatCompletionAccumulator
		finished bool
		content  bool // content has streamed: refusal fragments are not the text
	)
	for stream.Next() {
		chunk := stream.Current()
		if !acc.AddChunk(chunk) {
			return loop.ModelResponse{}, fmt.Errorf("openai: chat completions stream: chunk %q does not fit the ones before it", chunk.ID)
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			switch {
			case ch.Delta.Content != "":
				content = true
				emit(loop.Delta{Text: ch.Delta.Content})
			case ch.Delta.Refusal != "" && !content:
				emit(loop.Delta{Text: ch.Delta.Refusal})
			}
			for _, tc := range ch.Delta.ToolCalls {
				i := int(tc.Index)
				if i < 0 {
					i = 0 // some providers send -1 for a single call
				}
				emit(loop.Delta{ToolCall: &loop.ToolCallDelta{Index: i, ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments}})
			}
			if ch.FinishReason != "" {
				finished = true
			}
		}
	}
	if err := stream.Err(); err != nil {
		return loop.ModelResponse{}, fmt.Errorf("openai: chat completions stream: %w", err)
	}
	if !finished {
		return loop.ModelResponse{}, fmt.Errorf("%w: chat completions: no finish reason", ErrIncomplete)
	}
	if len(acc.Choices) == 0 {
		return loop.ModelResponse{}, ErrNoChoice
	}
	return ChatResponse(acc.Choices[0].Message), nil
}

// TurnStream is Turn over a streamed response ("stream": true; the SDK's
// NewStreaming parses the typed events): response.output_text.delta and
// response.refusal.delta are emitted as text, a function call's
// response.output_item.added (call_id and name) and its
// response.function_call_arguments.delta events as loop.ToolCallDelta
// values, indexed in the order the calls appear. The response is the one
// response.completed carries, converted as Turn converts it; a stream
// that fails, reports response.failed, response.incomplete or an error
// event, or ends before response.completed is an error.
func (m *ResponsesModel) TurnStream(ctx context.Context, req loop.ModelRequest, emit func(loop.Delta)) (loop.ModelResponse, error) {
	params, err := m.Request(req)
	if err != nil {
		return loop.ModelResponse{}, err
	}
	stream := m.Client.Responses.NewStreaming(ctx, params, m.RequestOptions...)
	defer stream.Close()
	calls := map[string]int{} // function call item ID -> its index among the calls
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta", "response.refusal.delta":
			if ev.Delta != "" {
				emit(loop.Delta{Text: ev.Delta})
			}
		case "response.output_item.added":
			if ev.Item.Type != "function_call" {
				continue
			}
			i := len(calls)
			calls[ev.Item.ID] = i
			emit(loop.Delta{ToolCall: &loop.ToolCallDelta{Index: i, ID: ev.Item.CallID, Name: ev.Item.Name, Args: ev.Item.Arguments.OfString}})
		case "response.function_call_arguments.delta":
			i, ok := calls[ev.ItemID]
			if !ok || ev.Delta == "" {
				continue
			}
			emit(loop.Delta{ToolCall: &loop.ToolCallDelta{Index: i, Args: ev.Delta}})
		case "response.completed":
			resp := ev.Response
			return ResponsesResponse(&resp), nil
		case "response.failed":
			return loop.ModelResponse{}, fmt.Errorf("%w: %s: %s", ErrFailed, ev.Response.Error.Code, ev.Response.Error.Message)
		case "response.incomplete":
			return loop.ModelResponse{}, fmt.Errorf("%w: responses: response.incomplete (%s)", ErrIncomplete, ev.Response.IncompleteDetails.Reason)
		case "error":
			return loop.ModelResponse{}, fmt.Errorf("openai: responses stream: error event: %s: %s", ev.Code, ev.Message)
		}
	}
	if err := stream.Err(); err != nil {
		return loop.ModelResponse{}, fmt.Errorf("openai: responses stream: %w", err)
	}
	return loop.ModelResponse{}, fmt.Errorf("%w: responses: no response.completed", ErrIncomplete)
}
