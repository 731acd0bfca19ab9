package anthropic

import (
	"context"
	"encoding/json"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// ToolCalls returns the client tool calls of an assistant message: its
// tool_use blocks, in order, with the API's IDs ("toolu_...") and inputs as
// given. Server tool uses and other blocks are left out, and so is every
// call of a reply that did not stop for tool use (stop_reason other than
// tool_use: a reply cut at max_tokens may end in an incomplete input, and
// one the model refused is over), as the SDK's tool runner does.
func ToolCalls(msg *sdk.Message) []loop.ToolCall {
	if msg == nil || msg.StopReason != sdk.StopReasonToolUse {
		return nil
	}
	var calls []loop.ToolCall
	for _, b := range msg.Content {
		if b.Type == "tool_use" {
			calls = append(calls, loop.ToolCall{ID: b.ID, Name: b.Name, Args: b.Input})
		}
	}
	return calls
}

// ToolResults makes the tool calls of an assistant message through ex (in
// parallel, each once: under ex's run ID and the tool_use block's ID, so
// _meta.idempotencyKey is "runID:toolu_...") and returns the user message
// that answers them: one tool_result block per tool_use block, in the
// message's order, as the API requires for parallel tool use. It also
// returns the outcomes, in the same order.
//
// A failure or a refusal is a tool_result with is_error the model reads:
// for a refusal the text "[code] message" and, in a second text block, the
// refusal's structured content as JSON (it carries "approvalId" for
// approval_required; the Outcome's ApprovalID says the same). The error is
// non-nil only for run_busy (another process drives the same run) and a
// journal that cannot record; the message is complete even then.
//
// A message without tool_use blocks gives ok false and no message.
func ToolResults(ctx context.Context, ex *loop.Executor, msg *sdk.Message) (results sdk.MessageParam, outcomes []loop.Outcome, ok bool, err error) {
	calls := ToolCalls(msg)
	if len(calls) == 0 {
		return sdk.MessageParam{}, nil, false, nil
	}
	if len(calls) == 1 {
		// One call: no goroutine to hand it to (CallAll's parallelism is for
		// several).
		var o loop.Outcome
		o, err = ex.Call(ctx, calls[0])
		outcomes = []loop.Outcome{o}
	} else {
		outcomes, err = ex.CallAll(ctx, calls)
	}
	blocks := make([]sdk.ContentBlockParamUnion, len(outcomes))
	for i, o := range outcomes {
		blocks[i] = sdk.ContentBlockParamUnion{OfToolResult: ToolResultBlock(o)}
	}
	return sdk.NewUserMessage(blocks...), outcomes, true, err
}

// ToolResultBlock renders one outcome as a tool_result block: the text the
// model reads (Outcome.Message.Content), is_error for a failure or a
// refusal, and for a refusal its structured content as a second text block
// of JSON.
func ToolResultBlock(o loop.Outcome) *sdk.ToolResultBlockParam {
	texts := resultTexts(o)
	content := make([]sdk.ToolResultBlockParamContentUnion, len(texts))
	for i, t := range texts {
		content[i] = sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: t}}
	}
	b := &sdk.ToolResultBlockParam{ToolUseID: o.Message.ToolCallID, Content: content}
	if o.Message.IsError {
		b.IsError = sdk.Bool(true)
	}
	return b
}

// resultTexts is the text blocks of an outcome's tool_result: its text,
// then for a refusal the structured content as JSON. An empty text is left
// out (the API refuses empty text blocks) unless it is the only one.
func resultTexts(o loop.Outcome) []string {
	var texts []string
	if o.Message.Content != "" {
		texts = append(texts, o.Message.Content)
	}
	if o.Code != "" && o.Result != nil && o.Result.StructuredContent != nil {
		if b, err := json.Marshal(o.Result.StructuredContent); err == nil {
			texts = append(texts, string(b))
		}
	}
	if len(texts) == 0 {
		return nil
	}
	return texts
}
