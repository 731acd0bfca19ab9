package storetest

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// base is a fixed instant (ms precision) the tests count from; stores are
// given explicit times wherever the API takes one.
var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return base.Add(d) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

type res[T any] struct {
	v   T
	err error
}

func get[T any](v T, err error) res[T] { return res[T]{v, err} }

func (r res[T]) ok(t *testing.T) T {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.v
}

type res3[A, B any] struct {
	a   A
	b   B
	err error
}

func get3[A, B any](a A, b B, err error) res3[A, B] { return res3[A, B]{a, b, err} }

func (r res3[A, B]) ok(t *testing.T) A {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.a
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

// tool is the key of the tool name.
func tool(name string) store.BaselineKey { return store.BaselineKey{Kind: store.KindTool, Name: name} }

// tools is a baseline of tools: name -> value, no contracts.
func tools(kv map[string]string) store.Baseline {
	b := store.Baseline{}
	for name, v := range kv {
		b[tool(name)] = store.BaselineEntry{Value: v}
	}
	return b
}

// withInstructions is tools(kv) with the instructions entry.
func withInstructions(kv map[string]string, instructions string) store.Baseline {
	b := tools(kv)
	b[store.BaselineKey{Kind: store.KindInstructions}] = store.BaselineEntry{Value: instructions}
	return b
}

// equalBaselines compares two baselines, contracts byte for byte (nil and
// empty apart).
func equalBaselines(a, b store.Baseline) bool {
	return maps.EqualFunc(a, b, func(x, y store.BaselineEntry) bool {
		return x.Value == y.Value && bytes.Equal(x.Contract, y.Contract) && (x.Contract == nil) == (y.Contract == nil)
	})
}
