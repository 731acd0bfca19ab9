package stored

import (
	"fmt"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/store"
)

// Kind is a kind of forwarded item pinned like a tool, in the same
// baseline (store.KindPrompt, store.KindTemplate).
type Kind int

// The kinds. NumKinds counts them: arrays indexed by Kind have NumKinds
// elements.
const (
	Prompt Kind = iota
	Template
	NumKinds
)

// Noun names the kind in diagnostics and errors.
func (k Kind) Noun() string {
	if k == Prompt {
		return "prompt"
	}
	return "resource template"
}

// Store is the kind's baseline kind.
func (k Kind) Store() store.BaselineKind {
	if k == Prompt {
		return store.KindPrompt
	}
	return store.KindTemplate
}

// Change is the kind's pin.Change kind.
func (k Kind) Change() string {
	if k == Prompt {
		return pin.ChangePrompt
	}
	return pin.ChangeTemplate
}

// Marker is the key of the marker saying the kind was pinned.
func (k Kind) Marker() store.BaselineKey {
	if k == Prompt {
		return store.BaselineKey{Kind: store.KindMarker, Name: store.MarkerPrompts}
	}
	return store.BaselineKey{Kind: store.KindMarker, Name: store.MarkerTemplates}
}

// Items is the trusted part of a baseline for one kind.
type Items struct {
	// Pinned says the kind was pinned (its Kind.Marker is stored).
	Pinned bool
	// Base holds the pins by identity: a prompt's name, a template's URI
	// template.
	Base pin.Baseline
}

// Baseline is a parsed stored baseline.
type Baseline struct {
	// Tools are the tool pins, by tool name.
	Tools pin.Baseline
	// Instructions is the fingerprint of the server's instructions, and
	// HasInstructions says it was stored.
	Instructions    string
	HasInstructions bool
	// Items are the pins of prompts and resource templates, by Kind.
	Items [NumKinds]Items
}

// ParseBaseline reads a stored baseline: the tool pins, the instructions
// fingerprint, and the pins of prompts and resource templates. A damaged
// entry is an error: a damaged baseline is never treated as absent. A
// marker this build does not know is ignored (a newer build's). The maps
// of the result are non-nil.
func ParseBaseline(m store.Baseline) (Baseline, error) {
	b := Baseline{Tools: make(pin.Baseline, len(m))}
	for k := range b.Items {
		b.Items[k].Base = pin.Baseline{}
	}
	for key, e := range m {
		switch key.Kind {
		case store.KindInstructions:
			b.Instructions, b.HasInstructions = e.Value, true
		case store.KindMarker:
			for k := Kind(0); k < NumKinds; k++ {
				if key == k.Marker() {
					b.Items[k].Pinned = true
				}
			}
		case store.KindTool:
			p, err := pin.ParsePin(e.Value)
			if err != nil {
				return Baseline{}, fmt.Errorf("tool %s: %w", pin.SanitizeName(key.Name), err)
			}
			b.Tools[key.Name] = p
		case store.KindPrompt, store.KindTemplate:
			k := Prompt
			if key.Kind == store.KindTemplate {
				k = Template
			}
			p, err := pin.ParsePin(e.Value)
			if err != nil {
				return Baseline{}, fmt.Errorf("%s %s: %w", k.Noun(), pin.SanitizeName(key.Name), err)
			}
			b.Items[k].Base[key.Name] = p
		default:
			return Baseline{}, fmt.Errorf("entry %s: unknown kind", pin.SanitizeName(string(key.Kind)))
		}
	}
	return b, nil
}
