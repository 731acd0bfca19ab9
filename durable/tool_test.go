package durable

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatehouse-dev/gatehouse/durable/internal/effectserver"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/store/memory"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// TestFromToolset calls a real stdio server through a toolset and the
// journal: the key reaches the server in _meta, and a repeat is replayed.
func TestFromToolset(t *testing.T) {
	ctx := ctxT(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "effects")
	ts, err := toolset.Open(ctx, []toolset.Server{{Config: plugin.ServerConfig{
		Name: "bank", Type: plugin.TransportStdio, Command: exe,
		Env: map[string]string{envRole: "effectserver", effectserver.EnvFile: file, "GORACE": "atexit_sleep_ms=0"},
	}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	s, _ := memory.New(nil)
	defer s.Close()
	j := newJournal(t, s, nil)
	tool := FromToolset(ts, "bank", "bank__charge")
	args := json.RawMessage(`{"amount":12}`)
	info := CallInfo{RunID: "run9", ToolCallID: "call3", Owner: "bob"}
	res, replayed, err := j.Invoke(ctx, tool, info, args)
	if err != nil || replayed || res.IsError {
		t.Fatalf("%v %v %v", res, replayed, err)
	}
	var rc effectserver.Receipt
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &rc)
	effs, _ := effectsIn(t, file)
	if rc.Key != "run9:call3" || rc.Amount != 12 || len(effs["run9:call3"]) != 1 || effs["run9:call3"][0] != rc.Receipt {
		t.Fatalf("receipt %+v, effects %v", rc, effs)
	}
	res2, replayed, err := j.Invoke(ctx, tool, info, args)
	if err != nil || !replayed || string(mustJSONT(t, res2)) != string(mustJSONT(t, res)) {
		t.Fatal(replayed, err)
	}
	// An unknown tool is refused by the toolset before anything is sent:
	// a known failure, recorded and replayed.
	bad := FromToolset(ts, "bank", "bank__nope")
	_, _, err1 := j.Invoke(ctx, bad, CallInfo{RunID: "run9", ToolCallID: "call4"}, nil)
	_, replayed, err2 := j.Invoke(ctx, bad, CallInfo{RunID: "run9", ToolCallID: "call4"}, nil)
	if err1 == nil || !replayed || err2 == nil || err1.Error() != err2.Error() {
		t.Fatalf("unknown tool: %v / %v (replayed %v)", err1, err2, replayed)
	}
}

func TestGoTool(t *testing.T) {
	ctx := ctxT(t)
	s, _ := memory.New(nil)
	defer s.Close()
	j := newJournal(t, s, nil)
	type in struct{ N int }
	runs := 0
	double := GoTool("local", "double", func(_ context.Context, v in, key string) (map[string]any, error) {
		runs++
		if v.N < 0 {
			return nil, errors.New("negative")
		}
		return map[string]any{"n": v.N * 2, "key": key}, nil
	})
	for range 2 {
		res, _, err := j.Invoke(ctx, double, CallInfo{RunID: "r", ToolCallID: "a"}, json.RawMessage(`{"N":21}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.StructuredContent)
		if string(b) != `{"key":"r:a","n":42}` {
			t.Fatalf("%s", b)
		}
	}
	for range 2 {
		if _, _, err := j.Invoke(ctx, double, CallInfo{RunID: "r", ToolCallID: "b"}, json.RawMessage(`{"N":-1}`)); err == nil || err.Error() != "negative" {
			t.Fatalf("err %v", err)
		}
	}
	if runs != 2 {
		t.Fatalf("ran %d times", runs)
	}
	if _, _, err := j.Invoke(ctx, Tool{Name: "x"}, CallInfo{RunID: "r", ToolCallID: "c"}, nil); !errors.Is(err, ErrInvalidCall) {
		t.Fatal(err)
	}
}
