package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/store"
)

// Each refusal wraps ErrInvalid and names the entry and what is wrong,
// hidden characters quoted.
func TestBaselineValidate(t *testing.T) {
	tool := func(name string) store.BaselineKey { return store.BaselineKey{Kind: store.KindTool, Name: name} }
	for _, tc := range []struct {
		b    store.Baseline
		want string
	}{
		{store.Baseline{{Kind: "tools", Name: "x"}: {}}, `baseline entry "x": unknown kind "tools"`},
		{store.Baseline{{Name: "x"}: {}}, `unknown kind ""`},
		{store.Baseline{{Kind: store.KindInstructions, Name: "x"}: {}}, `the instructions entry has the name "", not "x"`},
		{store.Baseline{tool("a\x00b"): {}}, `tool "a\x00b": the name holds a NUL byte`},
		{store.Baseline{tool("a\xffb"): {}}, `tool "a\xffb": the name is not valid UTF-8`},
		{store.Baseline{tool("a"): {Value: "\x00"}}, `tool "a": the value holds a NUL byte`},
		{store.Baseline{{Kind: store.KindPrompt, Name: "p\u202e"}: {Value: "\xc3"}}, `prompt "p\u202e": the value is not valid UTF-8`},
	} {
		err := tc.b.Validate()
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%v) = %v, want ErrInvalid saying %s", tc.b, err, tc.want)
		}
	}
	ok := store.Baseline{
		store.BaselineKey{Kind: store.KindInstructions}: {Value: "fp"},
		tool(""):         {Value: "fp"},
		tool("prompt x"): {Value: "fp", Contract: []byte{0, 0xff}},
		{Kind: store.KindMarker, Name: "anything"}:         {Value: store.PinnedMarker},
		{Kind: store.KindTemplate, Name: "天気://{x}\u200b"}: {},
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate refuses %v: %v", ok, err)
	}
	if err := store.Baseline(nil).Validate(); err != nil {
		t.Fatalf("a nil baseline: %v", err)
	}
}

func TestObservationValidate(t *testing.T) {
	good := store.Observation{ServerID: "s", Listing: "L", SeenBy: "gw-1"}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mod  func(*store.Observation)
		want string
	}{
		{func(o *store.Observation) { o.ServerID = "" }, "server ID is empty"},
		{func(o *store.Observation) { o.Listing = "" }, "listing fingerprint is empty"},
		{func(o *store.Observation) { o.SeenBy = "" }, "no observing instance"},
		{func(o *store.Observation) { o.BaselineVersion = -1 }, "negative baseline version"},
		{func(o *store.Observation) { o.Listing = "L\x00" }, `listing fingerprint "L\x00" holds a NUL byte`},
		{func(o *store.Observation) { o.SeenBy = "gw\xff" }, `instance name "gw\xff" is not valid UTF-8`},
		{func(o *store.Observation) { o.Entries = store.Baseline{{Kind: "x"}: {}} }, `observation of server "s": store: invalid argument: baseline entry`},
	} {
		o := good
		tc.mod(&o)
		if err := o.Validate(); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalid saying %s", o, err, tc.want)
		}
	}
}

// Clone is deep, keeps nil contracts nil and makes empty ones nil; a nil
// baseline clones to an empty one.
func TestBaselineClone(t *testing.T) {
	if c := store.Baseline(nil).Clone(); c == nil || len(c) != 0 {
		t.Fatalf("Clone(nil) = %#v", c)
	}
	k := store.BaselineKey{Kind: store.KindTool, Name: "a"}
	b := store.Baseline{k: {Value: "v", Contract: []byte("{}")}, store.BaselineKey{Kind: store.KindInstructions}: {Value: "i", Contract: []byte{}}}
	c := b.Clone()
	b[k].Contract[0] = 'X'
	delete(b, store.BaselineKey{Kind: store.KindInstructions})
	if string(c[k].Contract) != "{}" || len(c) != 2 || c[store.BaselineKey{Kind: store.KindInstructions}].Contract != nil {
		t.Fatalf("Clone = %v", c)
	}
	if s := k.String(); s != `tool "a"` {
		t.Fatalf("String = %s", s)
	}
}
