package server

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
)

// unitOfWork names the journal record of a call: the run is the subject's
// use of the tool and the tool call is the work key within it. Both are
// store.KeyHash of the subject among their parts (length-delimited), so a
// key chosen by one caller never names another caller's work, whatever
// bytes the subject, tool or key hold. A multi-round call (input responses, request state) is a
// new unit per round.
func unitOfWork(subject Subject, tool, key string, req *mcp.CallToolRequest) (runID, toolCallID string) {
	run := store.KeyHash("gatehouse/server/v1", string(subject), tool)
	var call [32]byte
	if req.Params.RequestState != "" || len(req.Params.InputResponses) > 0 {
		b, _ := json.Marshal(req.Params.InputResponses)
		call = store.KeyHash("gatehouse/server/v1", string(subject), tool, key, req.Params.RequestState, string(b))
	} else {
		call = store.KeyHash("gatehouse/server/v1", string(subject), tool, key)
	}
	return "srv:" + hex.EncodeToString(run[:16]), hex.EncodeToString(call[:])
}

// dedup runs the call at most once per unit of work through the journal.
// Refusals (run_busy, key_reused, in_doubt) are tool results of
// docs/reference/refusals.md.
func (s *Server) dedup(ctx context.Context, next mcp.MethodHandler, method string, req *mcp.CallToolRequest, subject Subject, key string) (mcp.Result, error) {
	name := req.Params.Name
	runID, callID := unitOfWork(subject, name, key, req)
	call := durable.Call{
		RunID:      runID,
		ToolCallID: callID,
		Server:     s.name,
		Tool:       name,
		Args:       req.Params.Arguments,
		Owner:      string(subject),
	}
	res, _, err := s.opts.Journal.Do(ctx, call, func(ctx context.Context, ikey string) (*mcp.CallToolResult, error) {
		ctx = context.WithValue(ctx, callerKey{}, Caller{subject: subject, tool: name, key: ikey})
		r, err := next(ctx, method, req)
		if err != nil {
			return nil, err
		}
		cr, ok := r.(*mcp.CallToolResult)
		if !ok {
			return nil, durable.Failed(fmt.Errorf("server: tools/call answered %T", r))
		}
		return cr, nil
	})
	if err == nil {
		return res, nil
	}
	if de, ok := refusal.As(err); ok {
		return de.Result(), nil
	}
	if res != nil && errors.Is(err, durable.ErrNotRecorded) {
		s.logger.Error("server: call ran but its outcome was not journaled", "tool", name, "err", err)
		return res, nil
	}
	var rec *durable.RecordedError
	if errors.As(err, &rec) && rec.RPC != nil {
		return nil, rec.RPC // the same JSON-RPC error the first call got
	}
	return nil, err
}
