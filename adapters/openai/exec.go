package openai

import (
	"bytes"
	"context"
	"encoding/json"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// CallResponses makes the function calls among a Responses API output
// (Response.Output: its "function_call" items; other items are not
// Gatehouse's) through ex, in parallel, each under the run's ID and its
// call_id, and returns the "function_call_output" items to send back, in
// call order, with each call's Outcome (Outcome.ApprovalID says a call
// waits for an operator). A refusal, a tool error or an unknown tool is an
// output the model reads, never an error; the error is non-nil only for
// run_busy and a journal that cannot record (see loop.Executor.CallAll),
// and the items are returned even then.
func CallResponses(ctx context.Context, ex *loop.Executor, output []responses.ResponseOutputItemUnion) ([]responses.ResponseInputItemUnionParam, []loop.Outcome, error) {
	var calls []loop.ToolCall
	for _, it := range output {
		if it.Type == "function_call" {
			calls = append(calls, loop.ToolCall{ID: it.CallID, Name: it.Name, Args: argsOf(it.Arguments.OfString)})
		}
	}
	if len(calls) == 0 {
		return nil, nil, nil
	}
	outs, err := ex.CallAll(ctx, calls)
	items := make([]responses.ResponseInputItemUnionParam, len(outs))
	for i, o := range outs {
		items[i] = FunctionCallOutput(o)
	}
	return items, outs, err
}

// CallChat makes the tool calls of a Chat Completions assistant message
// (ChatCompletion.Choices[i].Message) through ex, in parallel, each under
// the run's ID and its tool call ID, and returns one tool message per
// call, in call order, with each call's Outcome. Errors as in
// CallResponses. A custom tool call is answered too (as an unknown tool,
// unless ex has a tool of its name), since the API wants every call
// answered.
func CallChat(ctx context.Context, ex *loop.Executor, msg oai.ChatCompletionMessage) ([]oai.ChatCompletionMessageParamUnion, []loop.Outcome, error) {
	calls := chatCalls(msg)
	if len(calls) == 0 {
		return nil, nil, nil
	}
	outs, err := ex.CallAll(ctx, calls)
	msgs := make([]oai.ChatCompletionMessageParamUnion, len(outs))
	for i, o := range outs {
		msgs[i] = ToolMessage(o)
	}
	return msgs, outs, err
}

func chatCalls(msg oai.ChatCompletionMessage) []loop.ToolCall {
	var calls []loop.ToolCall
	for _, tc := range msg.ToolCalls {
		switch tc.Type {
		case "custom":
			calls = append(calls, loop.ToolCall{ID: tc.ID, Name: tc.Custom.Name, Args: argsOf(tc.Custom.Input)})
		default:
			calls = append(calls, loop.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: argsOf(tc.Function.Arguments)})
		}
	}
	return calls
}

// FunctionCallOutput renders an outcome as the Responses API's
// function_call_output item for its call: the text the model reads (for a
// refusal "[code] message", for a tool error "error: ..."), then, when the
// result has structured content the text does not already hold (a
// refusal's {"code", "retryable", "approvalId", ...}, a tool's
// structuredContent), that content as JSON in a second input_text part.
func FunctionCallOutput(o loop.Outcome) responses.ResponseInputItemUnionParam {
	texts := outcomeTexts(o)
	var item responses.ResponseInputItemUnionParam
	if len(texts) == 1 {
		item = responses.ResponseInputItemParamOfFunctionCallOutput(texts[0])
	} else {
		parts := make(responses.ResponseFunctionCallOutputItemListParam, len(texts))
		for i, t := range texts {
			parts[i] = responses.ResponseFunctionCallOutputItemParamOfInputText(t)
		}
		item = responses.ResponseInputItemParamOfFunctionCallOutput(parts)
	}
	item.OfFunctionCallOutput.CallID = oai.String(o.Message.ToolCallID)
	return item
}

// ToolMessage renders an outcome as the Chat Completions tool message for
// its call, the texts as in FunctionCallOutput (two text parts when the
// structured content is added).
func ToolMessage(o loop.Outcome) oai.ChatCompletionMessageParamUnion {
	texts := outcomeTexts(o)
	if len(texts) == 1 {
		return oai.ToolMessage(texts[0], o.Message.ToolCallID)
	}
	parts := make([]oai.ChatCompletionContentPartTextParam, len(texts))
	for i, t := range texts {
		parts[i] = oai.ChatCompletionContentPartTextParam{Text: t}
	}
	return oai.ToolMessage(parts, o.Message.ToolCallID)
}

// outcomeTexts is what the model reads of an outcome: its text and, when
// the result carries structured content the text does not already hold,
// that content as JSON.
func outcomeTexts(o loop.Outcome) []string {
	texts := []string{o.Message.Content}
	if o.Result == nil || o.Result.StructuredContent == nil {
		return texts
	}
	b, err := json.Marshal(o.Result.StructuredContent)
	if err != nil {
		return texts
	}
	if sameJSON(b, []byte(o.Message.Content)) {
		return texts
	}
	return append(texts, string(b))
}

func sameJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// argsOf turns the arguments a model wrote into the call's arguments: a
// JSON object compacted, with '<', '>', '&', U+2028 and U+2029 inside its
// strings escaped as encoding/json writes them when the turn is recorded
// (so a live turn and its replay from the journal send the same bytes),
// nothing for an empty string, and anything else —
// not JSON, or JSON that is not an object — as a JSON string, which the
// executor answers as arguments that are not an object and which stays
// recordable in the journal. argsText gives the model's text back.
func argsOf(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	var buf bytes.Buffer
	if t := bytes.TrimLeft([]byte(s), " \t\r\n"); len(t) > 0 && t[0] == '{' && json.Compact(&buf, []byte(s)) == nil {
		var esc bytes.Buffer
		json.HTMLEscape(&esc, buf.Bytes())
		return esc.Bytes()
	}
	b, _ := json.Marshal(s)
	return b
}

// argsText is the inverse of argsOf: the arguments as the model wrote
// them.
func argsText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
