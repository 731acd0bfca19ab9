package loop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/skills"
)

// defaultMaxTurns is the turn cap when Options.MaxTurns is zero.
const defaultMaxTurns = 16

// turnTool is the tool name under which model turns are journaled (with
// an empty server). Tool call IDs of turns are "turn-<n>" (n from 0), and
// "turn-<n>.retry-<a>" for the a-th retry of a turn whose first attempt is
// in doubt.
const turnTool = "model.turn"

// Role is the author of a Message.
type Role string

// Message roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of a run's conversation. The system prompt is not a
// message: it travels in ModelRequest.System.
type Message struct {
	Role Role `json:"role"`
	// Content is the text: the prompt, the model's text or a tool result.
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message makes.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// ToolCallID and Name say which call a tool message answers.
	ToolCallID string `json:"toolCallId,omitempty"`
	Name       string `json:"name,omitempty"`
	// IsError marks a tool result that is an error or a refusal.
	IsError bool `json:"isError,omitempty"`
}

// ToolCall is one call a model asks for.
type ToolCall struct {
	// ID is the model's ID for the call; it may be empty, in which case
	// the loop gives it one ("turn-<n>-call-<i>").
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// ToolDef describes a tool to the model.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// ModelRequest is what a model sees on one turn.
type ModelRequest struct {
	System   string
	Messages []Message
	Tools    []ToolDef
}

// ModelResponse is a model's answer on one turn: text, tool calls, or
// both. A response without tool calls ends the run.
type ModelResponse struct {
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
}

// Model is a language model (or anything that answers like one).
type Model interface {
	// Turn returns the model's next response. It must not modify req.
	Turn(ctx context.Context, req ModelRequest) (ModelResponse, error)
}

// ModelFunc adapts a function to Model.
type ModelFunc func(ctx context.Context, req ModelRequest) (ModelResponse, error)

// Turn calls f(ctx, req).
func (f ModelFunc) Turn(ctx context.Context, req ModelRequest) (ModelResponse, error) {
	return f(ctx, req)
}

// Delta is a piece of a model turn as it streams: text the model
// appended to its answer, or a piece of one of its tool calls. The text
// deltas of a turn, concatenated, are its response's Text; the Args
// pieces of a call, concatenated, are the call's arguments as the model
// wrote them.
type Delta struct {
	// Turn is the turn's number (from 0), as in the journal's "turn-<n>".
	Turn int
	// Text is text appended to the answer ("" in a tool call's delta).
	Text string
	// ToolCall, when set, is a piece of a tool call instead.
	ToolCall *ToolCallDelta
}

// ToolCallDelta is a piece of a tool call as it streams.
type ToolCallDelta struct {
	// Index is the call's place among the turn's calls (from 0).
	Index int
	// ID and Name are the call's, set on its first delta (when the
	// provider sends them then) and empty after.
	ID   string
	Name string
	// Args is a fragment of the call's arguments.
	Args string
}

// StreamModel is a Model that can stream its turns. Run calls TurnStream
// instead of Turn when Options.OnDelta is set.
type StreamModel interface {
	Model
	// TurnStream is Turn, calling emit with each piece of the response as
	// it arrives (from the calling goroutine; Turn in the deltas is left
	// to Run). It returns the whole response once the provider has sent
	// all of it, and an error, never a partial response, when the stream
	// fails or ends before the response is complete.
	TurnStream(ctx context.Context, req ModelRequest, emit func(Delta)) (ModelResponse, error)
}

// Tool is a tool the model may call: an MCP server's tool (see
// SessionTools and ToolsetTools) or any Go function.
type Tool struct {
	// Name is the name the model calls (for MCP tools, the projected
	// name). Names must be unique among a run's tools.
	Name        string
	Description string
	// InputSchema is the JSON Schema of the arguments; nil means
	// {"type":"object"}.
	InputSchema json.RawMessage
	// Server is the MCP server offering the tool ("" for a Go tool).
	Server string
	// RemoteName is the tool's name on its server (informational).
	RemoteName string
	// Contract, when set, returns the fingerprint of the tool's trusted
	// contract now (durable.Call.Contract), asked before each call: an
	// approval of a call is bound to it, so a call made after the tool's
	// contract changed (and the change was trusted) asks a new approval
	// instead of running on one given under the old contract.
	// ToolsetTools sets it; nil, or "", binds nothing.
	Contract func(ctx context.Context) string
	// Call performs the call. idempotencyKey is "runID:toolCallID"; an MCP
	// tool sends it as _meta.idempotencyKey so the server can dedup too.
	// A result with IsError is a failure the model is told about and that
	// is replayed as such. An error follows the journal's rules (see
	// durable.Journal.Do): a JSON-RPC error answered by the server, or an
	// error marked with durable.Failed, is a known failure (the model reads
	// "error: ..."); any other error leaves the outcome unknown, and the
	// model reads an in_doubt refusal.
	Call func(ctx context.Context, args json.RawMessage, idempotencyKey string) (*mcp.CallToolResult, error)
}

// Options configure Run.
type Options struct {
	// RunID names the run; the same RunID resumes it. Required.
	RunID string
	// Journal records every model turn and tool call. Required.
	Journal *durable.Journal
	// Model answers turns. Required.
	Model Model
	// Tools the model may call.
	Tools []Tool
	// Guard decides every tool call (see package policy); nil allows all.
	Guard policy.Guard
	// Prompt is the user's message that starts the run.
	Prompt string
	// System is the system prompt.
	System string
	// MaxTurns caps the model turns; 0 means 16.
	MaxTurns int
	// Owner is the subject the run belongs to (journal records' owner).
	Owner string
	// Skills, when set and not empty, are the plugin skills the model may
	// read: their index is appended to System (see SkillsSystemPrompt) and
	// the two tools of SkillTools are added to Tools.
	Skills *skills.Catalog
	// OnDelta, when set and Model is a StreamModel, is called with each
	// piece of a live turn's response as the model streams it, in order.
	// The turn is journaled only once complete, as without streaming: a
	// turn that fails or is cut mid-stream records no response, and the
	// resume asks the model again (streaming it again from the start). A
	// replayed turn is not streamed. OnDelta runs on the model's
	// goroutine: it should return quickly.
	OnDelta func(Delta)
}

// Result is what a run produced so far.
type Result struct {
	// Text is the model's final text (empty while paused).
	Text string
	// Messages is the conversation: the prompt, then each assistant
	// message and the tool results it got.
	Messages []Message
	// Turns is the number of model turns taken (replayed or live).
	Turns int
	// ReplayedTurns is how many of them were replayed from the journal
	// without calling the model.
	ReplayedTurns int
	// Paused says the run waits for approvals; call Run again with the
	// same options once they are decided.
	Paused bool
	// ApprovalIDs are the pending approvals the run waits for.
	ApprovalIDs []string
}

// Errors returned by Run.
var (
	// ErrInvalidOptions: a required option is missing or tools are
	// ill-formed.
	ErrInvalidOptions = errors.New("loop: invalid options")
	// ErrMaxTurns: the model was still calling tools after MaxTurns turns.
	ErrMaxTurns = errors.New("loop: too many turns")
)

// maxTurnRetries bounds the chain of in-doubt turn records Run walks.
const maxTurnRetries = 64

// Run drives the model and its tools durably until the model answers
// without tool calls, the run pauses for an approval, or MaxTurns is
// reached. See the package documentation for what is journaled and how a
// resume works. The returned Result is valid (with what was done so far)
// even when err is not nil.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if opts.RunID == "" || opts.Journal == nil || opts.Model == nil {
		return nil, fmt.Errorf("%w: RunID, Journal and Model are required", ErrInvalidOptions)
	}
	maxTurns := opts.MaxTurns
	if maxTurns == 0 {
		maxTurns = defaultMaxTurns
	}
	if maxTurns < 0 {
		return nil, fmt.Errorf("%w: MaxTurns %d is negative", ErrInvalidOptions, maxTurns)
	}
	if opts.Skills.Len() > 0 {
		opts.System = SkillsSystemPrompt(opts.System, opts.Skills)
		opts.Tools = append(append([]Tool(nil), opts.Tools...), SkillTools(opts.Skills)...)
	}
	ex, err := NewExecutor(ExecutorOptions{RunID: opts.RunID, Journal: opts.Journal, Tools: opts.Tools, Guard: opts.Guard, Owner: opts.Owner})
	if err != nil {
		return nil, err
	}
	r := &runner{opts: opts, ex: ex, seen: map[string]bool{}}
	h := sha256.Sum256([]byte(opts.System + "\x00" + opts.Prompt))
	r.promptHash = hex.EncodeToString(h[:])

	res := &Result{Messages: []Message{{Role: RoleUser, Content: opts.Prompt}}}
	for n := 0; n < maxTurns; n++ {
		resp, replayed, err := r.turn(ctx, n, res.Messages)
		if err != nil {
			return res, err
		}
		res.Turns++
		if replayed {
			res.ReplayedTurns++
		}
		calls := r.assignIDs(n, resp.ToolCalls)
		res.Messages = append(res.Messages, Message{Role: RoleAssistant, Content: resp.Text, ToolCalls: calls})
		if len(calls) == 0 {
			res.Text = resp.Text
			return res, nil
		}
		out, approvals, err := r.callTools(ctx, calls)
		if err == nil {
			err = ctx.Err() // a cancelled run stops here, with its calls recorded
		}
		if err != nil {
			return res, err
		}
		if len(approvals) > 0 {
			res.Paused = true
			res.ApprovalIDs = approvals
			return res, nil
		}
		res.Messages = append(res.Messages, out...)
	}
	return res, fmt.Errorf("%w: the model still called tools after %d turns", ErrMaxTurns, maxTurns)
}

type runner struct {
	opts       Options
	ex         *Executor
	promptHash string
	seen       map[string]bool // journal tool call IDs used so far in the run
}

// turn returns the model's response for turn n: replayed from the journal
// when recorded, else from the model (and recorded).
func (r *runner) turn(ctx context.Context, n int, msgs []Message) (ModelResponse, bool, error) {
	args, _ := json.Marshal(struct {
		Turn   int    `json:"turn"`
		Prompt string `json:"prompt"`
	}{n, r.promptHash})
	for a := 0; a < maxTurnRetries; a++ {
		id := "turn-" + strconv.Itoa(n)
		if a > 0 {
			id += ".retry-" + strconv.Itoa(a)
		}
		var (
			ran      bool
			modelErr error
			resp     ModelResponse
		)
		c := durable.Call{RunID: r.opts.RunID, ToolCallID: id, Tool: turnTool, Args: args, Owner: r.opts.Owner}
		out, replayed, err := r.opts.Journal.Do(ctx, c, func(ctx context.Context, _ string) (*mcp.CallToolResult, error) {
			ran = true
			req := ModelRequest{System: r.opts.System, Messages: cloneMessages(msgs), Tools: r.ex.Tools()}
			resp, modelErr = r.ask(ctx, n, req)
			if modelErr != nil {
				// Opaque to the journal: the turn is not a known failure,
				// so it is never replayed as one; a resume asks again.
				return nil, errModel
			}
			b, err := json.Marshal(resp)
			if err != nil {
				modelErr = fmt.Errorf("loop: encode model response: %w", err)
				return nil, errModel
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
		})
		if ran {
			if modelErr != nil {
				return ModelResponse{}, false, fmt.Errorf("loop: model turn %d: %w", n, modelErr)
			}
			if err != nil {
				// Typically ErrNotRecorded: going on with a response that
				// is not recorded would let a resume diverge from this run.
				return ModelResponse{}, false, fmt.Errorf("loop: model turn %d: %w", n, err)
			}
			return resp, false, nil
		}
		if de, ok := refusal.As(err); ok && de.Code == refusal.InDoubt {
			continue // an earlier attempt died mid-turn; a turn has no effect: ask again
		}
		if err != nil {
			return ModelResponse{}, false, fmt.Errorf("loop: model turn %d: %w", n, err)
		}
		resp, err = decodeTurn(out)
		if err != nil {
			return ModelResponse{}, false, fmt.Errorf("loop: replay model turn %d: %w", n, err)
		}
		return resp, replayed, nil
	}
	return ModelResponse{}, false, fmt.Errorf("loop: model turn %d: %d attempts in doubt", n, maxTurnRetries)
}

var errModel = errors.New("loop: the model failed")

// ask asks the model for turn n: streaming to OnDelta when both allow it.
func (r *runner) ask(ctx context.Context, n int, req ModelRequest) (ModelResponse, error) {
	sm, ok := r.opts.Model.(StreamModel)
	if !ok || r.opts.OnDelta == nil {
		return r.opts.Model.Turn(ctx, req)
	}
	return sm.TurnStream(ctx, req, func(d Delta) {
		d.Turn = n
		r.opts.OnDelta(d)
	})
}

func decodeTurn(res *mcp.CallToolResult) (ModelResponse, error) {
	var resp ModelResponse
	if res == nil || len(res.Content) != 1 {
		return resp, errors.New("recorded turn has no response")
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return resp, errors.New("recorded turn is not text")
	}
	if err := json.Unmarshal([]byte(tc.Text), &resp); err != nil {
		return resp, fmt.Errorf("recorded turn does not decode: %w", err)
	}
	return resp, nil
}

func cloneMessages(msgs []Message) []Message {
	out := make([]Message, len(msgs))
	copy(out, msgs)
	return out
}

// assignIDs gives every call of turn n a journal ID: the model's own ID
// when it is usable and new in this run, else "turn-<n>-call-<i>". IDs
// starting with "turn-" are reserved for the loop, so a model cannot name
// a turn record or another call's fallback ID. The assignment depends only
// on the run's recorded responses, so a resume assigns the same IDs.
func (r *runner) assignIDs(n int, calls []ToolCall) []ToolCall {
	out := make([]ToolCall, len(calls))
	for i, c := range calls {
		if !usableID(c.ID) || r.seen[c.ID] {
			c.ID = "turn-" + strconv.Itoa(n) + "-call-" + strconv.Itoa(i)
		}
		r.seen[c.ID] = true
		out[i] = c
	}
	return out
}

func usableID(id string) bool {
	if id == "" || len(id) > 128 || strings.HasPrefix(id, "turn-") {
		return false
	}
	for _, r := range id {
		if r > unicode.MaxASCII || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// callTools runs one turn's calls in parallel and returns their tool
// messages in call order, or the approvals the run must wait for.
func (r *runner) callTools(ctx context.Context, calls []ToolCall) ([]Message, []string, error) {
	outs, err := r.ex.callAssigned(ctx, calls)
	if err != nil {
		return nil, nil, err
	}
	msgs := make([]Message, len(outs))
	var pending []string
	for i, o := range outs {
		msgs[i] = o.Message
		if o.ApprovalID != "" {
			pending = append(pending, o.ApprovalID)
		}
	}
	return msgs, pending, nil
}

// toolError marks an error returned by a Tool's Call: the tool's own
// failure, which the model is told about (not a failure of the run).
type toolError struct{ err error }

func (e *toolError) Error() string { return e.err.Error() }
func (e *toolError) Unwrap() error { return e.err }

func isObject(b json.RawMessage) bool {
	var v map[string]json.RawMessage
	return json.Unmarshal(b, &v) == nil && v != nil
}

// resultText renders a tool result as the text a model reads.
func resultText(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, "[image "+c.MIMEType+"]")
		case *mcp.AudioContent:
			parts = append(parts, "[audio "+c.MIMEType+"]")
		case *mcp.ResourceLink:
			parts = append(parts, "[resource "+c.URI+"]")
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				parts = append(parts, "[resource "+c.Resource.URI+"]")
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}
