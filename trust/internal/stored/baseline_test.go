package stored

import (
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/store"
)

func key(k store.BaselineKind, name string) store.BaselineKey {
	return store.BaselineKey{Kind: k, Name: name}
}

// TestParseBaselineKinds: entries are sorted into tools, instructions,
// prompts and templates by their kind, whatever their names: a tool named
// like a prompt's old key, or with a space, is a tool; an unknown marker
// is ignored; a damaged pin is an error, never an absent pin.
func TestParseBaselineKinds(t *testing.T) {
	fp := strings.Repeat("a", 64)
	tb, err := ParseBaseline(store.Baseline{
		key(store.KindTool, "search"):         {Value: fp},
		key(store.KindTool, "prompt greet"):   {Value: fp},
		key(store.KindTool, "send money now"): {Value: fp},
		key(store.KindInstructions, ""):       {Value: "instr"},
		key(store.KindPrompt, "greet"):        {Value: fp},
		key(store.KindPrompt, ""):             {Value: fp},
		Prompt.Marker():                       {Value: store.PinnedMarker},
		key(store.KindTemplate, "x://{a}"):    {Value: fp},
		key(store.KindMarker, "future-kind"):  {Value: "anything"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.Tools) != 3 || tb.Tools["prompt greet"].Fingerprint != fp || tb.Tools["send money now"].Fingerprint != fp ||
		tb.Instructions != "instr" || !tb.HasInstructions ||
		!tb.Items[Prompt].Pinned || len(tb.Items[Prompt].Base) != 2 || tb.Items[Template].Pinned ||
		tb.Items[Template].Base["x://{a}"].Fingerprint != fp {
		t.Fatalf("parsed %+v", tb)
	}
	if _, err := ParseBaseline(store.Baseline{key(store.KindPrompt, "greet"): {Value: "damaged"}}); !errors.Is(err, pin.ErrBadPin) {
		t.Fatalf("damaged prompt pin: %v", err)
	}
	if _, err := ParseBaseline(store.Baseline{key("widget", "x"): {Value: fp}}); err == nil || !strings.Contains(err.Error(), "unknown kind") {
		t.Fatalf("unknown kind: %v", err)
	}
}

func TestParseBaselineEmptyAndDamaged(t *testing.T) {
	tb, err := ParseBaseline(nil)
	if err != nil || tb.Tools == nil || len(tb.Tools) != 0 || tb.HasInstructions {
		t.Fatalf("empty: %+v, %v", tb, err)
	}
	for k := range tb.Items {
		if tb.Items[k].Base == nil || tb.Items[k].Pinned {
			t.Fatalf("empty kind %d: %+v", k, tb.Items[k])
		}
	}
	fp := strings.Repeat("b", 64)
	for k, want := range map[store.BaselineKey]string{
		key(store.KindTool, "search"):      "tool search",
		key(store.KindTemplate, "x://{a}"): "resource template " + pin.SanitizeName("x://{a}"),
	} {
		_, err := ParseBaseline(store.Baseline{k: {Value: "damaged"}, key(store.KindTool, "ok"): {Value: fp}})
		if !errors.Is(err, pin.ErrBadPin) || !strings.HasPrefix(err.Error(), want+": ") {
			t.Errorf("%v: %v", k, err)
		}
	}
}

func TestKinds(t *testing.T) {
	for k, want := range map[Kind][4]string{
		Prompt:   {"prompt", string(store.KindPrompt), store.MarkerPrompts, pin.ChangePrompt},
		Template: {"resource template", string(store.KindTemplate), store.MarkerTemplates, pin.ChangeTemplate},
	} {
		if got := [4]string{k.Noun(), string(k.Store()), k.Marker().Name, k.Change()}; got != want || k.Marker().Kind != store.KindMarker {
			t.Errorf("kind %d: %q, want %q", k, got, want)
		}
	}
}
