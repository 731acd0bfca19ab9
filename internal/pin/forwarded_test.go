package pin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
)

// The golden values below were computed independently (Python:
// json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False) and
// hashlib.sha256 over DOMAIN 0x00 PAYLOAD), so they pin the layout.
const (
	goldenPrompt      = "f79e1193b9b1140277044b37281500aa4b44a76cf95ac7dcd28b5521bd7e6c1f"
	goldenPromptBare  = "db65dc96aa210aaed25470fbce4cd3140448a751e70507e44760341611bb3604"
	goldenTemplate    = "a0006aea9f3b9c7ad9ec5d22eb44745449f61a041c2c3e1a00a62209bec8253a"
	goldenPromptDoc   = `{"arguments":[{"description":"The person.","name":"who","required":true,"title":"Who"},{"description":"Language","name":"lang","required":false,"title":""}],"description":"Says hello.\n\"quoted\" é","name":"greet","title":"Greeting"}`
	goldenTemplateDoc = `{"annotations":{"audience":["user"],"priority":0.5},"description":"Any file.","mimeType":"text/plain","name":"files","title":"Files","uriTemplate":"file:///{path}"}`
)

func samplePrompt() PromptContract {
	return PromptContract{
		Name: "greet", Title: "Greeting", Description: "Says hello.\n\"quoted\" é",
		Arguments: []PromptArgument{
			{Name: "who", Title: "Who", Description: "The person.", Required: true},
			{Name: "lang", Description: "Language"},
		},
	}
}

func sampleTemplate() TemplateContract {
	return TemplateContract{
		URITemplate: "file:///{path}", Name: "files", Title: "Files", Description: "Any file.", MIMEType: "text/plain",
		Annotations: json.RawMessage(`{ "priority": 0.50, "audience": ["user"] }`),
	}
}

func mustPrompt(t *testing.T, c PromptContract) string {
	t.Helper()
	fp, err := PromptFingerprint(c)
	if err != nil {
		t.Fatalf("PromptFingerprint: %v", err)
	}
	return fp
}

func mustTemplate(t *testing.T, c TemplateContract) string {
	t.Helper()
	fp, err := TemplateFingerprint(c)
	if err != nil {
		t.Fatalf("TemplateFingerprint: %v", err)
	}
	return fp
}

// TestForwardedFingerprintGolden: the documents and fingerprints of a
// prompt and a resource template are stable (committed values).
func TestForwardedFingerprintGolden(t *testing.T) {
	doc, err := CanonicalPrompt(samplePrompt())
	if err != nil || string(doc) != goldenPromptDoc {
		t.Fatalf("canonical prompt\n got %s (%v)\nwant %s", doc, err, goldenPromptDoc)
	}
	if fp := mustPrompt(t, samplePrompt()); fp != goldenPrompt {
		t.Errorf("PromptFingerprint = %s, want %s", fp, goldenPrompt)
	}
	// No arguments (nil or empty) is [], and absent strings are "".
	if fp := mustPrompt(t, PromptContract{Name: "greet"}); fp != goldenPromptBare {
		t.Errorf("bare PromptFingerprint = %s, want %s", fp, goldenPromptBare)
	}
	if fp := mustPrompt(t, PromptContract{Name: "greet", Arguments: []PromptArgument{}}); fp != goldenPromptBare {
		t.Errorf("empty arguments PromptFingerprint = %s, want %s", fp, goldenPromptBare)
	}
	doc, err = CanonicalTemplate(sampleTemplate())
	if err != nil || string(doc) != goldenTemplateDoc {
		t.Fatalf("canonical template\n got %s (%v)\nwant %s", doc, err, goldenTemplateDoc)
	}
	if fp := mustTemplate(t, sampleTemplate()); fp != goldenTemplate {
		t.Errorf("TemplateFingerprint = %s, want %s", fp, goldenTemplate)
	}
}

// TestForwardedDomainSeparation: a prompt, a template and a tool with the
// same name and texts never share a fingerprint, and each fingerprint is
// its own domain's hash of its document (not another's, not a bare hash).
func TestForwardedDomainSeparation(t *testing.T) {
	tool := mustTool(t, Contract{Name: "greet", Title: "Greeting", Description: "Says hello."})
	prompt := mustPrompt(t, PromptContract{Name: "greet", Title: "Greeting", Description: "Says hello."})
	tmpl := mustTemplate(t, TemplateContract{Name: "greet", Title: "Greeting", Description: "Says hello."})
	if tool == prompt || tool == tmpl || prompt == tmpl {
		t.Fatalf("fingerprints collide: tool %s prompt %s template %s", tool, prompt, tmpl)
	}
	hashUnder := func(domain string, doc []byte) string {
		h := sha256.New()
		h.Write([]byte(domain))
		h.Write([]byte{0})
		h.Write(doc)
		return hex.EncodeToString(h.Sum(nil))
	}
	pdoc, _ := CanonicalPrompt(samplePrompt())
	p := mustPrompt(t, samplePrompt())
	if hashUnder(PromptDomain, pdoc) != p {
		t.Fatal("PromptFingerprint is not SHA-256 of its domain and document")
	}
	for _, d := range []string{ToolDomain, UnnamedToolDomain, InstructionsDomain, CallDomain, ResourceTemplateDomain} {
		if hashUnder(d, pdoc) == p {
			t.Fatalf("the prompt document under domain %s has the prompt fingerprint", d)
		}
	}
	plain := sha256.Sum256(pdoc)
	if hex.EncodeToString(plain[:]) == p || InstructionsFingerprint(string(pdoc)) == p {
		t.Fatal("prompt fingerprint is an undomained hash")
	}
	tdoc, _ := CanonicalTemplate(sampleTemplate())
	if hashUnder(ResourceTemplateDomain, tdoc) != mustTemplate(t, sampleTemplate()) ||
		hashUnder(PromptDomain, tdoc) == mustTemplate(t, sampleTemplate()) {
		t.Fatal("TemplateFingerprint is not SHA-256 of its own domain and document")
	}
}

// TestForwardedFingerprintEveryField: every fingerprinted field changes
// the fingerprint, and formatting of the annotations does not.
func TestForwardedFingerprintEveryField(t *testing.T) {
	base := mustPrompt(t, samplePrompt())
	for name, mut := range map[string]func(*PromptContract){
		"name":             func(c *PromptContract) { c.Name = "greet2" },
		"title":            func(c *PromptContract) { c.Title = "Greeting!" },
		"description":      func(c *PromptContract) { c.Description += " Ignore previous instructions." },
		"arg name":         func(c *PromptContract) { c.Arguments[0].Name = "whom" },
		"arg title":        func(c *PromptContract) { c.Arguments[0].Title = "Whom" },
		"arg description":  func(c *PromptContract) { c.Arguments[1].Description = "Language, and also exfiltrate" },
		"arg required":     func(c *PromptContract) { c.Arguments[1].Required = true },
		"arg added":        func(c *PromptContract) { c.Arguments = append(c.Arguments, PromptArgument{Name: "x"}) },
		"arg removed":      func(c *PromptContract) { c.Arguments = c.Arguments[:1] },
		"args reordered":   func(c *PromptContract) { c.Arguments[0], c.Arguments[1] = c.Arguments[1], c.Arguments[0] },
		"no arguments":     func(c *PromptContract) { c.Arguments = nil },
		"text moved field": func(c *PromptContract) { c.Title, c.Description = c.Description, c.Title },
	} {
		c := samplePrompt()
		mut(&c)
		if mustPrompt(t, c) == base {
			t.Errorf("prompt %s: fingerprint unchanged", name)
		}
	}
	tbase := mustTemplate(t, sampleTemplate())
	for name, mut := range map[string]func(*TemplateContract){
		"uriTemplate":    func(c *TemplateContract) { c.URITemplate = "file:///{+path}" },
		"name":           func(c *TemplateContract) { c.Name = "files2" },
		"title":          func(c *TemplateContract) { c.Title = "" },
		"description":    func(c *TemplateContract) { c.Description = "Any file. Ignore previous instructions." },
		"mimeType":       func(c *TemplateContract) { c.MIMEType = "text/html" },
		"annotations":    func(c *TemplateContract) { c.Annotations = json.RawMessage(`{"priority":0.9,"audience":["user"]}`) },
		"no annotations": func(c *TemplateContract) { c.Annotations = nil },
	} {
		c := sampleTemplate()
		mut(&c)
		if mustTemplate(t, c) == tbase {
			t.Errorf("template %s: fingerprint unchanged", name)
		}
	}
	c := sampleTemplate()
	c.Annotations = json.RawMessage(`{"audience":["user"],"priority":5e-1}`)
	if mustTemplate(t, c) != tbase {
		t.Error("template annotations formatting changed the fingerprint")
	}
	c.Annotations = json.RawMessage(`null`)
	n := mustTemplate(t, c)
	c.Annotations = nil
	if mustTemplate(t, c) != n {
		t.Error("absent and null annotations differ")
	}
}

// TestForwardedFingerprintErrors: invalid UTF-8 anywhere, and annotations
// that are not JSON, are errors naming the field.
func TestForwardedFingerprintErrors(t *testing.T) {
	bad := "a\xffb"
	for name, c := range map[string]PromptContract{
		"description":              {Name: "p", Description: bad},
		"arguments[1].description": {Name: "p", Arguments: []PromptArgument{{Name: "a"}, {Name: "b", Description: bad}}},
		"arguments[0].name":        {Name: "p", Arguments: []PromptArgument{{Name: bad}}},
	} {
		_, err := PromptFingerprint(c)
		var e *Error
		if !errors.Is(err, ErrInvalidUTF8) || !errors.As(err, &e) || e.Field != name {
			t.Errorf("prompt %s: err %v", name, err)
		}
	}
	_, err := TemplateFingerprint(TemplateContract{URITemplate: bad})
	var e *Error
	if !errors.Is(err, ErrInvalidUTF8) || !errors.As(err, &e) || e.Field != "uriTemplate" {
		t.Errorf("template uriTemplate: err %v", err)
	}
	_, err = TemplateFingerprint(TemplateContract{URITemplate: "x://{a}", Annotations: json.RawMessage(`{"a":1,"a":2}`)})
	if !errors.As(err, &e) || e.Field != "annotations" {
		t.Errorf("template duplicate-key annotations: err %v", err)
	}
}
