package fantasy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"charm.land/fantasy"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// AgentTool is an executor's tool as a fantasy.AgentTool. Its calls go
// through the executor: journaled under the executor's RunID and
// fantasy's ToolCall.ID (the model's ID for the call), with "runID:callID"
// as the MCP server's _meta.idempotencyKey.
type AgentTool struct {
	ex   *loop.Executor
	info fantasy.ToolInfo
	opts fantasy.ProviderOptions
}

var _ fantasy.AgentTool = (*AgentTool)(nil)

// Tools returns one AgentTool per tool of the executor, in its order, for
// fantasy.WithTools. Each tool's schema is flattened to what fantasy's
// ToolInfo keeps (see the package documentation); Tools fails only for a
// schema that is not a JSON object (ErrSchema).
func Tools(ex *loop.Executor) ([]fantasy.AgentTool, error) {
	defs := ex.Tools()
	out := make([]fantasy.AgentTool, len(defs))
	for i, d := range defs {
		info, err := ToolInfo(d)
		if err != nil {
			return nil, err
		}
		out[i] = &AgentTool{ex: ex, info: info}
	}
	return out, nil
}

// ToolInfo returns fantasy's description of a tool: its properties and
// required arguments, with local $refs inlined and a top-level
// oneOf/anyOf/allOf merged by toolset.ProviderSchema (the forms a oneOf
// or anyOf allows are said after the description). Parallel is set: the executor journals each
// call on its own.
func ToolInfo(d loop.ToolDef) (fantasy.ToolInfo, error) {
	root, err := decodeSchema(d.InputSchema)
	if err != nil {
		return fantasy.ToolInfo{}, fmt.Errorf("tool %q: %w", d.Name, err)
	}
	f := flatten(root)
	return fantasy.ToolInfo{Name: d.Name, Description: describe(d.Description, f.note), Parameters: f.properties, Required: f.required, Parallel: true}, nil
}

// Info returns the tool's ToolInfo, its Parameters a fresh copy on every
// call: fantasy's agent normalizes the schema it builds from them in
// place, and agents may share the tool.
func (t *AgentTool) Info() fantasy.ToolInfo {
	info := t.info
	info.Parameters = deepCopy(t.info.Parameters).(map[string]any)
	info.Required = append([]string(nil), t.info.Required...)
	return info
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// ProviderOptions returns the options set with SetProviderOptions.
func (t *AgentTool) ProviderOptions() fantasy.ProviderOptions { return t.opts }

// SetProviderOptions sets provider options for the tool's definition.
func (t *AgentTool) SetProviderOptions(opts fantasy.ProviderOptions) { t.opts = opts }

// Run makes the call through the executor under call.ID and returns what
// the model reads (see Response). Refusals and tool errors are responses
// with IsError, not errors, so the agent goes on; the error is non-nil
// only for run_busy (another executor is driving the same run) and a
// journal that cannot record, which fantasy's agent treats as fatal to the
// step.
func (t *AgentTool) Run(ctx context.Context, call fantasy.ToolCall) (fantasy.ToolResponse, error) {
	out, err := t.ex.Call(ctx, loop.ToolCall{ID: call.ID, Name: t.info.Name, Args: argsJSON(call.Input)})
	return Response(out), err
}

// Text is what the model reads of an outcome: the result's text, and for
// an error result with structured content (a refusal: {"code",
// "retryable", "approvalId", "retryAfterMs"}) that content as JSON on the
// line after it.
func Text(o loop.Outcome) string {
	text := o.Message.Content
	if o.Result == nil || !o.Message.IsError || o.Result.StructuredContent == nil {
		return text
	}
	b, err := json.Marshal(o.Result.StructuredContent)
	if err != nil {
		return text
	}
	return text + "\n" + string(b)
}

// Response returns an outcome as fantasy's tool response: Text, IsError
// for a tool error or a refusal, and the result's structured content as
// JSON in Metadata (fantasy's client metadata: kept with the tool result
// for the application, not sent to the model).
func Response(o loop.Outcome) fantasy.ToolResponse {
	r := fantasy.NewTextResponse(Text(o))
	r.IsError = o.Message.IsError
	if o.Result != nil && o.Result.StructuredContent != nil {
		r = fantasy.WithResponseMetadata(r, o.Result.StructuredContent)
	}
	return r
}

// ToolCalls returns the client-executed tool calls of a response's
// content as the executor takes them, IDs as the model gave them.
func ToolCalls(content fantasy.ResponseContent) []loop.ToolCall {
	var out []loop.ToolCall
	for _, c := range content.ToolCalls() {
		if c.ProviderExecuted {
			continue
		}
		out = append(out, loop.ToolCall{ID: c.ToolCallID, Name: c.ToolName, Args: argsJSON(c.Input)})
	}
	return out
}

// ResultPart returns the tool result part answering the call o answers:
// text, or for an error or refusal an error output, with the structured
// content as ClientMetadata.
func ResultPart(o loop.Outcome) fantasy.ToolResultPart {
	text := Text(o)
	p := fantasy.ToolResultPart{ToolCallID: o.Message.ToolCallID, Output: fantasy.ToolResultOutputContentText{Text: text}}
	if o.Message.IsError {
		p.Output = fantasy.ToolResultOutputContentError{Error: errors.New(text)}
	}
	if o.Result != nil && o.Result.StructuredContent != nil {
		if b, err := json.Marshal(o.Result.StructuredContent); err == nil {
			p.ClientMetadata = string(b)
		}
	}
	return p
}

// Execute makes a response's tool calls through the executor, in
// parallel, and returns the tool message answering them (one result part
// per call, in call order) for the next fantasy.Call's prompt, with the
// outcomes (codes, approval IDs). A refusal of one call never cancels its
// siblings. The error is the first of run_busy or a journal failure, with
// the message still returned.
func Execute(ctx context.Context, ex *loop.Executor, content fantasy.ResponseContent) (fantasy.Message, []loop.Outcome, error) {
	outs, err := ex.CallAll(ctx, ToolCalls(content))
	msg := fantasy.Message{Role: fantasy.MessageRoleTool}
	for _, o := range outs {
		msg.Content = append(msg.Content, ResultPart(o))
	}
	return msg, outs, err
}

// argsJSON returns a model's arguments text as JSON the journal can hold:
// the text itself when it is JSON, else the text as a JSON string (which
// the executor answers as arguments that are not an object).
func argsJSON(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// describe is a tool's description with a schema note after it.
func describe(desc, note string) string {
	switch {
	case note == "":
		return desc
	case desc == "":
		return note
	}
	return desc + "\n\n" + note
}
