package stored

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/pin"
	"github.com/gatehouse-dev/gatehouse/store"
)

// TestParseBaselineNamespaces: keys are sorted into tools, instructions,
// prompts and templates; unknown keys with a space are ignored; a damaged
// prompt pin is an error, never an absent pin.
func TestParseBaselineNamespaces(t *testing.T) {
	fp := strings.Repeat("a", 64)
	tb, err := ParseBaseline(map[string]string{
		"search": fp, "": "instr", "prompt greet": fp, "prompt ": fp, store.PromptsPinnedKey: store.PinnedMarker,
		"resource-template x://{a}": fp, "future kind": "anything",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.Tools) != 1 || tb.Tools["search"].Fingerprint != fp || tb.Instructions != "instr" || !tb.HasInstructions ||
		!tb.Items[Prompt].Pinned || len(tb.Items[Prompt].Base) != 2 || tb.Items[Template].Pinned ||
		tb.Items[Template].Base["x://{a}"].Fingerprint != fp {
		t.Fatalf("parsed %+v", tb)
	}
	if _, err := ParseBaseline(map[string]string{"prompt greet": "damaged"}); !errors.Is(err, pin.ErrBadPin) {
		t.Fatalf("damaged prompt pin: %v", err)
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
	for key, want := range map[string]string{
		"search":                    "tool search",
		"resource-template x://{a}": "resource template " + pin.SanitizeName("x://{a}"),
	} {
		_, err := ParseBaseline(map[string]string{key: "damaged", "ok": fp})
		if !errors.Is(err, pin.ErrBadPin) || !strings.HasPrefix(err.Error(), want+": ") {
			t.Errorf("%q: %v", key, err)
		}
	}
}

func TestKinds(t *testing.T) {
	for k, want := range map[Kind][3]string{
		Prompt:   {"prompt", store.PromptKeyPrefix, store.PromptsPinnedKey},
		Template: {"resource template", store.TemplateKeyPrefix, store.TemplatesPinnedKey},
	} {
		if got := [3]string{k.Noun(), k.KeyPrefix(), k.PinnedKey()}; got != want {
			t.Errorf("kind %d: %q, want %q", k, got, want)
		}
		// Every key of the kind is reserved: no tool name can take it.
		if !Reserved(k.KeyPrefix()+"x") || !Reserved(k.PinnedKey()) {
			t.Errorf("kind %d: keys not reserved", k)
		}
	}
	if Reserved("search") || Reserved("") || !Reserved("a b") {
		t.Error("Reserved")
	}
}

// BaselineStrings and SeedKind write what ParseBaseline reads back.
func TestSeedRoundTrip(t *testing.T) {
	tools, _ := ToolPrints(bank())
	prompts, _ := PromptPrints(greetings())
	seed := BaselineStrings(pin.BaselineOf(tools))
	if len(seed) != 4 {
		t.Fatalf("seed %v", seed)
	}
	seed[store.InstructionsKey] = pin.InstructionsFingerprint("Be helpful.")
	SeedKind(seed, Prompt, prompts, nil)
	SeedKind(seed, Template, nil, nil) // listed, none: pinned empty
	if seed[store.PromptsPinnedKey] != store.PinnedMarker || seed[store.TemplatesPinnedKey] != store.PinnedMarker || len(seed) != 4+1+2+2 {
		t.Fatalf("seed %v", seed)
	}
	tb, err := ParseBaseline(seed)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(tb.Tools, pin.BaselineOf(tools)) || !maps.Equal(tb.Items[Prompt].Base, pin.BaselineOf(prompts)) ||
		!tb.Items[Prompt].Pinned || !tb.Items[Template].Pinned || len(tb.Items[Template].Base) != 0 ||
		tb.Instructions != pin.InstructionsFingerprint("Be helpful.") {
		t.Fatalf("parsed %+v", tb)
	}

	// A kind already pinned in have is left alone; one that is not is
	// added (first sight on a server trusted before it was pinned).
	more := map[string]string{}
	SeedKind(more, Prompt, prompts, seed)
	if len(more) != 0 {
		t.Fatalf("re-seeded a pinned kind: %v", more)
	}
	SeedKind(more, Prompt, prompts, map[string]string{"search": "x"})
	if len(more) != 3 || more[store.PromptKeyPrefix+"greet"] != seed[store.PromptKeyPrefix+"greet"] {
		t.Fatalf("first sight: %v", more)
	}
}
