package stored

import (
	"fmt"
	"strings"

	"github.com/gatehouse-dev/gatehouse/pin"
	"github.com/gatehouse-dev/gatehouse/store"
)

// Kind is a kind of forwarded item pinned like a tool, in the same
// baseline under keys with a space (see store.PromptKeyPrefix).
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

// KeyPrefix starts the baseline key of one item of the kind.
func (k Kind) KeyPrefix() string {
	if k == Prompt {
		return store.PromptKeyPrefix
	}
	return store.TemplateKeyPrefix
}

// PinnedKey is the baseline key saying the kind was pinned.
func (k Kind) PinnedKey() string {
	if k == Prompt {
		return store.PromptsPinnedKey
	}
	return store.TemplatesPinnedKey
}

// Reserved reports whether a baseline key (or a tool name) is in the
// namespace of non-tool entries: it contains a space, which no MCP tool
// name can.
func Reserved(s string) bool { return strings.Contains(s, " ") }

// Items is the trusted part of a baseline for one kind.
type Items struct {
	// Pinned says the kind was pinned (its Kind.PinnedKey is stored).
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
	// HasInstructions says it was stored (store.InstructionsKey).
	Instructions    string
	HasInstructions bool
	// Items are the pins of prompts and resource templates, by Kind.
	Items [NumKinds]Items
}

// ParseBaseline reads a stored baseline: the tool pins, the instructions
// fingerprint, and the pins of prompts and resource templates. A damaged
// entry is an error: a damaged baseline is never treated as absent. A key
// with a space that this build does not know is ignored (a newer build's).
// The maps of the result are non-nil.
func ParseBaseline(m map[string]string) (Baseline, error) {
	b := Baseline{Tools: make(pin.Baseline, len(m))}
	for k := range b.Items {
		b.Items[k].Base = pin.Baseline{}
	}
outer:
	for key, s := range m {
		if key == store.InstructionsKey {
			b.Instructions, b.HasInstructions = s, true
			continue
		}
		for k := Kind(0); k < NumKinds; k++ {
			if key == k.PinnedKey() {
				b.Items[k].Pinned = true
				continue outer
			}
			if name, ok := strings.CutPrefix(key, k.KeyPrefix()); ok {
				p, err := pin.ParsePin(s)
				if err != nil {
					return Baseline{}, fmt.Errorf("%s %s: %w", k.Noun(), pin.SanitizeName(name), err)
				}
				b.Items[k].Base[name] = p
				continue outer
			}
		}
		if Reserved(key) {
			continue
		}
		p, err := pin.ParsePin(s)
		if err != nil {
			return Baseline{}, fmt.Errorf("tool %s: %w", pin.SanitizeName(key), err)
		}
		b.Tools[key] = p
	}
	return b, nil
}

// BaselineStrings is the stored form of the tool pins of a baseline.
func BaselineStrings(b pin.Baseline) map[string]string {
	m := make(map[string]string, len(b)+1)
	for name, p := range b {
		m[name] = p.String()
	}
	return m
}

// SeedKind adds the pins of one listed kind (its prints, by identity) and
// the kind's marker to a baseline about to be saved, unless have, the
// baseline already stored, pinned the kind: the first sight of a kind on
// a server trusted before it was pinned. With have nil, the kind is added.
func SeedKind(seed map[string]string, k Kind, prints []pin.ToolPrint, have map[string]string) {
	if _, ok := have[k.PinnedKey()]; ok {
		return
	}
	for name, p := range pin.BaselineOf(prints) {
		seed[k.KeyPrefix()+name] = p.String()
	}
	seed[k.PinnedKey()] = store.PinnedMarker
}
