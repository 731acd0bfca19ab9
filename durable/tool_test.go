package durable

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/gatehouse-dev/gatehouse/store/memory"
)

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
