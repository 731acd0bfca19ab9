package eino

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/cloudwego/eino/schema"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// ErrIncomplete is wrapped by TurnStream's error when the chat model's
// stream ends before a chunk with a finish reason
// (ResponseMeta.FinishReason): the message may be missing its end.
// loop.Run records no response for such a turn.
var ErrIncomplete = errors.New("eino: the stream ended before a finish reason")

var _ loop.StreamModel = (*Model)(nil)

// TurnStream is Turn over the chat model's Stream: each chunk's content
// is emitted as text, each tool call chunk as a loop.ToolCallDelta (its
// Index; a chunk without one is a call of its own). The turn's message is
// the chunks concatenated (schema.ConcatMessages), returned once a chunk
// carried a finish reason and the stream ended; a stream that fails, or
// ends without a finish reason (ErrIncomplete), is an error. A chat model
// whose stream reports no finish reason therefore cannot stream a loop
// turn: leave loop.Options.OnDelta unset for it.
func (m *Model) TurnStream(ctx context.Context, req loop.ModelRequest, emit func(loop.Delta)) (loop.ModelResponse, error) {
	cm, msgs, opts, err := m.prepare(req)
	if err != nil {
		return loop.ModelResponse{}, err
	}
	sr, err := cm.Stream(ctx, msgs, opts...)
	if err != nil {
		return loop.ModelResponse{}, fmt.Errorf("eino: stream: %w", err)
	}
	defer sr.Close()
	var (
		chunks    []*schema.Message
		finished  bool
		unindexed int // calls seen without an Index
		indexed   = map[int]bool{}
	)
	for {
		c, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return loop.ModelResponse{}, fmt.Errorf("eino: stream: %w", err)
		}
		if c == nil {
			continue
		}
		chunks = append(chunks, c)
		if c.Content != "" {
			emit(loop.Delta{Text: c.Content})
		}
		for _, tc := range c.ToolCalls {
			var i int
			if tc.Index != nil {
				i = *tc.Index
				indexed[i] = true
			} else {
				i = len(indexed) + unindexed
				unindexed++
			}
			emit(loop.Delta{ToolCall: &loop.ToolCallDelta{Index: i, ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments}})
		}
		if c.ResponseMeta != nil && c.ResponseMeta.FinishReason != "" {
			finished = true
		}
	}
	if !finished {
		return loop.ModelResponse{}, ErrIncomplete
	}
	out, err := schema.ConcatMessages(chunks)
	if err != nil {
		return loop.ModelResponse{}, fmt.Errorf("eino: stream: %w", err)
	}
	return loop.ModelResponse{Text: out.Content, ToolCalls: ToolCalls(out)}, nil
}
