package durable

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/rawresult"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/store"
)

// rawEffect is an effect that may answer the server's result as bytes,
// as the gateway's byte sender does.
type rawEffect func(ctx context.Context, key string) (*mcp.CallToolResult, rawresult.Result, error)

// guardedRaw calls Guarded as the gateway does for its byte sender: a
// rawresult.Result in the context, filled by the effect, read back after.
func guardedRaw(j *Journal, ctx context.Context, c Call, g policy.Guard, e rawEffect) (*mcp.CallToolResult, rawresult.Result, bool, error) {
	var h rawresult.Result
	var effect Effect // nil for a nil e
	if e != nil {
		effect = func(ctx context.Context, key string) (*mcp.CallToolResult, error) {
			res, raw, err := e(ctx, key)
			if err == nil && raw.JSON != nil {
				h = raw
				return nil, nil
			}
			return res, err
		}
	}
	res, replayed, err := j.Guarded(rawresult.With(ctx, &h), c, g, effect)
	return res, h, replayed, err
}

// rawEffectOf performs the effect server's charge (a real effect, counted
// in its file) and answers the result as the given bytes, as a byte
// sender that read them off the wire would.
func rawEffectOf(cs *mcp.ClientSession, args json.RawMessage, body string, isError bool) rawEffect {
	return func(ctx context.Context, key string) (*mcp.CallToolResult, rawresult.Result, error) {
		if _, err := effectOf(cs, "charge", args)(ctx, key); err != nil {
			return nil, rawresult.Result{}, err
		}
		return nil, rawresult.Result{JSON: json.RawMessage(body), IsError: isError}, nil
	}
}

// norawEffect fails the test if it runs.
func norawEffect(t *testing.T) rawEffect {
	return func(context.Context, string) (*mcp.CallToolResult, rawresult.Result, error) {
		t.Error("the effect ran again")
		return nil, rawresult.Result{}, errors.New("ran again")
	}
}

// TestGuardedRawRecordsBytes: a rawEffect's result bytes are what the
// store holds, byte for byte (whitespace, unescaped HTML, a field the
// go-sdk's type does not know), and every replay (GuardedRaw, Guarded, Do,
// another journal) answers the result they hold, decoded, without running
// the effect again; an isError result is recorded failed and replays as
// the same result.
func TestGuardedRawRecordsBytes(t *testing.T) {
	const body = `{"content":[{"type":"text","text":"<b>paid</b> & é"}],
 "structuredContent":{"html":"<x>","n":1.5},"isError":false,"x-vendor":{"trace":"t-1"}}`
	const failing = `{"content":[{"type":"text","text":"no funds"}],"isError":true,"x-vendor":2}`
	forEachStore(t, func(t *testing.T, s store.Store) {
		ctx := ctxT(t)
		j, cs, file := effectJournal(t, s, &JournalOptions{Scope: "app"})
		args := json.RawMessage(`{"amount":42}`)
		c := Call{RunID: "run1", ToolCallID: "c1", Server: "bank", Tool: "charge", Args: args, Owner: "alice"}

		res, raw, replayed, err := guardedRaw(j, ctx, c, policy.AllowAll(), rawEffectOf(cs, args, body, false))
		if err != nil || replayed || res != nil || string(raw.JSON) != body || raw.IsError {
			t.Fatalf("fresh: res=%v raw=%s replayed=%v err=%v", res, raw.JSON, replayed, err)
		}
		rec := getRecord(t, s, j, c)
		if want := `{"result":` + body + `}`; rec.State != store.StateSucceeded || string(rec.Outcome) != want {
			t.Fatalf("record %s %s\nwant %s", rec.State, rec.Outcome, want)
		}

		check := func(how string, res *mcp.CallToolResult, replayed bool, err error) {
			t.Helper()
			if err != nil || !replayed || res == nil {
				t.Fatalf("%s: res=%v replayed=%v err=%v", how, res, replayed, err)
			}
			if len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "<b>paid</b> & é" || res.IsError {
				t.Fatalf("%s: replayed %+v", how, res)
			}
			sc, _ := json.Marshal(res.StructuredContent)
			if string(sc) != `{"html":"\u003cx\u003e","n":1.5}` {
				t.Fatalf("%s: structuredContent %s", how, sc)
			}
		}
		j2 := newJournal(t, s, &JournalOptions{Scope: "app"})
		for _, jj := range []*Journal{j, j2} {
			res, raw, replayed, err := guardedRaw(jj, ctx, c, policy.AllowAll(), norawEffect(t))
			if raw.JSON != nil {
				t.Fatalf("a replay answered bytes: %s", raw.JSON)
			}
			check("GuardedRaw", res, replayed, err)
			res, replayed, err = jj.Guarded(ctx, c, policy.AllowAll(), nil2(t))
			check("Guarded", res, replayed, err)
			res, replayed, err = jj.Do(ctx, c, nil2(t))
			check("Do", res, replayed, err)
		}
		if eff, _ := effectsIn(t, file); len(eff["run1:c1"]) != 1 {
			t.Fatalf("effects = %v, want one for run1:c1", eff)
		}

		// isError: recorded failed, the bytes kept, replayed as the result.
		f := Call{RunID: "run1", ToolCallID: "c2", Server: "bank", Tool: "charge", Args: args, Owner: "alice"}
		_, raw, _, err = guardedRaw(j, ctx, f, policy.AllowAll(), rawEffectOf(cs, args, failing, true))
		if err != nil || string(raw.JSON) != failing || !raw.IsError {
			t.Fatalf("isError: raw=%s err=%v", raw.JSON, err)
		}
		if rec := getRecord(t, s, j, f); rec.State != store.StateFailed || string(rec.Outcome) != `{"result":`+failing+`}` {
			t.Fatalf("isError record %s %s", rec.State, rec.Outcome)
		}
		res, _, replayed, err = guardedRaw(j2, ctx, f, policy.AllowAll(), norawEffect(t))
		if err != nil || !replayed || !res.IsError || res.Content[0].(*mcp.TextContent).Text != "no funds" {
			t.Fatalf("isError replay: %+v %v %v", res, replayed, err)
		}
		if eff, _ := effectsIn(t, file); len(eff["run1:c2"]) != 1 {
			t.Fatalf("effects = %v, want one for run1:c2", eff)
		}
	})
}

// TestGuardedRawNotAnObject: result bytes that are not one JSON object
// are recorded as a failure with a clear message (the server answered: the
// call is never in doubt and never sent again), and every retry replays
// the same error.
func TestGuardedRawNotAnObject(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"array", `[{"content":[]}]`, "not a JSON object"},
		{"string", `"steer"`, "not a JSON object"},
		{"null", `null`, "not a JSON object"},
		{"number", ` 42 `, "not a JSON object"},
		{"truncated", `{"content":[`, "not valid JSON"},
		{"two objects", `{"content":[]}{"isError":true}`, "not valid JSON"},
		{"empty", ``, "not valid JSON"},
		{"only whitespace", " \n", "not valid JSON"},
	}
	forEachStore(t, func(t *testing.T, s store.Store) {
		ctx := ctxT(t)
		j, cs, file := effectJournal(t, s, &JournalOptions{Repeatable: func(string, string) bool { return true }})
		args := json.RawMessage(`{"amount":1}`)
		for _, tc := range cases {
			c := Call{RunID: "bad", ToolCallID: tc.name, Server: "bank", Tool: "charge", Args: args}
			res, raw, replayed, err := guardedRaw(j, ctx, c, policy.AllowAll(), rawEffectOf(cs, args, tc.body, false))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "could not be recorded") || res != nil || raw.JSON != nil || replayed {
				t.Fatalf("%s: res=%v raw=%q replayed=%v err=%v", tc.name, res, raw.JSON, replayed, err)
			}
			rec := getRecord(t, s, j, c)
			if rec.State != store.StateFailed || !strings.Contains(string(rec.Outcome), tc.want) {
				t.Fatalf("%s: record %s %s", tc.name, rec.State, rec.Outcome)
			}
			for range 2 { // a repeatable tool too: a failure is final
				_, _, replayed, err2 := guardedRaw(j, ctx, c, policy.AllowAll(), norawEffect(t))
				if !replayed || err2 == nil || err2.Error() != err.Error() {
					t.Fatalf("%s: retry replayed=%v err=%v, want %v", tc.name, replayed, err2, err)
				}
			}
			if eff, _ := effectsIn(t, file); len(eff[c.IdempotencyKey()]) != 1 {
				t.Fatalf("%s: effects %v, want one", tc.name, eff[c.IdempotencyKey()])
			}
		}
	})
}

// TestGuardedRawDecodedAnswer: a rawEffect that answers a value (the
// go-sdk client's path) is recorded as an Effect's answer is.
func TestGuardedRawDecodedAnswer(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		ctx := ctxT(t)
		j, cs, _ := effectJournal(t, s, nil)
		args := json.RawMessage(`{"amount":3}`)
		c := Call{RunID: "r", ToolCallID: "v", Server: "bank", Tool: "charge", Args: args}
		res, raw, replayed, err := guardedRaw(j, ctx, c, policy.AllowAll(), func(ctx context.Context, key string) (*mcp.CallToolResult, rawresult.Result, error) {
			res, err := effectOf(cs, "charge", args)(ctx, key)
			return res, rawresult.Result{}, err
		})
		if err != nil || replayed || res == nil || raw.JSON != nil {
			t.Fatalf("fresh: %v %s %v %v", res, raw.JSON, replayed, err)
		}
		first := mustJSONT(t, res)
		if rec := getRecord(t, s, j, c); rec.State != store.StateSucceeded || string(rec.Outcome) != `{"result":`+string(first)+`}` {
			t.Fatalf("record %s %s", rec.State, rec.Outcome)
		}
		again, _, replayed, err := guardedRaw(j, ctx, c, policy.AllowAll(), norawEffect(t))
		if err != nil || !replayed || string(mustJSONT(t, again)) != string(first) {
			t.Fatalf("replay %s %v %v", mustJSONT(t, again), replayed, err)
		}
		var nilEffect rawEffect
		if _, _, _, err := guardedRaw(j, ctx, Call{RunID: "r", ToolCallID: "nil", Server: "bank", Tool: "charge"}, policy.AllowAll(), nilEffect); !errors.Is(err, ErrInvalidCall) {
			t.Fatalf("nil effect: %v", err)
		}
	})
}
