package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// ErrIncomplete is wrapped by TurnStream's error when the stream ends
// cleanly before message_stop: the reply may be missing blocks or the end
// of one. loop.Run records no response for such a turn.
var ErrIncomplete = errors.New("anthropic: the stream ended before message_stop")

var _ loop.StreamModel = (*Model)(nil)

// TurnStream is Turn over a streamed reply ("stream": true; the SDK's
// NewStreaming parses the server-sent events and sdk.Message.Accumulate
// builds the reply): each text_delta is emitted as text, a tool_use
// block's start (its ID and name) and each input_json_delta as a
// loop.ToolCallDelta, indexed in the order the tool_use blocks come. Once
// message_stop has arrived the accumulated reply is converted as Turn
// converts it (see Response), each tool_use input being the one streamed,
// compacted as the API sends it whole ("{}" when none was; not JSON is an
// error); a stream that fails, or ends before message_stop, is an error
// (ErrIncomplete when it ended cleanly).
func (m *Model) TurnStream(ctx context.Context, req loop.ModelRequest, emit func(loop.Delta)) (loop.ModelResponse, error) {
	if m.Client == nil {
		return loop.ModelResponse{}, errors.New("anthropic: Model.Client is nil")
	}
	params, err := Request(m.Params, req)
	if err != nil {
		return loop.ModelResponse{}, err
	}
	stream := m.Client.Messages.NewStreaming(ctx, params, m.Options...)
	defer stream.Close()
	var (
		msg     sdk.Message
		started bool
		stopped bool
		calls   = map[int64]int{} // content block index -> its place among the tool_use blocks
		inputs  []string          // each tool_use block's input as streamed
	)
	// startBlock tells a block's start, as accumulated: a tool_use block's
	// ID and name (and its input when it starts with more than {}), a
	// text block's text when it starts with some.
	startBlock := func(index int64, b sdk.ContentBlockUnion) {
		switch b.Type {
		case "tool_use":
			i := len(calls)
			calls[index] = i
			d := &loop.ToolCallDelta{Index: i, ID: b.ID, Name: b.Name}
			inputs = append(inputs, "")
			if in := string(b.Input); in != "{}" {
				d.Args = in
				inputs[i] = in
			}
			emit(loop.Delta{ToolCall: d})
		case "text":
			if b.Text != "" {
				emit(loop.Delta{Text: b.Text})
			}
		}
	}
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return loop.ModelResponse{}, fmt.Errorf("anthropic: messages stream: %w", err)
		}
		switch ev.Type {
		case "message_start":
			if started {
				return loop.ModelResponse{}, fmt.Errorf("anthropic: messages stream: a second message_start")
			}
			started = true
			// The API starts with no content; any it sends is told too.
			for i, b := range msg.Content {
				startBlock(int64(i), b)
			}
		case "content_block_start":
			startBlock(ev.Index, msg.Content[ev.Index]) // Accumulate checked the index
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				// Only a text block's text is the turn's (Accumulate adds
				// it to a block of any type).
				if ev.Delta.Text != "" && msg.Content[ev.Index].Type == "text" {
					emit(loop.Delta{Text: ev.Delta.Text})
				}
			case "input_json_delta":
				if i, ok := calls[ev.Index]; ok && ev.Delta.PartialJSON != "" {
					inputs[i] += ev.Delta.PartialJSON
					emit(loop.Delta{ToolCall: &loop.ToolCallDelta{Index: i, Args: ev.Delta.PartialJSON}})
				}
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		return loop.ModelResponse{}, fmt.Errorf("anthropic: messages stream: %w", err)
	}
	if !stopped {
		return loop.ModelResponse{}, ErrIncomplete
	}
	// Each tool_use input is the one streamed (what OnDelta saw), compact;
	// "{}" when none was.
	for idx, i := range calls {
		b := &msg.Content[idx]
		in := inputs[i]
		if in == "" {
			in = "{}"
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(in)); err != nil {
			return loop.ModelResponse{}, fmt.Errorf("anthropic: messages stream: tool_use %s: input is not JSON: %w", b.ID, err)
		}
		b.Input = buf.Bytes()
	}
	return Response(&msg)
}
