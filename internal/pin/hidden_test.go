package pin

import (
	"encoding/json"
	"strings"
	"testing"
)

// What a model is shown of a contract is sanitized; what is fingerprinted
// is the text the server sent. So a contract that differs only by a
// character a person cannot see (a zero-width space, a bidi control, a tag
// character) has another fingerprint: a server that adds hidden characters
// after trust has drifted. These are the places a sanitized view hides.
func TestFingerprintSeesHiddenCharacters(t *testing.T) {
	schema := func(prop, enum, def, comment, title string) json.RawMessage {
		b, err := json.Marshal(map[string]any{"type": "object", "$comment": comment, "properties": map[string]any{
			prop:   map[string]any{"type": "string", "enum": []any{"a", enum}, "default": def},
			"memo": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"title": title}}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	const zw, rlo, tag = "\u200B", "\u202E", "\U000E0069"
	base := sampleContract()
	base.InputSchema = schema("to", "b", "a", "c", "X")
	seen := map[string]string{mustTool(t, base): "base"}
	for name, in := range map[string]json.RawMessage{
		"zero-width in a property name": schema("to"+zw, "b", "a", "c", "X"),
		"zero-width in an enum value":   schema("to", "b"+zw, "a", "c", "X"),
		"zero-width in a default":       schema("to", "b", "a"+zw, "c", "X"),
		"zero-width in a $comment":      schema("to", "b", "a", "c"+zw, "X"),
		"tag in a nested title":         schema("to", "b", "a", "c", "X"+tag),
		"bidi in a property name":       schema("to"+rlo, "b", "a", "c", "X"),
	} {
		c := base
		c.InputSchema = in
		fp := mustTool(t, c)
		if prev, dup := seen[fp]; dup {
			t.Errorf("%s: fingerprint equals that of %s", name, prev)
		}
		seen[fp] = name
	}
	for name, change := range map[string]func(*Contract){
		"zero-width in the description":    func(c *Contract) { c.Description += zw },
		"tag in the title":                 func(c *Contract) { c.Title += tag },
		"zero-width in the name":           func(c *Contract) { c.Name += zw },
		"zero-width in the output schema":  func(c *Contract) { c.OutputSchema = json.RawMessage(`{"description":"o` + zw + `"}`) },
		"zero-width in the annotations":    func(c *Contract) { c.Annotations = json.RawMessage(`{"title":"t` + zw + `"}`) },
		"escaped zero-width in the schema": func(c *Contract) { c.InputSchema = json.RawMessage(`{"$comment":"c\u200b"}`) },
	} {
		c := base
		change(&c)
		fp := mustTool(t, c)
		if prev, dup := seen[fp]; dup {
			t.Errorf("%s: fingerprint equals that of %s", name, prev)
		}
		seen[fp] = name
	}

	// The escape and the character are one string: one fingerprint, and
	// the canonical document holds the character itself.
	raw, esc := base, base
	raw.InputSchema = json.RawMessage(`{"$comment":"c` + zw + `"}`)
	esc.InputSchema = json.RawMessage(`{"$comment":"c\u200b"}`)
	if mustTool(t, raw) != mustTool(t, esc) {
		t.Error("a JSON escape and its character fingerprint differently")
	}
	doc, err := CanonicalContract(esc, true)
	if err != nil || !strings.Contains(string(doc), "c"+zw) {
		t.Errorf("canonical document %q (%v) lost the hidden character", doc, err)
	}

	pbase := mustPrompt(t, samplePrompt())
	pseen := map[string]string{pbase: "base"}
	for name, change := range map[string]func(*PromptContract){
		"zero-width in an argument name":   func(c *PromptContract) { c.Arguments[0].Name += zw },
		"bidi in an argument name":         func(c *PromptContract) { c.Arguments[0].Name = rlo + c.Arguments[0].Name },
		"tag in an argument description":   func(c *PromptContract) { c.Arguments[1].Description += tag },
		"zero-width in an argument title":  func(c *PromptContract) { c.Arguments[0].Title += zw },
		"zero-width in the prompt's title": func(c *PromptContract) { c.Title += zw },
	} {
		c := samplePrompt()
		c.Arguments = append([]PromptArgument(nil), c.Arguments...)
		change(&c)
		fp := mustPrompt(t, c)
		if prev, dup := pseen[fp]; dup {
			t.Errorf("prompt %s: fingerprint equals that of %s", name, prev)
		}
		pseen[fp] = name
	}

	tmpl := sampleTemplate()
	tmpl.URITemplate = "file:///" + zw + "{path}"
	if mustTemplate(t, tmpl) == mustTemplate(t, sampleTemplate()) {
		t.Error("template: a zero-width character in the URI template left the fingerprint unchanged")
	}
}
