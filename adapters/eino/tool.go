package eino

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// ToolInfo returns eino's description of a tool: its name, description and
// input schema carried whole (see the package documentation), but for a
// top-level oneOf, anyOf, allOf, enum or not, which OpenAI and Anthropic
// refuse: that is merged into one object schema by toolset.ProviderSchema,
// whose note on the alternatives is appended to the description. It fails
// only for a schema that is not a JSON object (ErrSchema).
func ToolInfo(d loop.ToolDef) (*schema.ToolInfo, error) {
	raw, note := providerSchema(d.InputSchema)
	js, err := jsonSchema(raw)
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", d.Name, err)
	}
	return &schema.ToolInfo{Name: d.Name, Desc: describe(d.Description, note), ParamsOneOf: schema.NewParamsOneOfByJSONSchema(js)}, nil
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

// ToolInfos returns the ToolInfo of each definition, in order: what a
// model.ToolCallingChatModel's WithTools takes.
func ToolInfos(defs []loop.ToolDef) ([]*schema.ToolInfo, error) {
	out := make([]*schema.ToolInfo, len(defs))
	for i, d := range defs {
		ti, err := ToolInfo(d)
		if err != nil {
			return nil, err
		}
		out[i] = ti
	}
	return out, nil
}

// Tool is an executor's tool as an eino tool.InvokableTool. Its calls go
// through the executor: journaled under the executor's RunID and the tool
// call's ID, with "runID:callID" as the MCP server's _meta.idempotencyKey.
type Tool struct {
	ex  *loop.Executor
	def loop.ToolDef
}

var _ tool.InvokableTool = (*Tool)(nil)

// Tools returns one Tool per tool of the executor, in its order, typed for
// compose.ToolsNodeConfig.Tools (and the react agent's tools config). The
// schemas are checked here, so Info does not fail later.
func Tools(ex *loop.Executor) ([]tool.BaseTool, error) {
	defs := ex.Tools()
	out := make([]tool.BaseTool, len(defs))
	for i, d := range defs {
		if _, err := jsonSchema(d.InputSchema); err != nil {
			return nil, fmt.Errorf("tool %q: %w", d.Name, err)
		}
		out[i] = &Tool{ex: ex, def: d}
	}
	return out, nil
}

// Info returns the tool's ToolInfo (a fresh value on every call: eino's
// models may sort a schema's fields in place).
func (t *Tool) Info(context.Context) (*schema.ToolInfo, error) { return ToolInfo(t.def) }

type callOptions struct{ callID string }

// WithCallID names the tool call InvokableRun makes, for a call made
// outside a compose.ToolsNode (which puts the model's call ID in the
// context, where InvokableRun reads it with compose.GetToolCallID).
func WithCallID(id string) tool.Option {
	return tool.WrapImplSpecificOptFn(func(o *callOptions) { o.callID = id })
}

// InvokableRun makes the call through the executor and returns the text
// the model reads. The call's ID is WithCallID's, else the one a
// ToolsNode puts in the context (compose.GetToolCallID): eino's own
// schema.ToolCall.ID, the model's ID for the call. A call without an ID
// cannot be journaled and is answered with an error text, not run.
//
// Refusals and tool errors are answers, not errors: the model reads them
// (see Text). The error is non-nil only for run_busy (another executor is
// driving the same run) and a journal that cannot record; a ToolsNode then
// fails the graph.
func (t *Tool) InvokableRun(ctx context.Context, args string, opts ...tool.Option) (string, error) {
	o := tool.GetImplSpecificOptions(&callOptions{}, opts...)
	id := o.callID
	if id == "" {
		id = compose.GetToolCallID(ctx)
	}
	out, err := t.ex.Call(ctx, loop.ToolCall{ID: id, Name: t.def.Name, Args: argsJSON(args)})
	return Text(out), err
}

// Text is what the model reads of an outcome: the result's text, and for
// an error result with structured content (a refusal: {"code",
// "retryable", "approvalId", "retryAfterMs"}) that content as JSON on the
// line after it, so the model (and whoever reads the conversation) has
// the code and the approval's ID.
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

// ToolCalls returns the tool calls of an assistant message as the
// executor takes them, IDs as the model gave them.
func ToolCalls(msg *schema.Message) []loop.ToolCall {
	if msg == nil {
		return nil
	}
	out := make([]loop.ToolCall, len(msg.ToolCalls))
	for i, c := range msg.ToolCalls {
		out[i] = loop.ToolCall{ID: c.ID, Name: c.Function.Name, Args: argsJSON(c.Function.Arguments)}
	}
	return out
}

// ToolMessage returns the tool message answering the call o answers.
func ToolMessage(o loop.Outcome) *schema.Message {
	return schema.ToolMessage(Text(o), o.Message.ToolCallID, schema.WithToolName(o.Message.Name))
}

// Execute makes the tool calls of an assistant message through the
// executor, in parallel, and returns their tool messages in call order
// (what a compose.ToolsNode would return), with the outcomes they were
// rendered from (approval IDs, refusal codes). A refusal of one call
// never cancels its siblings. The error is the first of run_busy or a
// journal failure, with every message still returned.
func Execute(ctx context.Context, ex *loop.Executor, msg *schema.Message) ([]*schema.Message, []loop.Outcome, error) {
	outs, err := ex.CallAll(ctx, ToolCalls(msg))
	msgs := make([]*schema.Message, len(outs))
	for i, o := range outs {
		msgs[i] = ToolMessage(o)
	}
	return msgs, outs, err
}

// argsJSON returns a model's arguments text as JSON the journal can hold:
// the text itself when it is JSON, else the text as a JSON string (which
// the executor answers as arguments that are not an object, for the model
// to read and correct).
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
