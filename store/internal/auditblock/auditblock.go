// Package auditblock encodes a run of one audit chain's entries as one
// value, a block: the form in which SQLite's store keeps its audit trail,
// one row a block instead of one row an entry (issue 36: an entry's own
// row, its 14 bound values and its index entry cost 5.7–7.6 µs of CPU on
// SQLite; in a block of 64 to 256, 1.9–3.0 µs an entry, and 49 bytes of
// the file instead of 296 for a gateway's batch).
//
// A block holds entries with consecutive Seqs of one chain, each linked to
// the one before it. What the row beside it says (the chain, the first and
// last Seq, the first entry's ID) is not repeated in it; Decode takes it
// as a Header. Two forms:
//
//   - FormBinary (written by Append): the first entry's previous hash, then
//     each entry's fields. A text field the same as the entry before's is
//     one byte; a hash or digest of 64 lower-case hex digits is its 32
//     bytes; a previous hash after the first is implied (the entry
//     before's hash).
//   - FormJSON (what a migration writes with SQL alone, from a row an
//     entry): a JSON array of the entries, each an array of its fields,
//     the times as numbers and every text (and the detail) as the hex of
//     its bytes, so that nothing is changed on the way (a hash covers the
//     bytes).
//
// Decode checks what it reads and says what is wrong (store.ErrCorrupt);
// it never returns an entry it could not read whole.
package auditblock

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
)

// The first byte of a block says its form.
const (
	FormBinary byte = 'B'
	FormJSON   byte = 'J'
)

// Header is what the row that holds a block says about it.
type Header struct {
	// ID is the first entry's ID; the others follow it by one.
	ID int64
	// Chain names the entries' chain; FirstSeq and LastSeq are the first
	// and the last entry's Seq.
	Chain             string
	FirstSeq, LastSeq int64
}

// Len is how many entries the block holds.
func (h Header) Len() int64 { return h.LastSeq - h.FirstSeq + 1 }

// Field tags of the binary form.
const (
	tagSame  = 0 // a text field equal to the entry before's
	tagRaw   = 1 // 64 lower-case hex digits, as 32 bytes
	tagText  = 2 // a text: uvarint length, bytes
	tagEmpty = 3 // an empty text
)

// Append appends the block of es (one chain, consecutive Seqs, each
// linked to the one before it, as store.AuditStore appends them) to dst,
// in FormBinary. It does not check es.
func Append(dst []byte, es []store.AuditEntry) []byte {
	dst = append(dst, FormBinary)
	if len(es) == 0 {
		return dst
	}
	dst = appendHex(dst, es[0].PrevHash)
	var prev *store.AuditEntry
	for i := range es {
		e := &es[i]
		dst = binary.AppendVarint(dst, norm.MS(e.At))
		if prev == nil {
			dst = appendText(dst, e.Kind, "", false)
			dst = appendText(dst, e.Subject, "", false)
			dst = appendText(dst, e.Server, "", false)
			dst = appendText(dst, e.Tool, "", false)
			dst = appendHex(dst, e.ArgsDigest)
			dst = appendText(dst, e.Outcome, "", false)
			dst = appendText(dst, e.Instance, "", false)
		} else {
			dst = appendText(dst, e.Kind, prev.Kind, true)
			dst = appendText(dst, e.Subject, prev.Subject, true)
			dst = appendText(dst, e.Server, prev.Server, true)
			dst = appendText(dst, e.Tool, prev.Tool, true)
			if e.ArgsDigest == prev.ArgsDigest {
				dst = append(dst, tagSame)
			} else {
				dst = appendHex(dst, e.ArgsDigest)
			}
			dst = appendText(dst, e.Outcome, prev.Outcome, true)
			dst = appendText(dst, e.Instance, prev.Instance, true)
		}
		dst = binary.AppendUvarint(dst, uint64(e.Duration.Microseconds()))
		dst = appendHex(dst, e.Hash)
		if e.Detail == nil {
			dst = append(dst, 0)
		} else {
			dst = binary.AppendUvarint(dst, uint64(len(e.Detail))+1)
			dst = append(dst, e.Detail...)
		}
		prev = e
	}
	return dst
}

func appendText(dst []byte, s, prev string, hasPrev bool) []byte {
	switch {
	case hasPrev && s == prev:
		return append(dst, tagSame)
	case s == "":
		return append(dst, tagEmpty)
	}
	dst = append(dst, tagText)
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// appendHex appends s as 32 bytes when it is 64 lower-case hex digits (the
// form Decode gives back exactly), else as a text.
func appendHex(dst []byte, s string) []byte {
	if len(s) == 64 {
		var raw [32]byte
		ok := true
		for i := range raw {
			hi, lo := unhex[s[2*i]], unhex[s[2*i+1]]
			if hi|lo > 0x0f {
				ok = false
				break
			}
			raw[i] = hi<<4 | lo
		}
		if ok {
			dst = append(dst, tagRaw)
			return append(dst, raw[:]...)
		}
	}
	return appendText(dst, s, "", false)
}

// unhex is a lower-case hex digit's value, 0xff for any other byte.
var unhex = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c - '0'
	}
	for c := byte('a'); c <= 'f'; c++ {
		t[c] = c - 'a' + 10
	}
	return t
}()

// Decode reads the entries of the block data that h describes, in Seq
// order. An error wraps store.ErrCorrupt and says where and what.
func Decode(data []byte, h Header) ([]store.AuditEntry, error) {
	if h.FirstSeq < 1 || h.LastSeq < h.FirstSeq {
		return nil, corrupt(h, "its header's seqs %d to %d are not a run", h.FirstSeq, h.LastSeq)
	}
	if n := h.Len(); n > int64(len(data)) {
		// Every entry takes more than a byte: a header that claims more
		// entries than the block has bytes is wrong (and is not allowed to
		// size an allocation).
		return nil, corrupt(h, "its header says %d entries, more than its %d bytes can hold", n, len(data))
	}
	if len(data) == 0 {
		return nil, corrupt(h, "it is empty")
	}
	switch data[0] {
	case FormBinary:
		return decodeBinary(data[1:], h)
	case FormJSON:
		return decodeJSON(data[1:], h)
	}
	return nil, corrupt(h, "unknown form %q", data[0])
}

func corrupt(h Header, format string, args ...any) error {
	return fmt.Errorf("%w: the audit block of chain %q, seqs %d to %d: %s", store.ErrCorrupt, h.Chain, h.FirstSeq, h.LastSeq, fmt.Sprintf(format, args...))
}

// reader reads the binary form.
type reader struct {
	b   []byte
	off int
	err string // the first failure
}

func (r *reader) fail(format string, args ...any) {
	if r.err == "" {
		r.err = fmt.Sprintf("at byte %d: ", r.off+1) + fmt.Sprintf(format, args...)
	}
	r.b = nil
}

func (r *reader) byte(what string) byte {
	if len(r.b) == 0 {
		r.fail("it ends before %s", what)
		return 0
	}
	c := r.b[0]
	r.b, r.off = r.b[1:], r.off+1
	return c
}

func (r *reader) uvarint(what string) uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		if n == 0 {
			r.fail("it ends inside %s", what)
		} else {
			r.fail("%s overflows 64 bits", what)
		}
		return 0
	}
	r.b, r.off = r.b[n:], r.off+n
	return v
}

// varint reads a signed varint: the unsigned one, zig-zag decoded (as
// binary.Varint does).
func (r *reader) varint(what string) int64 {
	u := r.uvarint(what)
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (r *reader) bytes(n uint64, what string) []byte {
	if n > uint64(len(r.b)) {
		r.fail("%s of %d bytes runs past its end", what, n)
		return nil
	}
	v := r.b[:n]
	r.b, r.off = r.b[n:], r.off+int(n)
	return v
}

// text reads a text field; prev is the entry before's (hasPrev false for
// the first entry, where tagSame is wrong).
func (r *reader) text(what, prev string, hasPrev, hexOK bool) string {
	switch tag := r.byte(what); tag {
	case tagSame:
		if !hasPrev {
			r.fail("%s repeats the entry before's, and there is none", what)
		}
		return prev
	case tagEmpty:
		return ""
	case tagText:
		n := r.uvarint(what + "'s length")
		return string(r.bytes(n, what))
	case tagRaw:
		if !hexOK {
			r.fail("%s is not a hash, and has a hash's tag", what)
			return ""
		}
		return hex.EncodeToString(r.bytes(32, what))
	default:
		if r.err == "" {
			r.fail("%s has an unknown tag %d", what, tag)
		}
		return ""
	}
}

func decodeBinary(b []byte, h Header) ([]store.AuditEntry, error) {
	r := &reader{b: b, off: 1}
	n := h.Len()
	out := make([]store.AuditEntry, 0, n)
	prevHash := r.text("the first entry's previous hash", "", false, true)
	var p store.AuditEntry
	for i := int64(0); i < n && r.err == ""; i++ {
		first := i == 0
		e := store.AuditEntry{ID: h.ID + i, Chain: h.Chain, Seq: h.FirstSeq + i, PrevHash: prevHash}
		e.At = norm.Time(r.varint("a time"))
		e.Kind = r.text("a kind", p.Kind, !first, false)
		e.Subject = r.text("a subject", p.Subject, !first, false)
		e.Server = r.text("a server", p.Server, !first, false)
		e.Tool = r.text("a tool", p.Tool, !first, false)
		e.ArgsDigest = r.text("an arguments' digest", p.ArgsDigest, !first, true)
		e.Outcome = r.text("an outcome", p.Outcome, !first, false)
		e.Instance = r.text("an instance", p.Instance, !first, false)
		us := r.uvarint("a duration")
		if us > uint64(time.Duration(1<<63-1)/time.Microsecond) {
			r.fail("a duration of %d µs is out of range", us)
		}
		e.Duration = norm.Micros(int64(us))
		e.Hash = r.text("a hash", "", false, true)
		if d := r.uvarint("a detail's length"); d > 0 {
			e.Detail = r.bytes(d-1, "a detail")
			if r.err == "" {
				e.Detail = append([]byte(nil), e.Detail...)
			}
		}
		if r.err != "" {
			break
		}
		if e.Kind == "" || e.Hash == "" {
			r.fail("entry %d has no kind or no hash", e.Seq)
			break
		}
		out = append(out, e)
		prevHash, p = e.Hash, e
	}
	if r.err != "" {
		return nil, corrupt(h, "%s", r.err)
	}
	if len(r.b) > 0 {
		return nil, corrupt(h, "%d bytes follow its last entry", len(r.b))
	}
	return out, nil
}

// jsonEntry is one entry of the JSON form: at (ms), kind, subject,
// server, tool, args_digest, outcome, duration_us, instance, prev_hash,
// hash, detail (null for none), each text as the hex of its bytes.
type jsonEntry struct {
	At                                  int64
	Kind, Subject, Server, Tool, Digest string
	Outcome                             string
	Micros                              int64
	Instance, PrevHash, Hash            string
	Detail                              []byte
}

func (j *jsonEntry) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("an entry is not an array: %w", err)
	}
	if len(raw) != 12 {
		return fmt.Errorf("an entry has %d fields, not 12", len(raw))
	}
	nums := []*int64{&j.At, &j.Micros}
	for k, i := range []int{0, 7} {
		if err := json.Unmarshal(raw[i], nums[k]); err != nil {
			return fmt.Errorf("field %d is not an integer: %w", i+1, err)
		}
	}
	texts := []*string{&j.Kind, &j.Subject, &j.Server, &j.Tool, &j.Digest, &j.Outcome, &j.Instance, &j.PrevHash, &j.Hash}
	for k, i := range []int{1, 2, 3, 4, 5, 6, 8, 9, 10} {
		b, err := hexField(raw[i])
		if err != nil {
			return fmt.Errorf("field %d: %w", i+1, err)
		}
		*texts[k] = string(b)
	}
	if string(raw[11]) != "null" {
		d, err := hexField(raw[11])
		if err != nil {
			return fmt.Errorf("field 12: %w", err)
		}
		j.Detail = d
	}
	return nil
}

// hexField reads a JSON text of hex digits (either case).
func hexField(raw json.RawMessage) ([]byte, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("not a text: %w", err)
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("not hex: %w", err)
	}
	return b, nil
}

func decodeJSON(b []byte, h Header) ([]store.AuditEntry, error) {
	var js []jsonEntry
	if err := json.Unmarshal(b, &js); err != nil {
		return nil, corrupt(h, "its JSON: %v", err)
	}
	if int64(len(js)) != h.Len() {
		return nil, corrupt(h, "it holds %d entries, its header says %d", len(js), h.Len())
	}
	out := make([]store.AuditEntry, len(js))
	for i, j := range js {
		seq := h.FirstSeq + int64(i)
		if j.Kind == "" || j.Hash == "" {
			return nil, corrupt(h, "entry %d has no kind or no hash", seq)
		}
		if i > 0 && j.PrevHash != js[i-1].Hash {
			return nil, corrupt(h, "entry %d is not linked to the entry before it", seq)
		}
		if j.Micros < 0 {
			return nil, corrupt(h, "entry %d has a negative duration", seq)
		}
		out[i] = store.AuditEntry{ID: h.ID + int64(i), Chain: h.Chain, Seq: seq, At: norm.Time(j.At), Kind: j.Kind,
			Subject: j.Subject, Server: j.Server, Tool: j.Tool, ArgsDigest: j.Digest, Outcome: j.Outcome,
			Duration: norm.Micros(j.Micros), Instance: j.Instance, PrevHash: j.PrevHash, Hash: j.Hash, Detail: norm.Bytes(j.Detail)}
	}
	return out, nil
}
