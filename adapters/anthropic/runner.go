package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/refusal"
)

// RunnerTools are an Executor's tools as the SDK's anthropic.BetaTool, so
// the SDK's own tool runner (client.Beta.Messages.NewToolRunner) makes
// Gatehouse calls durably: each through the Executor's journal and guard,
// under the Executor's run ID and the tool_use block's ID, so the MCP
// server sees _meta.idempotencyKey "runID:toolu_...".
//
// The SDK hands BetaTool.Execute the input alone, not the tool_use ID, so
// RunnerTools reads the ID from the message the runner is answering: Bind
// the runner before its first step. Execute takes the first tool_use block
// of that message with its tool's name and the same input that no earlier
// Execute took; two calls with the same name and input in one message are
// each made once, though which of the two IDs answers which is not fixed.
// A call whose tool_use block cannot be found (no runner bound) runs
// nothing and is answered with an error result.
//
//	rt, err := anthropic.NewRunnerTools(ex)
//	runner := client.Beta.Messages.NewToolRunner(rt.Tools(), sdk.BetaToolRunnerParams{...})
//	rt.Bind(runner)
//	msg, err := runner.RunToCompletion(ctx)
//	if err == nil { err = rt.Err() } // run_busy or a journal failure
//
// What the runner journals is the tool calls only: the runner itself asks
// the model again when started again, and a model asked again gives new
// tool_use IDs. For a run that resumes without asking the model again,
// use Model with loop.Run, which journals the model's turns too.
type RunnerTools struct {
	ex    *loop.Executor
	tools []sdk.BetaTool

	mu     sync.Mutex
	source interface{ LastMessage() *sdk.BetaMessage }
	taken  map[string]bool // tool_use IDs whose call an Execute made
	err    error
}

// NewRunnerTools returns ex's tools for the SDK's tool runner. A tool the
// API would refuse (see ToolParams) is an error wrapping ErrInvalidTool.
func NewRunnerTools(ex *loop.Executor) (*RunnerTools, error) {
	r := &RunnerTools{ex: ex, taken: map[string]bool{}}
	for _, d := range ex.Tools() {
		if !ValidName(d.Name) {
			return nil, fmt.Errorf("%w: name %q is not ^[a-zA-Z0-9_-]{1,64}$", ErrInvalidTool, d.Name)
		}
		schema, note, err := betaInputSchema(d.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %w", ErrInvalidTool, d.Name, err)
		}
		r.tools = append(r.tools, &runnerTool{r: r, name: d.Name, desc: describe(d.Description, note), schema: schema})
	}
	return r, nil
}

// Tools returns the tools, in the Executor's order, for NewToolRunner.
func (r *RunnerTools) Tools() []sdk.BetaTool { return r.tools }

// Bind names the runner whose calls the tools answer: anything with the
// runner's LastMessage method (*anthropic.BetaToolRunner,
// *anthropic.BetaToolRunnerStreaming).
func (r *RunnerTools) Bind(runner interface{ LastMessage() *sdk.BetaMessage }) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.source = runner
}

// Err returns the errors that must stop the run, joined: run_busy (another
// process drives the same run) and a journal that cannot record. The
// runner cannot be stopped from inside a tool, so the call was answered
// with an error result; check Err after each runner step.
func (r *RunnerTools) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// callID finds the tool_use block an Execute answers and takes it.
func (r *RunnerTools) callID(name string, input json.RawMessage) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.source == nil {
		return "", false
	}
	msg := r.source.LastMessage()
	if msg == nil {
		return "", false
	}
	want := canonical(input)
	for _, b := range msg.Content {
		if b.Type != "tool_use" || b.Name != name || r.taken[b.ID] || b.ID == "" {
			continue
		}
		if bytes.Equal(canonical(b.Input), want) {
			r.taken[b.ID] = true
			return b.ID, true
		}
	}
	return "", false
}

// canonical is JSON as the runner hands it to Execute (json.Marshal of the
// block's raw input: compacted, HTML-escaped).
func canonical(b json.RawMessage) []byte {
	var c bytes.Buffer
	if json.Compact(&c, b) != nil {
		return b
	}
	var e bytes.Buffer
	json.HTMLEscape(&e, c.Bytes())
	return e.Bytes()
}

// runnerTool is one tool for the runner.
type runnerTool struct {
	r      *RunnerTools
	name   string
	desc   string
	schema sdk.BetaToolInputSchemaParam
}

func (t *runnerTool) Name() string                              { return t.name }
func (t *runnerTool) Description() string                       { return t.desc }
func (t *runnerTool) InputSchema() sdk.BetaToolInputSchemaParam { return t.schema }

// ErrNoToolUse is the error result of a call whose tool_use block the
// tools cannot find (no runner bound): it cannot be journaled, so it does
// not run.
var ErrNoToolUse = errors.New("anthropic: no tool_use block for this call (bind the runner): not run")

// Execute makes the call through the Executor. A failure or a refusal is
// returned as an error, which the runner sends as an is_error tool_result
// ("Error: " and the text the model reads, then the refusal's structured
// content as JSON).
func (t *runnerTool) Execute(ctx context.Context, input json.RawMessage) ([]sdk.BetaToolResultBlockParamContentUnion, error) {
	id, ok := t.r.callID(t.name, input)
	if !ok {
		return nil, ErrNoToolUse
	}
	o, err := t.r.ex.Call(ctx, loop.ToolCall{ID: id, Name: t.name, Args: input})
	if err != nil {
		t.r.mu.Lock()
		t.r.err = errors.Join(t.r.err, err)
		t.r.mu.Unlock()
	}
	texts := resultTexts(o)
	if o.Message.IsError || err != nil {
		if len(texts) == 0 && err != nil {
			texts = []string{err.Error()}
		}
		return nil, &ResultError{Outcome: o, text: joinLines(texts)}
	}
	out := make([]sdk.BetaToolResultBlockParamContentUnion, len(texts))
	for i, s := range texts {
		out[i] = sdk.BetaToolResultBlockParamContentUnion{OfText: &sdk.BetaTextBlockParam{Text: s}}
	}
	return out, nil
}

// ResultError is the error a runner tool returns for a call that failed
// or was refused: its text is what the model reads.
type ResultError struct {
	// Outcome is the call's outcome (its Code and ApprovalID say which
	// refusal).
	Outcome loop.Outcome
	text    string
}

// Error returns the text the model reads.
func (e *ResultError) Error() string { return e.text }

// Code returns the refusal's code ("" for a tool's own failure).
func (e *ResultError) Code() refusal.Code { return e.Outcome.Code }

func joinLines(s []string) string {
	var b bytes.Buffer
	for i, t := range s {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(t)
	}
	return b.String()
}
