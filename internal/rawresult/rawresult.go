// Package rawresult carries a tool call's result as the bytes a server
// sent, from the gateway's byte sender to the durable journal, which
// records them as they are: neither decodes them.
//
// It is the one seam of the byte path's optimisation outside the gateway,
// and it is internal: durable's public API has one shape (an Effect
// answers a *mcp.CallToolResult). A caller that wants its effect's bytes
// recorded puts a *Result in the context it gives the journal (With); its
// effect fills the Result and answers a nil result and a nil error; the
// journal finds the Result (From) and records Result.JSON. Without a
// Result in the context, nothing changes.
package rawresult

import (
	"context"
	"encoding/json"
)

// Result is a tool call's result as the server sent it: the bytes of its
// result object, not decoded. The zero value is no result.
type Result struct {
	// JSON is the result object's bytes (a JSON object, as received).
	JSON json.RawMessage
	// IsError is the result's "isError", as the effect read it from JSON.
	// The journal trusts it to choose the record's state (failed when
	// true) and does not read JSON for it.
	IsError bool
}

type key struct{}

// With returns ctx carrying r, for the effect to fill.
func With(ctx context.Context, r *Result) context.Context {
	return context.WithValue(ctx, key{}, r)
}

// From returns the Result ctx carries, nil for none.
func From(ctx context.Context) *Result {
	r, _ := ctx.Value(key{}).(*Result)
	return r
}
