package loop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
)

// An Executor makes a model's tool calls durably: each call goes through
// the journal and the guard under (RunID, the model's tool call ID), and
// carries "runID:toolCallID" to MCP servers as _meta.idempotencyKey. A
// call whose record exists is not made again: its recorded outcome is
// returned. Run uses one; an agent that drives its provider's API itself
// (the adapters under adapters/) uses one directly:
//
//	ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: runID, Journal: journal, Tools: tools})
//	outs, err := ex.CallAll(ctx, calls) // calls from the model's response, IDs as the provider gave them
//	for _, o := range outs {
//		// o.Message.Content is what the model reads; o.Result the MCP result
//	}
//
// Refusals (denied, call_limit, in_doubt, approval_required, ...) are
// outcomes the model reads, never errors: only run_busy (another executor
// is driving the same run) and a journal that cannot record are.
type Executor struct {
	opts  ExecutorOptions
	tools map[string]*Tool
	defs  []ToolDef
	guard policy.Guard
}

// ExecutorOptions configure an Executor.
type ExecutorOptions struct {
	// RunID names the run. Required.
	RunID string
	// Journal records every call. Required.
	Journal *durable.Journal
	// Tools the model may call; names must be unique.
	Tools []Tool
	// Guard decides every call (see package policy); nil allows all.
	Guard policy.Guard
	// Owner is the subject the run belongs to (journal records' owner).
	Owner string
}

// Outcome is what one tool call produced, ready for a provider's
// tool-result message.
type Outcome struct {
	// Message is the tool message the model reads: RoleTool, the call's
	// ID and name, the result as text, IsError for a failure or refusal.
	Message Message
	// Result is the MCP result Message was rendered from: the tool's own
	// result, or for a refusal the refusal's result (text "[code] ...",
	// structuredContent {"code", "retryable", ...}). It is nil when the
	// call failed with an error rather than a result.
	Result *mcp.CallToolResult
	// Code is the refusal code when the journal or the guard refused the
	// call ("" otherwise). A refusal made by a gateway upstream arrives as
	// the tool's result instead.
	Code refusal.Code
	// ApprovalID is set when the call waits for an operator's decision
	// (Code is approval_required): decide it, then call again with the
	// same ID to run it once (or read approval_denied).
	ApprovalID string
}

// NewExecutor checks the options and returns an Executor.
func NewExecutor(opts ExecutorOptions) (*Executor, error) {
	if opts.RunID == "" || opts.Journal == nil {
		return nil, fmt.Errorf("%w: RunID and Journal are required", ErrInvalidOptions)
	}
	e := &Executor{opts: opts, tools: make(map[string]*Tool, len(opts.Tools)), defs: make([]ToolDef, 0, len(opts.Tools)), guard: opts.Guard}
	for i := range opts.Tools {
		t := &opts.Tools[i]
		if t.Name == "" || t.Call == nil {
			return nil, fmt.Errorf("%w: tool %d needs a Name and a Call", ErrInvalidOptions, i)
		}
		if _, dup := e.tools[t.Name]; dup {
			return nil, fmt.Errorf("%w: two tools named %q", ErrInvalidOptions, t.Name)
		}
		e.tools[t.Name] = t
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		e.defs = append(e.defs, ToolDef{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	if e.guard == nil {
		e.guard = policy.AllowAll()
	}
	return e, nil
}

// Tools returns the definitions of the executor's tools, in the order
// given (an absent input schema is {"type":"object"}). The slice is the
// executor's: do not modify it.
func (e *Executor) Tools() []ToolDef { return e.defs }

// Tool returns the tool of that name.
func (e *Executor) Tool(name string) (Tool, bool) {
	t, ok := e.tools[name]
	if !ok {
		return Tool{}, false
	}
	return *t, true
}

// JournalID is the journal's tool call ID for a provider's call ID: the
// ID itself when it is printable ASCII of at most 128 bytes and does not
// start with the loop's reserved "turn-"; otherwise "id-" and 32 hex
// digits of its SHA-256, so any non-empty provider ID names one record.
func JournalID(id string) string {
	if usableID(id) {
		return id
	}
	h := sha256.Sum256([]byte(id))
	return "id-" + hex.EncodeToString(h[:16])
}

// CallAll makes the calls in parallel and returns their outcomes in call
// order. A refusal of one call never cancels its siblings; the error is
// the first of run_busy or a journal failure (joined), with every outcome
// still returned.
func (e *Executor) CallAll(ctx context.Context, calls []ToolCall) ([]Outcome, error) {
	return e.all(ctx, calls, JournalID)
}

// callAssigned is CallAll for Run, whose calls carry journal IDs already
// (the loop's own "turn-<n>-call-<i>" among them).
func (e *Executor) callAssigned(ctx context.Context, calls []ToolCall) ([]Outcome, error) {
	return e.all(ctx, calls, func(id string) string { return id })
}

func (e *Executor) all(ctx context.Context, calls []ToolCall, journalID func(string) string) ([]Outcome, error) {
	outs := make([]Outcome, len(calls))
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() { outs[i], errs[i] = e.call(ctx, c, journalID(c.ID)) })
	}
	wg.Wait()
	return outs, errors.Join(errs...)
}

// Call makes one call through the journal and the guard. The call's ID is
// the provider's (see JournalID); a call without an ID cannot be named in
// the journal and is answered with an error result without running. An
// unknown tool or arguments that are not a JSON object are answered the
// same way. The error is non-nil only for run_busy and for a journal that
// cannot record; the Outcome still says what the model should read.
func (e *Executor) Call(ctx context.Context, c ToolCall) (Outcome, error) {
	return e.call(ctx, c, JournalID(c.ID))
}

func (e *Executor) call(ctx context.Context, c ToolCall, journalID string) (Outcome, error) {
	msg := Message{Role: RoleTool, ToolCallID: c.ID, Name: c.Name}
	fail := func(text string) (Outcome, error) {
		msg.Content, msg.IsError = text, true
		return Outcome{Message: msg, Result: &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}}, nil
	}
	if c.ID == "" {
		return fail(fmt.Sprintf("the call of tool %q has no ID and cannot be journaled", c.Name))
	}
	t, ok := e.tools[c.Name]
	if !ok {
		return fail(fmt.Sprintf("unknown tool %q", c.Name))
	}
	args := c.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if !isObject(args) {
		return fail(fmt.Sprintf("invalid arguments for tool %q: not a JSON object", c.Name))
	}
	dc := durable.Call{RunID: e.opts.RunID, ToolCallID: journalID, Server: t.Server, Tool: t.Name,
		RemoteName: t.RemoteName, Args: args, Owner: e.opts.Owner}
	if t.Contract != nil {
		dc.Contract = t.Contract(ctx)
	}
	res, _, err := e.opts.Journal.Guarded(ctx, dc, e.guard, func(ctx context.Context, key string) (*mcp.CallToolResult, error) {
		res, err := t.Call(ctx, args, key)
		if err != nil {
			return res, &toolError{err}
		}
		return res, nil
	})
	if err == nil {
		msg.Content, msg.IsError = resultText(res), res != nil && res.IsError
		return Outcome{Message: msg, Result: res}, nil
	}
	if de, ok := refusal.As(err); ok {
		res := de.Result()
		msg.Content, msg.IsError = resultText(res), true
		out := Outcome{Message: msg, Result: res, Code: de.Code}
		if de.Code == refusal.ApprovalRequired {
			out.ApprovalID = de.ApprovalID
		}
		if de.Code == refusal.RunBusy {
			return out, fmt.Errorf("loop: call %s (%s): %w", c.ID, c.Name, err)
		}
		return out, nil
	}
	var te *toolError
	var re *durable.RecordedError
	switch {
	case errors.Is(err, durable.ErrInvalidCall):
		return fail(fmt.Sprintf("invalid arguments for tool %q: %v", c.Name, err))
	case errors.As(err, &te) || errors.As(err, &re):
		msg.Content, msg.IsError = "error: "+err.Error(), true
		return Outcome{Message: msg}, nil
	}
	return Outcome{Message: msg}, fmt.Errorf("loop: call %s (%s): %w", c.ID, c.Name, err)
}
