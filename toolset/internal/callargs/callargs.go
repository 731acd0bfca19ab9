// Package callargs shapes what a tools/call carries besides the tool's
// name: the arguments, checked to encode to one JSON object, and a fresh
// _meta without the keys the protocol reserves.
//
//	arguments, err := callargs.Normalize(args) // nil, a map, or a json.RawMessage object
//	meta := callargs.Meta(info.Meta, info.RunID, info.ToolCallID)
//	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: remote, Arguments: arguments, Meta: meta})
package callargs

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// ReservedMetaPrefix marks _meta keys the protocol reserves; callers never
// get to forward them.
const ReservedMetaPrefix = "io.modelcontextprotocol/"

// Normalize checks that args will encode to a JSON object. It returns nil
// for nil (and for JSON null or blank bytes), a map[string]any as is, and
// anything else (a json.RawMessage or []byte holding JSON, or any value
// that encodes to JSON) as a json.RawMessage of exactly one JSON object,
// trimmed of surrounding space. It never modifies args.
func Normalize(args any) (any, error) {
	switch a := args.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return a, nil
	case json.RawMessage:
		return rawObject(a)
	case []byte:
		return rawObject(a)
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return rawObject(b)
}

func rawObject(b []byte) (any, error) {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil
	}
	if t[0] != '{' || !json.Valid(t) {
		return nil, errors.New("arguments must be a JSON object")
	}
	return json.RawMessage(t), nil
}

// Meta builds a fresh _meta map for one attempt of a call: meta without
// the keys starting with ReservedMetaPrefix, plus idempotencyKey = runID +
// ":" + toolCallID when both are set; nil when that leaves nothing. It
// never modifies meta.
func Meta(meta map[string]any, runID, toolCallID string) map[string]any {
	m := make(map[string]any, len(meta)+1)
	for k, v := range meta {
		if strings.HasPrefix(k, ReservedMetaPrefix) {
			continue
		}
		m[k] = v
	}
	if runID != "" && toolCallID != "" {
		m["idempotencyKey"] = runID + ":" + toolCallID
	}
	if len(m) == 0 {
		return nil
	}
	return m
}
