package storetest

import (
	"context"
	"errors"
	"testing"
	"time"
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
