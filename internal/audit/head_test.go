package audit_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store"
)

// A head file's valid parts, for the cases below.
var (
	hHash  = strings.Repeat("ab", 32)
	hKey   = "0123456789abcdef"
	hSig   = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 64))
	hChain = fmt.Sprintf(`{"chain": "gw/a", "seq": 42, "hash": %q, "at": "2026-03-01T11:59:00.123Z", "keyId": %q, "signature": %q}`, hHash, hKey, hSig)
)

// headDoc is a head file with chains as given.
func headDoc(chains ...string) string {
	return `{"format": "gatehouse-audit-head/1", "written": "2026-03-01T12:00:00Z", "chains": [` + strings.Join(chains, ", ") + `]}`
}

// chainWith is hChain with one field's JSON value replaced (or the field
// removed when value is "").
func chainWith(field, value string) string {
	parts := map[string]string{"chain": `"gw/a"`, "seq": "42", "hash": fmt.Sprintf("%q", hHash), "at": `"2026-03-01T11:59:00.123Z"`,
		"keyId": fmt.Sprintf("%q", hKey), "signature": fmt.Sprintf("%q", hSig)}
	var out []string
	for _, f := range []string{"chain", "seq", "hash", "at", "keyId", "signature"} {
		v := parts[f]
		if f == field {
			v = value
		}
		if v != "" {
			out = append(out, fmt.Sprintf("%q: %s", f, v))
		}
	}
	return "{" + strings.Join(out, ", ") + "}"
}

func TestParseHead(t *testing.T) {
	h, err := audit.ParseHead([]byte(headDoc(hChain, strings.Replace(hChain, "gw/a", "operator", 1))))
	if err != nil {
		t.Fatal(err)
	}
	want := store.AuditCheckpoint{Chain: "gw/a", Seq: 42, Hash: hHash, At: time.Date(2026, 3, 1, 11, 59, 0, 123e6, time.UTC), KeyID: hKey, Signature: bytes.Repeat([]byte{7}, 64)}
	if len(h.Chains) != 2 || !h.Written.Equal(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)) || h.Chains[1].Chain != "operator" ||
		h.Chains[0].Chain != want.Chain || h.Chains[0].Seq != want.Seq || h.Chains[0].Hash != want.Hash || !h.Chains[0].At.Equal(want.At) ||
		h.Chains[0].KeyID != want.KeyID || !bytes.Equal(h.Chains[0].Signature, want.Signature) {
		t.Fatalf("parsed %+v", h)
	}
	// A linked signature (105 bytes, form 2) is one too.
	linked := append([]byte{2}, make([]byte, 104)...)
	if _, err := audit.ParseHead([]byte(headDoc(chainWith("signature", fmt.Sprintf("%q", base64.StdEncoding.EncodeToString(linked)))))); err != nil {
		t.Fatalf("linked signature: %v", err)
	}
}

// TestParseHeadErrors: each way a head file can be wrong has its own
// error, wrapping ErrHead.
func TestParseHeadErrors(t *testing.T) {
	big := headDoc(hChain) + strings.Repeat(" ", audit.MaxHeadFile)
	wrongForm := append([]byte{3}, make([]byte, 104)...)
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "the file is empty"},
		{"blank", " \n\t", "the file is empty"},
		{"too large", big, "more than the 1048576 a head file may hold"},
		{"not JSON", "format: gatehouse", "not JSON: invalid character 'o'"},
		{"cut short", headDoc(hChain)[:60], "not JSON: the text ends inside its object"},
		{"an array", "[]", "the head file is a JSON array, want an object"},
		{"a string", `"head"`, "the head file is a JSON string, want an object"},
		{"null", "null", "the head file is a JSON null, want an object"},
		{"text after", headDoc(hChain) + " {}", "text after the head file's object"},
		{"unknown field", `{"format": "gatehouse-audit-head/1", "version": 2}`, `the head file has an unknown field "version"`},
		{"field twice", `{"format": "gatehouse-audit-head/1", "format": "gatehouse-audit-head/1"}`, `the head file gives the field "format" twice`},
		{"no format", `{"written": "2026-03-01T12:00:00Z", "chains": []}`, `the head file has no "format"`},
		{"null format", `{"format": null}`, `the head file's "format" is null`},
		{"format not a string", `{"format": 1}`, `the head file's "format" is not a string`},
		{"other format", `{"format": "gatehouse-audit-head/2"}`, `format "gatehouse-audit-head/2", want "gatehouse-audit-head/1"`},
		{"no written", `{"format": "gatehouse-audit-head/1", "chains": []}`, `the head file has no "written"`},
		{"written not a time", `{"format": "gatehouse-audit-head/1", "written": "yesterday"}`, `written "yesterday" is not an RFC 3339 time`},
		{"no chains", `{"format": "gatehouse-audit-head/1", "written": "2026-03-01T12:00:00Z"}`, `the head file has no "chains"`},
		{"chains not an array", `{"format": "gatehouse-audit-head/1", "written": "2026-03-01T12:00:00Z", "chains": {}}`, `the head file's "chains" is not an array`},
		{"chains empty", headDoc(), "chains is empty: a head names at least one chain"},
		{"chain not an object", headDoc(`"gw/a"`), "chains[0]: the chain is a JSON string, want an object"},
		{"chain's unknown field", headDoc(strings.Replace(hChain, `"seq"`, `"sequence"`, 1)), `chains[0]: the chain has an unknown field "sequence"`},
		{"chain's field twice", headDoc(strings.Replace(hChain, `"seq": 42`, `"seq": 42, "seq": 43`, 1)), `chains[0]: the chain gives the field "seq" twice`},
		{"no chain name", headDoc(chainWith("chain", "")), `chains[0]: the chain has no "chain"`},
		{"empty chain name", headDoc(chainWith("chain", `""`)), "chains[0]: the chain's name is empty"},
		{"chain twice", headDoc(hChain, hChain), `chains[1]: chain "gw/a" is named twice`},
		{"no seq", headDoc(chainWith("seq", "")), `chains[0] (chain "gw/a"): the chain has no "seq"`},
		{"seq 0", headDoc(chainWith("seq", "0")), "seq 0, want 1 or more"},
		{"seq negative", headDoc(chainWith("seq", "-3")), "seq -3, want 1 or more"},
		{"seq not whole", headDoc(chainWith("seq", "4.5")), `the chain's "seq" is not a whole number`},
		{"seq a string", headDoc(chainWith("seq", `"42"`)), `the chain's "seq" is not a whole number`},
		{"seq null", headDoc(chainWith("seq", "null")), `the chain's "seq" is null`},
		{"no hash", headDoc(chainWith("hash", "")), `the chain has no "hash"`},
		{"hash short", headDoc(chainWith("hash", `"abcd"`)), `hash "abcd" is not 64 lowercase hex digits`},
		{"hash upper case", headDoc(chainWith("hash", fmt.Sprintf("%q", strings.ToUpper(hHash)))), "is not 64 lowercase hex digits"},
		{"hash not hex", headDoc(chainWith("hash", fmt.Sprintf("%q", strings.Repeat("zz", 32)))), "is not 64 lowercase hex digits"},
		{"no at", headDoc(chainWith("at", "")), `the chain has no "at"`},
		{"at not a time", headDoc(chainWith("at", `"2026-03-01 11:59"`)), `at "2026-03-01 11:59" is not an RFC 3339 time`},
		{"no key ID", headDoc(chainWith("keyId", "")), `the chain has no "keyId"`},
		{"key ID empty (unsigned)", headDoc(chainWith("keyId", `""`)), `keyId "" is not 16 lowercase hex digits (a head holds signed checkpoints only)`},
		{"no signature", headDoc(chainWith("signature", "")), `the chain has no "signature"`},
		{"signature not base64", headDoc(chainWith("signature", `"!!!"`)), "the signature is not base64"},
		{"signature short", headDoc(chainWith("signature", `"AAAA"`)), "the signature is 3 bytes, neither a signature (64) nor a linked one (form 2, 105)"},
		{"signature of another form", headDoc(chainWith("signature", fmt.Sprintf("%q", base64.StdEncoding.EncodeToString(wrongForm)))), "the signature is 105 bytes, neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := audit.ParseHead([]byte(tc.in))
			if h != nil || !errors.Is(err, audit.ErrHead) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseHead = %+v, %v; want an ErrHead saying %q", h, err, tc.want)
			}
		})
	}
}

// FuzzParseHead: ParseHead never panics; it returns a head or an error
// wrapping ErrHead; a head it returns is written back (Marshal) as a file
// it parses to the same head.
func FuzzParseHead(f *testing.F) {
	for _, s := range []string{headDoc(hChain), headDoc(hChain, strings.Replace(hChain, "gw/a", "operator", 1)), headDoc(), "", "null", "[]",
		headDoc(chainWith("seq", "0")), headDoc(chainWith("signature", `"AAAA"`)), headDoc(hChain) + "x", `{"format": "gatehouse-audit-head/1", "format": 1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := audit.ParseHead(data)
		if err != nil {
			if h != nil || !errors.Is(err, audit.ErrHead) {
				t.Fatalf("ParseHead = %+v, %v: not an ErrHead", h, err)
			}
			return
		}
		if len(h.Chains) == 0 {
			t.Fatal("a head without chains accepted")
		}
		b, err := h.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		h2, err := audit.ParseHead(b)
		if err != nil {
			t.Fatalf("Marshal wrote a file ParseHead refuses: %v\n%s", err, b)
		}
		if !h2.Written.Equal(h.Written) || len(h2.Chains) != len(h.Chains) {
			t.Fatalf("round trip: %+v, want %+v", h2, h)
		}
		for i, c := range h.Chains {
			d := h2.Chains[i]
			if c.Chain != d.Chain || c.Seq != d.Seq || c.Hash != d.Hash || !c.At.Equal(d.At) || c.KeyID != d.KeyID || !bytes.Equal(c.Signature, d.Signature) {
				t.Fatalf("round trip of chains[%d]: %+v, want %+v", i, d, c)
			}
		}
	})
}
