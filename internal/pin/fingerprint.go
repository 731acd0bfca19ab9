package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"unicode/utf8"
)

// Domains of the fingerprints. Each is written, followed by one 0x00 byte,
// before the fingerprinted bytes, so a fingerprint of one kind can never equal
// a fingerprint of another kind, and a future v2 never collides with v1.
const (
	ToolDomain         = "gatehouse/tool-contract/v1"
	UnnamedToolDomain  = "gatehouse/tool-contract-unnamed/v1"
	InstructionsDomain = "gatehouse/server-instructions/v1"
	CallDomain         = "gatehouse/call/v1"
)

// Contract is the part of an MCP tool that is fingerprinted: what a model
// reads (name, title, description, schemas) and what a client may act on
// (annotations). A nil or empty json.RawMessage means the field is absent and
// is fingerprinted as JSON null (so absent and an explicit null are the same);
// otherwise it must be valid JSON. The strings must be valid UTF-8; an empty
// string is fingerprinted as "" (the MCP wire format cannot tell an absent
// title from an empty one either).
type Contract struct {
	Name         string
	Title        string
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  json.RawMessage
}

// CanonicalContract returns the canonical JSON document that ToolFingerprint
// hashes (after its domain prefix):
//
//	{"annotations":A,"description":D,"inputSchema":I,"name":N,"outputSchema":O,"title":T}
//
// with each member in RFC 8785 form and absent schemas/annotations as null.
// With named false the "name" member is left out: that is the document of
// UnnamedFingerprint.
func CanonicalContract(c Contract, named bool) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeContract(&buf, c, named); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeContract writes the canonical contract document. The keys are
// written in UTF-16 order, which for these ASCII names is plain byte order.
func writeContract(w io.Writer, c Contract, named bool) error {
	ann, err := canonicalOrNull(c.Annotations, "annotations")
	if err != nil {
		return err
	}
	in, err := canonicalOrNull(c.InputSchema, "inputSchema")
	if err != nil {
		return err
	}
	out, err := canonicalOrNull(c.OutputSchema, "outputSchema")
	if err != nil {
		return err
	}
	for _, f := range [...]struct{ field, s string }{{"name", c.Name}, {"title", c.Title}, {"description", c.Description}} {
		if !utf8.ValidString(f.s) {
			return &Error{Offset: -1, Err: ErrInvalidUTF8, Detail: fmt.Sprintf("%q", clip(f.s)), Field: f.field}
		}
	}
	b := make([]byte, 0, 96+len(ann)+len(in)+len(out)+len(c.Name)+len(c.Title)+len(c.Description))
	b = append(b, `{"annotations":`...)
	b = append(b, ann...)
	b = append(b, `,"description":`...)
	b = appendString(b, c.Description)
	b = append(b, `,"inputSchema":`...)
	b = append(b, in...)
	if named {
		b = append(b, `,"name":`...)
		b = appendString(b, c.Name)
	}
	b = append(b, `,"outputSchema":`...)
	b = append(b, out...)
	b = append(b, `,"title":`...)
	b = appendString(b, c.Title)
	b = append(b, '}')
	_, err = w.Write(b)
	return err
}

func canonicalOrNull(raw json.RawMessage, field string) ([]byte, error) {
	if len(raw) == 0 {
		return []byte("null"), nil
	}
	c, err := Canonical(raw)
	if err != nil {
		return nil, inField(err, field)
	}
	return c, nil
}

// inField records in a Canonical error which field it came from.
func inField(err error, field string) error {
	var e *Error
	if errors.As(err, &e) {
		withField := *e
		withField.Field = field
		return &withField
	}
	return err
}

func newHash(domain string) hash.Hash {
	h := sha256.New()
	h.Write([]byte(domain))
	h.Write([]byte{0})
	return h
}

func sum(h hash.Hash) string {
	var b [sha256.Size]byte
	return hex.EncodeToString(h.Sum(b[:0]))
}

// ToolFingerprint returns the tool-contract fingerprint of c: 64 lower-case
// hex digits of SHA-256("gatehouse/tool-contract/v1" 0x00 CanonicalContract(c, true)).
// It fails only when a schema or annotations is not valid JSON (see
// Canonical) or a string is not valid UTF-8.
func ToolFingerprint(c Contract) (string, error) {
	h := newHash(ToolDomain)
	if err := writeContract(h, c, true); err != nil {
		return "", err
	}
	return sum(h), nil
}

// UnnamedFingerprint is ToolFingerprint without the name: SHA-256 of
// "gatehouse/tool-contract-unnamed/v1" 0x00 CanonicalContract(c, false). Two
// tools with equal unnamed fingerprints differ at most in their names; Compare
// uses it to recognise a rename.
func UnnamedFingerprint(c Contract) (string, error) {
	h := newHash(UnnamedToolDomain)
	if err := writeContract(h, c, false); err != nil {
		return "", err
	}
	return sum(h), nil
}

// InstructionsFingerprint returns SHA-256("gatehouse/server-instructions/v1"
// 0x00 instructions) in hex. The instructions are hashed as their raw bytes,
// with no canonicalization (a string has no insignificant parts), so this
// never fails; empty instructions have a fingerprint too.
func InstructionsFingerprint(instructions string) string {
	h := newHash(InstructionsDomain)
	h.Write([]byte(instructions))
	return sum(h)
}

// CallFingerprint returns the fingerprint the journal keeps for a tool call:
// SHA-256("gatehouse/call/v1" 0x00 {"args":A,"server":S,"tool":T}) in hex,
// where the object is in RFC 8785 form and A is Canonical(args). Absent
// arguments (nil, empty, or JSON null — all the same on the MCP wire, where
// "arguments" is optional) are fingerprinted as {}. It fails when args is not
// valid JSON or a name is not valid UTF-8.
func CallFingerprint(server, tool string, args json.RawMessage) (string, error) {
	a := []byte("{}")
	if len(args) > 0 {
		c, err := Canonical(args)
		if err != nil {
			return "", inField(err, "args")
		}
		if string(c) != "null" {
			a = c
		}
	}
	for _, f := range [...]struct{ field, s string }{{"server", server}, {"tool", tool}} {
		if !utf8.ValidString(f.s) {
			return "", &Error{Offset: -1, Err: ErrInvalidUTF8, Detail: fmt.Sprintf("%q", clip(f.s)), Field: f.field}
		}
	}
	b := make([]byte, 0, 32+len(a)+len(server)+len(tool))
	b = append(b, `{"args":`...)
	b = append(b, a...)
	b = append(b, `,"server":`...)
	b = appendString(b, server)
	b = append(b, `,"tool":`...)
	b = appendString(b, tool)
	b = append(b, '}')
	h := newHash(CallDomain)
	h.Write(b)
	return sum(h), nil
}
