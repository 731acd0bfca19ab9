package pin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// Domains of the fingerprints of what a server publishes besides tools. Like
// the tool domains, each is written followed by one 0x00 byte before the
// payload, so a prompt, a resource template and a tool never share a
// fingerprint, even when their names and texts are equal.
const (
	PromptDomain           = "gatehouse/prompt-contract/v1"
	ResourceTemplateDomain = "gatehouse/resource-template-contract/v1"
)

// PromptArgument is one argument of a prompt, as fingerprinted.
type PromptArgument struct {
	Name        string
	Title       string
	Description string
	Required    bool
}

// PromptContract is the part of an MCP prompt that is fingerprinted: what a
// caller (and so a model) reads of it. Its messages are not part of it:
// they are the prompt's output, like a tool's result. The arguments are
// fingerprinted in the order the server lists them. Strings must be valid
// UTF-8; an empty string is fingerprinted as "".
type PromptContract struct {
	Name        string
	Title       string
	Description string
	Arguments   []PromptArgument
}

// TemplateContract is the part of an MCP resource template that is
// fingerprinted. Annotations, like a tool's, are JSON: nil or empty is
// null, anything else must be valid JSON.
type TemplateContract struct {
	URITemplate string
	Name        string
	Title       string
	Description string
	MIMEType    string
	Annotations json.RawMessage
}

// CanonicalPrompt returns the canonical JSON document that PromptFingerprint
// hashes (after its domain prefix):
//
//	{"arguments":[{"description":D,"name":N,"required":R,"title":T},...],"description":D,"name":N,"title":T}
//
// in RFC 8785 form, the arguments in listed order ([] when there are none).
func CanonicalPrompt(c PromptContract) ([]byte, error) {
	var buf bytes.Buffer
	if err := writePrompt(&buf, c); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writePrompt(w io.Writer, c PromptContract) error {
	if err := checkUTF8("name", c.Name, "title", c.Title, "description", c.Description); err != nil {
		return err
	}
	b := make([]byte, 0, 64+len(c.Name)+len(c.Title)+len(c.Description)+64*len(c.Arguments))
	b = append(b, `{"arguments":[`...)
	for i, a := range c.Arguments {
		field := "arguments[" + strconv.Itoa(i) + "]."
		if err := checkUTF8(field+"name", a.Name, field+"title", a.Title, field+"description", a.Description); err != nil {
			return err
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"description":`...)
		b = appendString(b, a.Description)
		b = append(b, `,"name":`...)
		b = appendString(b, a.Name)
		b = append(b, `,"required":`...)
		b = strconv.AppendBool(b, a.Required)
		b = append(b, `,"title":`...)
		b = appendString(b, a.Title)
		b = append(b, '}')
	}
	b = append(b, `],"description":`...)
	b = appendString(b, c.Description)
	b = append(b, `,"name":`...)
	b = appendString(b, c.Name)
	b = append(b, `,"title":`...)
	b = appendString(b, c.Title)
	b = append(b, '}')
	_, err := w.Write(b)
	return err
}

// PromptFingerprint returns SHA-256("gatehouse/prompt-contract/v1" 0x00
// CanonicalPrompt(c)) in lower-case hex. It fails only when a string is not
// valid UTF-8.
func PromptFingerprint(c PromptContract) (string, error) {
	h := newHash(PromptDomain)
	if err := writePrompt(h, c); err != nil {
		return "", err
	}
	return sum(h), nil
}

// CanonicalTemplate returns the canonical JSON document that
// TemplateFingerprint hashes (after its domain prefix):
//
//	{"annotations":A,"description":D,"mimeType":M,"name":N,"title":T,"uriTemplate":U}
//
// in RFC 8785 form, with absent annotations as null.
func CanonicalTemplate(c TemplateContract) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeTemplate(&buf, c); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeTemplate(w io.Writer, c TemplateContract) error {
	ann, err := canonicalOrNull(c.Annotations, "annotations")
	if err != nil {
		return err
	}
	if err := checkUTF8("uriTemplate", c.URITemplate, "name", c.Name, "title", c.Title,
		"description", c.Description, "mimeType", c.MIMEType); err != nil {
		return err
	}
	b := make([]byte, 0, 96+len(ann)+len(c.URITemplate)+len(c.Name)+len(c.Title)+len(c.Description)+len(c.MIMEType))
	b = append(b, `{"annotations":`...)
	b = append(b, ann...)
	b = append(b, `,"description":`...)
	b = appendString(b, c.Description)
	b = append(b, `,"mimeType":`...)
	b = appendString(b, c.MIMEType)
	b = append(b, `,"name":`...)
	b = appendString(b, c.Name)
	b = append(b, `,"title":`...)
	b = appendString(b, c.Title)
	b = append(b, `,"uriTemplate":`...)
	b = appendString(b, c.URITemplate)
	b = append(b, '}')
	_, err = w.Write(b)
	return err
}

// TemplateFingerprint returns SHA-256("gatehouse/resource-template-contract/v1"
// 0x00 CanonicalTemplate(c)) in lower-case hex. It fails only when the
// annotations are not valid JSON (see Canonical) or a string is not valid
// UTF-8.
func TemplateFingerprint(c TemplateContract) (string, error) {
	h := newHash(ResourceTemplateDomain)
	if err := writeTemplate(h, c); err != nil {
		return "", err
	}
	return sum(h), nil
}

// checkUTF8 takes field, value pairs and reports the first value that is
// not valid UTF-8.
func checkUTF8(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if s := pairs[i+1]; !utf8.ValidString(s) {
			return &Error{Offset: -1, Err: ErrInvalidUTF8, Detail: fmt.Sprintf("%q", clip(s)), Field: pairs[i]}
		}
	}
	return nil
}
