package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// Messages sent through one pool reach the listeners of their box on
// another (two replicas), byte for byte, and no other box's; bad boxes
// and messages too large are refused; a listener ends with its context.
func TestMessenger(t *testing.T) {
	_, cfg := freshSchema(t)
	a, b := openCfg(t, cfg(), nil), openCfg(t, cfg(), nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	got, other := make(chan []byte, 8), make(chan []byte, 8)
	if err := b.Listen(ctx, "box-1", func(m []byte) { got <- m }); err != nil {
		t.Fatal(err)
	}
	if err := b.Listen(ctx, "box-2", func(m []byte) { other <- m }); err != nil {
		t.Fatal(err)
	}
	msgs := [][]byte{[]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`), {0, 1, 2, 255, '\'', '"', '\n'}, bytes.Repeat([]byte("x"), store.MaxMessage)}
	for _, m := range msgs {
		if err := a.Send(t.Context(), "box-1", m); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range msgs {
		select {
		case m := <-got:
			if !bytes.Equal(m, want) {
				t.Errorf("message %d: %q, want %q", i, m, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("message %d never arrived", i)
		}
	}
	select {
	case m := <-other:
		t.Errorf("box-2 got %q", m)
	case <-time.After(100 * time.Millisecond):
	}
	for name, c := range map[string]struct {
		box string
		msg []byte
	}{
		"empty box":    {"", nil},
		"long box":     {strings.Repeat("b", 49), nil},
		"quote in box": {`a"b`, nil},
		"space in box": {"a b", nil},
		"too large":    {"box-1", make([]byte, store.MaxMessage+1)},
	} {
		if err := a.Send(t.Context(), c.box, c.msg); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if err := a.Listen(ctx, "a;b", func([]byte) {}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Listen on a bad box: %v", err)
	}
	// After cancel, nothing more is delivered.
	cancel()
	time.Sleep(50 * time.Millisecond)
	if err := a.Send(t.Context(), "box-1", []byte("late")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		t.Errorf("a cancelled listener got %q", m)
	case <-time.After(200 * time.Millisecond):
	}
}

// Two deployments in two schemas of one database do not hear each other:
// a message sent on a box reaches the listeners of that box in the
// sender's schema only, though NOTIFY channels are per database.
func TestMessengerSchemasApart(t *testing.T) {
	_, cfgA := freshSchema(t)
	_, cfgB := freshSchema(t)
	a1, a2, b := openCfg(t, cfgA(), nil), openCfg(t, cfgA(), nil), openCfg(t, cfgB(), nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	gotA, gotB := make(chan []byte, 8), make(chan []byte, 8)
	if err := a1.Listen(ctx, "sess-all", func(m []byte) { gotA <- m }); err != nil {
		t.Fatal(err)
	}
	if err := b.Listen(ctx, "sess-all", func(m []byte) { gotB <- m }); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(t.Context(), "sess-all", []byte("from b")); err != nil {
		t.Fatal(err)
	}
	if err := a2.Send(t.Context(), "sess-all", []byte("from a")); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		ch   chan []byte
		want string
	}{"schema a": {gotA, "from a"}, "schema b": {gotB, "from b"}} {
		select {
		case m := <-c.ch:
			if string(m) != c.want {
				t.Errorf("%s heard %q, want %q", name, m, c.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s never heard %q", name, c.want)
		}
	}
	select {
	case m := <-gotA:
		t.Errorf("schema a also heard %q", m)
	case m := <-gotB:
		t.Errorf("schema b also heard %q", m)
	case <-time.After(200 * time.Millisecond):
	}
}
