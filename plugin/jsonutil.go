package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// jsonKind is the JSON type of a value, named as people say it.
type jsonKind string

const (
	kindObject  jsonKind = "an object"
	kindArray   jsonKind = "an array"
	kindString  jsonKind = "a string"
	kindNumber  jsonKind = "a number"
	kindBool    jsonKind = "a boolean"
	kindNull    jsonKind = "null"
	kindInvalid jsonKind = "invalid JSON"
)

// kindOf returns the JSON type of a syntactically valid raw value.
func kindOf(raw []byte) jsonKind {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return kindInvalid
	}
	switch raw[0] {
	case '{':
		return kindObject
	case '[':
		return kindArray
	case '"':
		return kindString
	case 't', 'f':
		return kindBool
	case 'n':
		return kindNull
	default:
		return kindNumber
	}
}

// checkDocument reports why data is not exactly one well-formed JSON value in
// UTF-8 (RFC 8259), or nil. Trailing data after the value, a byte order mark
// and invalid UTF-8 are all errors.
func checkDocument(data []byte) error {
	if !utf8.Valid(data) {
		return errors.New("the file is not valid UTF-8")
	}
	if !json.Valid(data) {
		// Decode to get a position-bearing message from encoding/json.
		var v any
		dec := json.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&v); err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("the file is empty")
			}
			return err
		}
		return fmt.Errorf("unexpected data after the JSON value at byte %d", dec.InputOffset())
	}
	return nil
}

// member is one name/value pair of a JSON object, in document order.
type member struct {
	Name  string
	Value json.RawMessage
}

// members splits a syntactically valid JSON object into its members in
// document order, keeping duplicates (callers decide what a duplicate
// means). It returns an error if raw is not an object.
func members(raw json.RawMessage) ([]member, error) {
	if kindOf(raw) != kindObject {
		return nil, fmt.Errorf("is %s, not an object", kindOf(raw))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, err
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("unexpected token %v", tok)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{Name: name, Value: v})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, err
	}
	return out, nil
}

// duplicates returns the member names that occur more than once, each once,
// in order of their second occurrence.
func duplicates(ms []member) []string {
	seen := make(map[string]int, len(ms))
	var dups []string
	for _, m := range ms {
		seen[m.Name]++
		if seen[m.Name] == 2 {
			dups = append(dups, m.Name)
		}
	}
	return dups
}

// asString decodes a raw JSON value that must be a string.
func asString(raw json.RawMessage) (string, bool) {
	if kindOf(raw) != kindString {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// asStringArray decodes a raw JSON value that must be an array of strings.
// On failure it says which element is wrong.
func asStringArray(raw json.RawMessage) ([]string, error) {
	if kindOf(raw) != kindArray {
		return nil, fmt.Errorf("is %s, not an array of strings", kindOf(raw))
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		s, ok := asString(e)
		if !ok {
			return nil, fmt.Errorf("element %d is %s, not a string", i, kindOf(e))
		}
		out = append(out, s)
	}
	return out, nil
}
