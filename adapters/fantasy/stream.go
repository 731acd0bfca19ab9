package fantasy

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"charm.land/fantasy"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// ErrIncomplete is wrapped by TurnStream's error when the language
// model's stream ends without its finish part: the response may be
// missing its end. loop.Run records no response for such a turn.
var ErrIncomplete = errors.New("fantasy: the stream ended before its finish part")

var _ loop.StreamModel = (*Model)(nil)

// TurnStream is Turn over the language model's Stream: text_delta parts
// are emitted as text (a newline first when a later text block follows
// an earlier one, as Turn joins them), tool_input_start (the call's ID
// and name) and tool_input_delta parts as loop.ToolCallDelta values,
// indexed in the order the calls start; a tool_call part without a start
// before it is emitted whole. The response is the text blocks joined and
// the client-executed tool_call parts, returned once the finish part has
// arrived and the stream ended; an error part, or a stream that ends
// without a finish part (ErrIncomplete), is an error.
func (m *Model) TurnStream(ctx context.Context, req loop.ModelRequest, emit func(loop.Delta)) (loop.ModelResponse, error) {
	call, err := m.call(req)
	if err != nil {
		return loop.ModelResponse{}, err
	}
	stream, err := m.lm.Stream(ctx, call)
	if err != nil {
		return loop.ModelResponse{}, fmt.Errorf("fantasy: stream: %w", err)
	}
	var (
		texts    []string // finished text blocks, non-empty
		active   = map[string]*strings.Builder{}
		started  = map[string]bool{} // text blocks whose first text was emitted
		calls    = map[string]int{}  // tool call ID -> its index
		resp     loop.ModelResponse
		finished bool
	)
	wrote := false // some text was emitted: a new block starts with "\n"
	for part := range stream {
		switch part.Type {
		case fantasy.StreamPartTypeTextStart:
			active[part.ID] = &strings.Builder{}
		case fantasy.StreamPartTypeTextDelta:
			if part.Delta == "" {
				continue
			}
			b, ok := active[part.ID]
			if !ok {
				b = &strings.Builder{}
				active[part.ID] = b
			}
			if !started[part.ID] && wrote {
				emit(loop.Delta{Text: "\n"})
			}
			started[part.ID] = true
			wrote = true
			b.WriteString(part.Delta)
			emit(loop.Delta{Text: part.Delta})
		case fantasy.StreamPartTypeTextEnd:
			if b, ok := active[part.ID]; ok && b.Len() > 0 {
				texts = append(texts, b.String())
			}
			delete(active, part.ID)
		case fantasy.StreamPartTypeToolInputStart:
			if part.ProviderExecuted {
				continue
			}
			i := len(calls)
			calls[part.ID] = i
			emit(loop.Delta{ToolCall: &loop.ToolCallDelta{Index: i, ID: part.ID, Name: part.ToolCallName}})
		case fantasy.StreamPartTypeToolInputDelta:
			if i, ok := calls[part.ID]; ok && part.Delta != "" {
				emit(loop.Delta{ToolCall: &loop.ToolCallDelta{Index: i, Args: part.Delta}})
			}
		case fantasy.StreamPartTypeToolCall:
			if part.ProviderExecuted {
				continue
			}
			if _, ok := calls[part.ID]; !ok {
				i := len(calls)
				calls[part.ID] = i
				emit(loop.Delta{ToolCall: &loop.ToolCallDelta{Index: i, ID: part.ID, Name: part.ToolCallName, Args: part.ToolCallInput}})
			}
			resp.ToolCalls = append(resp.ToolCalls, loop.ToolCall{ID: part.ID, Name: part.ToolCallName, Args: argsJSON(part.ToolCallInput)})
		case fantasy.StreamPartTypeFinish:
			finished = true
		case fantasy.StreamPartTypeError:
			if part.Error == nil {
				return loop.ModelResponse{}, errors.New("fantasy: stream: an error part without an error")
			}
			return loop.ModelResponse{}, fmt.Errorf("fantasy: stream: %w", part.Error)
		}
	}
	if err := ctx.Err(); err != nil {
		return loop.ModelResponse{}, fmt.Errorf("fantasy: stream: %w", err)
	}
	if !finished {
		return loop.ModelResponse{}, ErrIncomplete
	}
	for _, b := range active { // blocks the stream never ended
		if b.Len() > 0 {
			return loop.ModelResponse{}, fmt.Errorf("%w: a text block was not ended", ErrIncomplete)
		}
	}
	resp.Text = strings.Join(texts, "\n")
	return resp, nil
}
