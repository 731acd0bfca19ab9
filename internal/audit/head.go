package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// HeadFormat is the "format" of a head file.
const HeadFormat = "gatehouse-audit-head/1"

// MaxHeadFile bounds a head file ParseHead reads (1 MiB: some 3,000
// chains).
const MaxHeadFile = 1 << 20

// ErrHead is wrapped by every error of ParseHead.
var ErrHead = errors.New("audit: bad head file")

// Head is the latest signed checkpoint of every chain, kept outside the
// store (`gatehouse audit head --out FILE`) so that a later
// `gatehouse audit verify --expect-head FILE` can tell a chain deleted,
// cut at its end together with its checkpoints, or rewritten since.
type Head struct {
	// Written is when the head was read from the store.
	Written time.Time
	// Chains holds one checkpoint per chain, ordered by chain.
	Chains []store.AuditCheckpoint
}

// A head file:
//
//	{"format": "gatehouse-audit-head/1", "written": "2026-03-01T12:00:00Z",
//	 "chains": [{"chain": "gw/a", "seq": 42, "hash": "<64 hex>",
//	             "at": "2026-03-01T11:59:00.123Z", "keyId": "<16 hex>",
//	             "signature": "<base64>"}]}
type headJSON struct {
	Format  string          `json:"format"`
	Written string          `json:"written"`
	Chains  []headChainJSON `json:"chains"`
}

type headChainJSON struct {
	Chain     string `json:"chain"`
	Seq       int64  `json:"seq"`
	Hash      string `json:"hash"`
	At        string `json:"at"`
	KeyID     string `json:"keyId"`
	Signature string `json:"signature"`
}

// LatestHead reads the latest signed checkpoint of every chain of st. It
// returns the chains that have entries but no signed checkpoint apart
// (they cannot be in a head); the head's Chains may then be empty.
func LatestHead(ctx context.Context, st store.AuditStore, now time.Time) (*Head, []string, error) {
	cps, err := st.AuditCheckpoints(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	heads, err := st.AuditHeads(ctx)
	if err != nil {
		return nil, nil, err
	}
	latest := map[string]store.AuditCheckpoint{}
	for _, c := range cps { // by chain, then seq
		if len(c.Signature) > 0 {
			latest[c.Chain] = c
		}
	}
	h := &Head{Written: roundAt(now)}
	for _, c := range latest {
		h.Chains = append(h.Chains, c)
	}
	sort.Slice(h.Chains, func(i, j int) bool { return h.Chains[i].Chain < h.Chains[j].Chain })
	var unsigned []string
	for _, x := range heads {
		if _, ok := latest[x.Chain]; !ok && x.Last > 0 {
			unsigned = append(unsigned, x.Chain)
		}
	}
	return h, unsigned, nil
}

// Marshal returns h as a head file (indented JSON, a newline at the end).
func (h *Head) Marshal() ([]byte, error) {
	doc := headJSON{Format: HeadFormat, Written: h.Written.UTC().Format(time.RFC3339Nano), Chains: []headChainJSON{}}
	for _, c := range h.Chains {
		doc.Chains = append(doc.Chains, headChainJSON{Chain: c.Chain, Seq: c.Seq, Hash: c.Hash, At: c.At.UTC().Format(time.RFC3339Nano),
			KeyID: c.KeyID, Signature: base64.StdEncoding.EncodeToString(c.Signature)})
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ParseHead reads a head file (Head.Marshal's output). Every way it can be
// wrong is an error wrapping ErrHead that says where and what: empty or
// too large; not JSON, not an object, or text after it; a field unknown,
// given twice, missing, null or of the wrong JSON type; the format; the
// time written; no chains; and for each chain (chains[i]) its name (empty
// or named twice), seq (at least 1), hash (64 lowercase hex digits), time
// (RFC 3339), key ID (16 lowercase hex digits) and signature (base64 of a
// signature, bare or linked).
func ParseHead(data []byte) (*Head, error) {
	fail := func(format string, args ...any) (*Head, error) {
		return nil, fmt.Errorf("%w: %s", ErrHead, fmt.Sprintf(format, args...))
	}
	if len(data) > MaxHeadFile {
		return fail("%d bytes, more than the %d a head file may hold", len(data), MaxHeadFile)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fail("the file is empty")
	}
	top, err := readObject(data, "the head file", map[string]bool{"format": true, "written": true, "chains": true}, true)
	if err != nil {
		return fail("%v", err)
	}
	var format, writtenText string
	var chains []json.RawMessage
	if err := top.decode("format", &format); err != nil {
		return fail("%v", err)
	}
	if format != HeadFormat {
		return fail("format %q, want %q", clip(format), HeadFormat)
	}
	if err := top.decode("written", &writtenText); err != nil {
		return fail("%v", err)
	}
	written, err := time.Parse(time.RFC3339Nano, writtenText)
	if err != nil {
		return fail("written %q is not an RFC 3339 time", clip(writtenText))
	}
	if err := top.decode("chains", &chains); err != nil {
		return fail("%v", err)
	}
	if len(chains) == 0 {
		return fail("chains is empty: a head names at least one chain")
	}
	h := &Head{Written: written}
	seen := map[string]bool{}
	for i, raw := range chains {
		c, err := parseHeadChain(raw)
		if err != nil {
			return fail("chains[%d]%s: %v", i, nameOf(c.Chain), err)
		}
		if seen[c.Chain] {
			return fail("chains[%d]: chain %q is named twice", i, clip(c.Chain))
		}
		seen[c.Chain] = true
		h.Chains = append(h.Chains, c)
	}
	sort.Slice(h.Chains, func(i, j int) bool { return h.Chains[i].Chain < h.Chains[j].Chain })
	return h, nil
}

func nameOf(chain string) string {
	if chain == "" {
		return ""
	}
	return fmt.Sprintf(" (chain %q)", clip(chain))
}

var headChainFields = map[string]bool{"chain": true, "seq": true, "hash": true, "at": true, "keyId": true, "signature": true}

// parseHeadChain reads one element of chains; c.Chain is set as soon as
// the name is read, for the caller's message.
func parseHeadChain(raw json.RawMessage) (c store.AuditCheckpoint, err error) {
	obj, err := readObject(raw, "the chain", headChainFields, false)
	if err != nil {
		return c, err
	}
	var at, sigText string
	if err := obj.decode("chain", &c.Chain); err != nil {
		return c, err
	}
	if c.Chain == "" {
		return c, errors.New("the chain's name is empty")
	}
	if err := obj.decode("seq", &c.Seq); err != nil {
		return c, err
	}
	if c.Seq < 1 {
		return c, fmt.Errorf("seq %d, want 1 or more", c.Seq)
	}
	if err := obj.decode("hash", &c.Hash); err != nil {
		return c, err
	}
	if !isHex(c.Hash, 64) {
		return c, fmt.Errorf("hash %q is not 64 lowercase hex digits", clip(c.Hash))
	}
	if err := obj.decode("at", &at); err != nil {
		return c, err
	}
	if c.At, err = time.Parse(time.RFC3339Nano, at); err != nil {
		return c, fmt.Errorf("at %q is not an RFC 3339 time", clip(at))
	}
	if err := obj.decode("keyId", &c.KeyID); err != nil {
		return c, err
	}
	if !isHex(c.KeyID, 16) {
		return c, fmt.Errorf("keyId %q is not 16 lowercase hex digits (a head holds signed checkpoints only)", clip(c.KeyID))
	}
	if err := obj.decode("signature", &sigText); err != nil {
		return c, err
	}
	if c.Signature, err = base64.StdEncoding.Strict().DecodeString(sigText); err != nil {
		return c, fmt.Errorf("the signature is not base64: %v", err)
	}
	if _, linked := LinkOf(c); !linked && len(c.Signature) != ed25519.SignatureSize {
		return c, fmt.Errorf("the signature is %d bytes, neither a signature (%d) nor a linked one (form %d, %d)",
			len(c.Signature), ed25519.SignatureSize, linkedForm, linkedSigSize)
	}
	return c, nil
}

// object is a JSON object's fields, each given once.
type object struct {
	what   string
	fields map[string]json.RawMessage
}

// readObject reads data as one JSON object whose field names are all in
// known, each given once; whole says that nothing may follow it.
func readObject(data []byte, what string, known map[string]bool, whole bool) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%s is a JSON %s, want an object", what, kindOf(tok))
	}
	o := &object{what: what, fields: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, jsonError(err)
		}
		name, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, jsonError(err)
		}
		switch {
		case !known[name]:
			return nil, fmt.Errorf("%s has an unknown field %q", what, clip(name))
		case o.fields[name] != nil:
			return nil, fmt.Errorf("%s gives the field %q twice", what, name)
		}
		o.fields[name] = raw
	}
	if _, err := dec.Token(); err != nil {
		return nil, jsonError(err)
	}
	if whole {
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("text after %s's object", what)
		}
	}
	return o, nil
}

// decode reads field name into v (a string, an int64 or a slice): it must
// be present, not null, and of v's JSON type.
func (o *object) decode(name string, v any) error {
	raw, ok := o.fields[name]
	switch {
	case !ok:
		return fmt.Errorf("%s has no %q", o.what, name)
	case bytes.Equal(raw, []byte("null")):
		return fmt.Errorf("%s's %q is null", o.what, name)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		want := "a string"
		switch v.(type) {
		case *int64:
			want = "a whole number"
		case *[]json.RawMessage:
			want = "an array"
		}
		return fmt.Errorf("%s's %q is not %s", o.what, name, want)
	}
	return nil
}

// jsonError words a decoder's error.
func jsonError(err error) error {
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("not JSON: %v (at byte %d)", syn, syn.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("not JSON: the text ends inside its object")
	}
	return fmt.Errorf("not JSON: %v", err)
}

// kindOf names a JSON token's kind.
func kindOf(tok any) string {
	switch tok.(type) {
	case json.Delim:
		return "array"
	case string:
		return "string"
	case float64, json.Number:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
