package pin

import "encoding/json"

// Change is one difference between a server's trusted baseline and a
// listing of it, as `gatehouse drift list --json` prints it and the store
// keeps it (store.Observation.Changes is a JSON array of them).
type Change struct {
	// Kind is ChangeTool, ChangePrompt, ChangeTemplate,
	// ChangeInstructions or ChangeSkill.
	Kind string `json:"kind"`
	// Name is the item's identity on its server (a tool's or prompt's
	// name, a template's URI template, a skill's name within its plugin;
	// "" for instructions), exactly as
	// published: never print it to a person or a model unescaped.
	Name string `json:"name"`
	// Change is ChangeChanged, ChangeAdded or ChangeRemoved.
	Change string `json:"change"`
	// Before is the contract as trusted and After as observed: JSON
	// objects (ToolView, PromptView, TemplateView, FingerprintView), or
	// null for an item added (Before) or removed (After). A Before
	// recorded before contracts were kept holds only its "fingerprint".
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// Kinds and changes of a Change.
const (
	ChangeTool         = "tool"
	ChangePrompt       = "prompt"
	ChangeTemplate     = "template"
	ChangeInstructions = "instructions"
	// ChangeSkill: a skill of a plugin (package skills, through package trust), in
	// the baseline its plugin's skills are pinned in.
	ChangeSkill = "skill"

	ChangeChanged = "changed"
	ChangeAdded   = "added"
	ChangeRemoved = "removed"
)

// toolView is a tool's contract as a Change carries it: the raw strings and
// schemas as the server published them, and the fingerprint.
type toolView struct {
	Fingerprint  string          `json:"fingerprint"`
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

type promptArgView struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

type promptView struct {
	Fingerprint string          `json:"fingerprint"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	Arguments   []promptArgView `json:"arguments,omitempty"`
}

type templateView struct {
	Fingerprint string          `json:"fingerprint"`
	URITemplate string          `json:"uriTemplate"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	MIMEType    string          `json:"mimeType,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
}

// validRaw keeps raw when it is valid JSON, else drops it (a view is for
// reading; the fingerprint already covers what was published).
func validRaw(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || !json.Valid(raw) {
		return nil
	}
	return raw
}

func mustView(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil { // only strings and valid raw JSON: cannot fail
		return json.RawMessage(`null`)
	}
	return b
}

// ToolView is the JSON object a Change shows for a tool contract c with
// fingerprint fp.
func ToolView(c Contract, fp string) json.RawMessage {
	return mustView(toolView{Fingerprint: fp, Name: c.Name, Title: c.Title, Description: c.Description,
		InputSchema: validRaw(c.InputSchema), OutputSchema: validRaw(c.OutputSchema), Annotations: validRaw(c.Annotations)})
}

// PromptView is the JSON object a Change shows for a prompt contract.
func PromptView(c PromptContract, fp string) json.RawMessage {
	v := promptView{Fingerprint: fp, Name: c.Name, Title: c.Title, Description: c.Description}
	for _, a := range c.Arguments {
		v.Arguments = append(v.Arguments, promptArgView(a))
	}
	return mustView(v)
}

// TemplateView is the JSON object a Change shows for a resource template
// contract.
func TemplateView(c TemplateContract, fp string) json.RawMessage {
	return mustView(templateView{Fingerprint: fp, URITemplate: c.URITemplate, Name: c.Name, Title: c.Title,
		Description: c.Description, MIMEType: c.MIMEType, Annotations: validRaw(c.Annotations)})
}

// FingerprintView is the JSON object a Change shows for what is known only
// by its fingerprint: instructions (their text is never kept), or a
// contract trusted before contracts were kept.
func FingerprintView(fp string) json.RawMessage {
	return mustView(struct {
		Fingerprint string `json:"fingerprint"`
	}{fp})
}
