package storetest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/store"
)

// oddKeys are keys that a namespace of strings would confuse: every name
// under the old one-string keys of prompts, templates, markers and
// instructions, as a tool; a prompt and a tool with the same name; spaces,
// dots, non-ASCII and hidden characters.
func oddKeys() []store.BaselineKey {
	k := func(kind store.BaselineKind, name string) store.BaselineKey {
		return store.BaselineKey{Kind: kind, Name: name}
	}
	return []store.BaselineKey{
		store.BaselineKey{Kind: store.KindInstructions},
		k(store.KindTool, ""),
		k(store.KindTool, "prompt x"),
		k(store.KindPrompt, "x"),
		k(store.KindTool, "resource-template file:///{path}"),
		k(store.KindTemplate, "file:///{path}"),
		k(store.KindTool, "pinned prompts"),
		k(store.KindTool, "pinned resource-templates"),
		k(store.KindMarker, store.MarkerPrompts),
		k(store.KindMarker, store.MarkerTemplates),
		k(store.KindTool, "same"),
		k(store.KindPrompt, "same"),
		k(store.KindTemplate, "same"),
		k(store.KindMarker, "same"),
		k(store.KindTool, "get weather"),
		k(store.KindTool, " leading and trailing "),
		k(store.KindTool, "v1.2.tools.list"),
		k(store.KindTool, "récupérer_données"),
		k(store.KindTool, "天気"),
		k(store.KindTool, "zero\u200bwidth"),
		k(store.KindTool, "bidi\u202eevil"),
		k(store.KindTool, "tag\U000E0041"),
		k(store.KindTool, "Same"),
		k(store.KindTool, "%_*'\"\\;--"),
		k(store.KindTool, strings.Repeat("long", 250)),
		k(store.KindPrompt, "prompt "),
		k(store.KindPrompt, ""),
	}
}

// Kinds keep any name apart: each key is its own entry, read back exactly.
func testBaselineKinds(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putServer(t, s, "srv")
	in := store.Baseline{}
	for i, k := range oddKeys() {
		in[k] = store.BaselineEntry{Value: "fp-" + strings.Repeat("x", i)}
	}
	if n := get(s.SaveBaseline(ctx, "srv", in)).ok(t); n != len(in) {
		t.Fatalf("saved %d of %d distinct keys", n, len(in))
	}
	got := get(s.GetBaseline(ctx, "srv")).ok(t)
	if !equalBaselines(got, in) {
		t.Fatalf("read back %d entries:\n%v\nwant %d:\n%v", len(got), got, len(in), in)
	}
	// Insert-only per key, for every kind: a second save of each key with
	// another value adds nothing and changes nothing.
	v := get(s.BaselineVersion(ctx, "srv")).ok(t)
	again := store.Baseline{}
	for k := range in {
		again[k] = store.BaselineEntry{Value: "drifted", Contract: []byte(`{"drifted":true}`)}
	}
	if n := get(s.SaveBaseline(ctx, "srv", again)).ok(t); n != 0 {
		t.Fatalf("a second save of the same keys added %d", n)
	}
	if got := get(s.GetBaseline(ctx, "srv")).ok(t); !equalBaselines(got, in) {
		t.Fatalf("a second save changed the baseline: %v", got)
	}
	if v2 := get(s.BaselineVersion(ctx, "srv")).ok(t); v2 != v {
		t.Fatalf("version %d -> %d on a save that added nothing", v, v2)
	}
	// A prompt named like a tool that is pinned is a new entry.
	putServer(t, s, "two")
	get(s.SaveBaseline(ctx, "two", tools(map[string]string{"charge": "tool-fp"}))).ok(t)
	n := get(s.SaveBaseline(ctx, "two", store.Baseline{{Kind: store.KindPrompt, Name: "charge"}: {Value: "prompt-fp"}})).ok(t)
	if n != 1 {
		t.Fatalf("a prompt named like a pinned tool added %d entries, want 1", n)
	}
	b := get(s.GetBaseline(ctx, "two")).ok(t)
	if len(b) != 2 || b[tool("charge")].Value != "tool-fp" || b[store.BaselineKey{Kind: store.KindPrompt, Name: "charge"}].Value != "prompt-fp" {
		t.Fatalf("baseline of two = %v", b)
	}
}

// Contracts are opaque bytes that read back as written; nil stays nil.
func testBaselineContracts(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putServer(t, s, "srv")
	big := bytes.Repeat([]byte(`{"description":"`+strings.Repeat("y", 1000)+`"}`), 64)
	in := store.Baseline{
		tool("json"):                        {Value: "a", Contract: []byte(`{"name":"json","inputSchema":{"type":"object"}}`)},
		tool("none"):                        {Value: "b"},
		tool("binary"):                      {Value: "c", Contract: []byte{0, 1, 2, 0xff, 0xfe, '\n', 0}},
		tool("big"):                         {Value: "d", Contract: big},
		{Kind: store.KindPrompt, Name: "p"}: {Value: "e", Contract: []byte(`{"name":"p"}`)},
		store.BaselineKey{Kind: store.KindInstructions}: {Value: "f"},
	}
	get(s.SaveBaseline(ctx, "srv", in)).ok(t)
	in[tool("json")].Contract[0] = 'X' // the store must have copied
	in[tool("json")] = store.BaselineEntry{Value: "a", Contract: []byte(`{"name":"json","inputSchema":{"type":"object"}}`)}
	got := get(s.GetBaseline(ctx, "srv")).ok(t)
	if !equalBaselines(got, in) {
		t.Fatalf("contracts read back differ:\n%v\nwant\n%v", got, in)
	}
	if got[tool("none")].Contract != nil || got[store.BaselineKey{Kind: store.KindInstructions}].Contract != nil {
		t.Fatalf("a nil contract read back as %#v / %#v", got[tool("none")].Contract, got[store.BaselineKey{Kind: store.KindInstructions}].Contract)
	}
	got[tool("json")].Contract[0] = 'Y' // and copied out
	if again := get(s.GetBaseline(ctx, "srv")).ok(t); again[tool("json")].Contract[0] != '{' {
		t.Fatal("a caller's change reached the stored contract")
	}
	// An empty contract reads back as nil, like every empty byte field.
	putServer(t, s, "empty")
	get(s.SaveBaseline(ctx, "empty", store.Baseline{tool("e"): {Value: "v", Contract: []byte{}}})).ok(t)
	if c := get(s.GetBaseline(ctx, "empty")).ok(t)[tool("e")].Contract; c != nil {
		t.Fatalf("an empty contract read back as %#v, want nil", c)
	}
	// ReplaceBaseline keeps contracts too.
	get(s.ReplaceBaseline(ctx, "srv", in)).ok(t)
	if got := get(s.GetBaseline(ctx, "srv")).ok(t); !equalBaselines(got, in) {
		t.Fatalf("contracts after ReplaceBaseline differ: %v", got)
	}
}

// invalidBaselines are baselines no store accepts, each with a valid entry
// beside the bad one.
func invalidBaselines() map[string]store.Baseline {
	ok := func(k store.BaselineKey, e store.BaselineEntry) store.Baseline {
		return store.Baseline{tool("fine"): {Value: "fp"}, k: e}
	}
	return map[string]store.Baseline{
		"empty kind":                 ok(store.BaselineKey{Name: "x"}, store.BaselineEntry{Value: "fp"}),
		"unknown kind":               ok(store.BaselineKey{Kind: "tools", Name: "x"}, store.BaselineEntry{Value: "fp"}),
		"kind in another case":       ok(store.BaselineKey{Kind: "Tool", Name: "x"}, store.BaselineEntry{Value: "fp"}),
		"instructions with a name":   ok(store.BaselineKey{Kind: store.KindInstructions, Name: "x"}, store.BaselineEntry{Value: "fp"}),
		"NUL in a name":              ok(tool("a\x00b"), store.BaselineEntry{Value: "fp"}),
		"invalid UTF-8 in a name":    ok(tool("a\xffb"), store.BaselineEntry{Value: "fp"}),
		"NUL in a value":             ok(tool("x"), store.BaselineEntry{Value: "f\x00p"}),
		"invalid UTF-8 in a value":   ok(tool("x"), store.BaselineEntry{Value: "f\xc3p"}),
		"NUL in a prompt's name":     ok(store.BaselineKey{Kind: store.KindPrompt, Name: "\x00"}, store.BaselineEntry{Value: "fp"}),
		"bad UTF-8 in a marker name": ok(store.BaselineKey{Kind: store.KindMarker, Name: "\xed\xa0\x80"}, store.BaselineEntry{Value: "fp"}),
	}
}

// What no store can hold is refused with ErrInvalid, and nothing of the
// batch is written.
func testBaselineInvalid(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putServer(t, s, "srv")
	get(s.SaveBaseline(ctx, "srv", tools(map[string]string{"kept": "fp"}))).ok(t)
	v := get(s.BaselineVersion(ctx, "srv")).ok(t)
	for name, b := range invalidBaselines() {
		t.Run(name, func(t *testing.T) {
			if err := b.Validate(); err == nil {
				t.Fatal("Baseline.Validate accepts it")
			}
			_, err := s.SaveBaseline(ctx, "srv", b)
			wantErr(t, err, store.ErrInvalid)
			_, err = s.ReplaceBaseline(ctx, "srv", b)
			wantErr(t, err, store.ErrInvalid)
			_, _, err = s.ObserveListing(ctx, store.Observation{ServerID: "srv", Listing: "L", SeenBy: "i", Entries: b})
			wantErr(t, err, store.ErrInvalid)
			// Checked before the server: a missing one is not the answer.
			_, err = s.SaveBaseline(ctx, "ghost", b)
			wantErr(t, err, store.ErrInvalid)
		})
	}
	got := get(s.GetBaseline(ctx, "srv")).ok(t)
	if !equalBaselines(got, tools(map[string]string{"kept": "fp"})) {
		t.Fatalf("refused saves wrote something: %v", got)
	}
	if v2 := get(s.BaselineVersion(ctx, "srv")).ok(t); v2 != v {
		t.Fatalf("refused saves moved the version %d -> %d", v, v2)
	}
	if obs := get(s.OpenObservations(ctx, "srv", true)).ok(t); len(obs) != 0 {
		t.Fatalf("refused observations were recorded: %+v", obs)
	}
}

// ReplaceBaseline removes the old entries, writes the new ones and bumps
// the version exactly once, whatever it replaces.
func testReplaceBaseline(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	_, err := s.ReplaceBaseline(ctx, "ghost", tools(map[string]string{"a": "1"}))
	wantErr(t, err, store.ErrNotFound)
	putServer(t, s, "srv")
	putServer(t, s, "keep")
	get(s.SaveBaseline(ctx, "keep", tools(map[string]string{"a": "keep-a"}))).ok(t)
	old := withInstructions(map[string]string{"a": "old-a", "b": "old-b"}, "old-instr")
	get(s.SaveBaseline(ctx, "srv", old)).ok(t)
	v := get(s.BaselineVersion(ctx, "srv")).ok(t)

	repl := store.Baseline{
		tool("a"):                           {Value: "new-a", Contract: []byte(`{"name":"a"}`)},
		tool("c"):                           {Value: "new-c"},
		{Kind: store.KindPrompt, Name: "b"}: {Value: "prompt-b"},
	}
	if n := get(s.ReplaceBaseline(ctx, "srv", repl)).ok(t); n != 3 {
		t.Fatalf("ReplaceBaseline cleared %d, want 3", n)
	}
	if got := get(s.GetBaseline(ctx, "srv")).ok(t); !equalBaselines(got, repl) {
		t.Fatalf("after ReplaceBaseline: %v, want %v", got, repl)
	}
	if v2 := get(s.BaselineVersion(ctx, "srv")).ok(t); v2 != v+1 {
		t.Fatalf("version %d -> %d, want exactly one bump", v, v2)
	}
	// The same baseline again is still a re-trust: one bump.
	if n := get(s.ReplaceBaseline(ctx, "srv", repl)).ok(t); n != 3 {
		t.Fatalf("second ReplaceBaseline cleared %d, want 3", n)
	}
	if v3 := get(s.BaselineVersion(ctx, "srv")).ok(t); v3 != v+2 {
		t.Fatalf("version %d after two replaces from %d", v3, v)
	}
	// An empty one leaves an empty (recorded) baseline.
	if n := get(s.ReplaceBaseline(ctx, "srv", nil)).ok(t); n != 3 {
		t.Fatalf("emptying ReplaceBaseline cleared %d, want 3", n)
	}
	if got := get(s.GetBaseline(ctx, "srv")).ok(t); got == nil || len(got) != 0 {
		t.Fatalf("after an empty replace: %#v", got)
	}
	if got := get(s.GetBaseline(ctx, "keep")).ok(t); !equalBaselines(got, tools(map[string]string{"a": "keep-a"})) {
		t.Fatalf("replacing one server's baseline touched another's: %v", got)
	}
	if v := get(s.GetServer(ctx, "srv")).ok(t).BaselineVersion; v != get(s.BaselineVersion(ctx, "srv")).ok(t) {
		t.Fatalf("Server.BaselineVersion %d disagrees with BaselineVersion", v)
	}
}
