package auditblock

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// run returns n linked entries of chain "gw/1" from seq first, with
// hashes and digests of both forms (64 lower-case hex digits and other
// texts) and fields that repeat and change.
func run(first int64, n int) []store.AuditEntry {
	hex := func(i int64) string { return strings.Repeat(string("0123456789abcdef"[i%16]), 64) }
	out := make([]store.AuditEntry, n)
	prev := ""
	if first > 1 {
		prev = hex(first - 1)
	}
	for i := range out {
		seq := first + int64(i)
		e := store.AuditEntry{Chain: "gw/1", Seq: seq, At: time.UnixMilli(1_760_000_000_000 + seq*7).UTC(), Kind: "call",
			Subject: "alice", Server: "echo", Tool: "echo", ArgsDigest: hex(seq * 3), Outcome: "ok",
			Duration: time.Duration(seq) * 1500 * time.Microsecond, Instance: "i-1", PrevHash: prev, Hash: hex(seq)}
		switch seq % 5 {
		case 1:
			e.Subject, e.Detail = "bob", []byte(`{"replayed":true}`)
		case 2:
			e.ArgsDigest, e.Kind, e.Outcome = "raw:"+hex(seq), "refusal", "rate_limited"
		case 3:
			e.Server, e.Tool, e.Hash = "", "", "NOT-HEX-"+hex(seq)[:10]
		case 4:
			e.Detail = []byte(`{}`)
		case 0:
			e.Hash = strings.ToUpper(hex(seq + 10)) // 64 hex digits, not lower-case: kept as text
		}
		prev = e.Hash
		out[i] = e
	}
	return out
}

func header(es []store.AuditEntry, id int64) Header {
	return Header{ID: id, Chain: es[0].Chain, FirstSeq: es[0].Seq, LastSeq: es[len(es)-1].Seq}
}

func withIDs(es []store.AuditEntry, id int64) []store.AuditEntry {
	out := append([]store.AuditEntry(nil), es...)
	for i := range out {
		out[i].ID = id + int64(i)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		first int64
		n     int
	}{{1, 1}, {1, 7}, {40, 1}, {2, 256}} {
		es := run(tc.first, tc.n)
		b := Append(nil, es)
		got, err := Decode(b, header(es, 100))
		if err != nil {
			t.Fatalf("first %d n %d: %v", tc.first, tc.n, err)
		}
		if want := withIDs(es, 100); !reflect.DeepEqual(got, want) {
			t.Fatalf("first %d n %d: round trip differs:\ngot  %+v\nwant %+v", tc.first, tc.n, got[0], want[0])
		}
	}
}

// TestDense: a batch of a gateway's plain calls (the same subject, server,
// tool and outcome; digests and hashes in hex) takes far fewer bytes than
// its entries' texts.
func TestDense(t *testing.T) {
	es := run(2, 64)
	for i := range es {
		es[i].Subject, es[i].Server, es[i].Tool, es[i].Outcome, es[i].Kind, es[i].Detail = "alice", "echo", "echo", "ok", "call", nil
		es[i].Hash = strings.Repeat("ab", 32)
		es[i].PrevHash = es[i].Hash
	}
	es[0].PrevHash = strings.Repeat("cd", 32)
	b := Append(nil, es)
	// A hash and a digest are 33 bytes each; the time, duration and tags
	// about 20; the texts that repeat, a byte each.
	if per := len(b) / len(es); per > 96 {
		t.Fatalf("%d bytes an entry; want at most 96", per)
	}
	got, err := Decode(b, header(es, 1))
	if err != nil || len(got) != 64 || got[63].Hash != es[63].Hash || got[5].PrevHash != es[4].Hash {
		t.Fatalf("%v %d", err, len(got))
	}
}

func TestJSONForm(t *testing.T) {
	h := func(s string) string { return `"` + hex.EncodeToString([]byte(s)) + `"` }
	js := `J[[1760000000007,` + h("call") + `,` + h("alice") + `,` + h("echo") + `,` + h("echo") + `,` + h("d1") + `,` + h("ok") + `,1500,` +
		h("i-1") + `,"",` + h("h1") + `,` + strings.ToUpper(h(`{"replayed":true}`)) + `],` +
		`[1760000000014,` + h("refusal") + `,` + h("bob") + `,"","",` + h("d2") + `,` + h("denied") + `,0,` + h("i-1") + `,` + h("h1") + `,` + h("h2") + `,null]]`
	got, err := Decode([]byte(js), Header{ID: 5, Chain: "c", FirstSeq: 1, LastSeq: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []store.AuditEntry{
		{ID: 5, Chain: "c", Seq: 1, At: time.UnixMilli(1760000000007).UTC(), Kind: "call", Subject: "alice", Server: "echo", Tool: "echo",
			ArgsDigest: "d1", Outcome: "ok", Duration: 1500 * time.Microsecond, Instance: "i-1", Hash: "h1", Detail: []byte(`{"replayed":true}`)},
		{ID: 6, Chain: "c", Seq: 2, At: time.UnixMilli(1760000000014).UTC(), Kind: "refusal", Subject: "bob", ArgsDigest: "d2",
			Outcome: "denied", Instance: "i-1", PrevHash: "h1", Hash: "h2"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

// TestDecodeErrors: each way a block can be wrong is refused with
// ErrCorrupt and a message that says which.
func TestDecodeErrors(t *testing.T) {
	good := run(1, 3)
	b := Append(nil, good)
	h := header(good, 1)
	trunc := func(n int) []byte { return b[:len(b)-n] }
	for _, tc := range []struct {
		name string
		data []byte
		h    Header
		want string
	}{
		{"empty", nil, Header{Chain: "c", FirstSeq: 1, LastSeq: 1}, "more than its 0 bytes"},
		{"empty, no entries claimed", []byte{}, Header{Chain: "c", FirstSeq: 1, LastSeq: 0}, "not a run"},
		{"seq 0", b, Header{Chain: "c", FirstSeq: 0, LastSeq: 2}, "not a run"},
		{"a header claiming more than the bytes hold", b, Header{Chain: "c", FirstSeq: 1, LastSeq: 1 << 40}, "more than its"},
		{"unknown form", append([]byte{'X'}, b[1:]...), h, "unknown form 'X'"},
		{"truncated in the last entry", trunc(1), h, "ends"},
		{"truncated in a hash", append([]byte{'B', tagRaw}, make([]byte, 20)...), Header{Chain: "c", FirstSeq: 1, LastSeq: 1}, "the first entry's previous hash of 32 bytes runs past its end"},
		{"truncated further back", trunc(20), h, "it ends inside"},
		{"bytes after the last entry", append(append([]byte(nil), b...), 0), h, "1 bytes follow its last entry"},
		{"fewer entries than the header says", b, Header{Chain: "c", FirstSeq: 1, LastSeq: 4}, "it ends inside a time"},
		{"a repeat in the first entry", []byte{'B', tagEmpty, 2, tagSame}, Header{Chain: "c", FirstSeq: 1, LastSeq: 1}, "there is none"},
		{"an unknown tag", []byte{'B', tagEmpty, 2, 9}, Header{Chain: "c", FirstSeq: 1, LastSeq: 1}, "unknown tag 9"},
		{"a hash's tag on a name", []byte{'B', tagEmpty, 2, tagRaw}, Header{Chain: "c", FirstSeq: 1, LastSeq: 1}, "not a hash"},
		{"a varint that overflows", []byte{'B', tagEmpty, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, Header{Chain: "c", FirstSeq: 1, LastSeq: 1}, "overflows"},
		{"a text's length past the end", []byte{'B', tagEmpty, 2, tagText, 50, 'a'}, Header{Chain: "c", FirstSeq: 1, LastSeq: 1}, "runs past its end"},
		{"no kind", append([]byte{'B', tagEmpty, 2}, append(bytes.Repeat([]byte{tagEmpty}, 7), 0, tagText, 1, 'h', 0)...), Header{Chain: "c", FirstSeq: 1, LastSeq: 1}, "no kind or no hash"},
		{"JSON not an array", []byte(`J{}`), Header{Chain: "c", FirstSeq: 1, LastSeq: 1}, "its JSON"},
		{"JSON entry of 11 fields", []byte(`J[[1,"6b","","","","","",0,"","","68"]]`), Header{Chain: "c", FirstSeq: 1, LastSeq: 1}, "11 fields"},
		{"JSON text where a number goes", []byte(`J[["1","6b","","","","","",0,"","","68",null]]`), Header{Chain: "c", FirstSeq: 1, LastSeq: 1}, "field 1 is not an integer"},
		{"JSON number where a text goes", []byte(`J[[1,2,"","","","","",0,"","","68",null]]`), Header{Chain: "c", FirstSeq: 1, LastSeq: 1}, "field 2: not a text"},
		{"JSON text not hex", []byte(`J[[1,"kk","","","","","",0,"","","68",null]]`), Header{Chain: "c", FirstSeq: 1, LastSeq: 1}, "field 2: not hex"},
		{"JSON detail not hex", []byte(`J[[1,"6b","","","","","",0,"","","68","{}"]]`), Header{Chain: "c", FirstSeq: 1, LastSeq: 1}, "field 12: not hex"},
		{"JSON count differs", []byte(`J[[1,"6b","","","","","",0,"","","68",null]]`), Header{Chain: "c", FirstSeq: 1, LastSeq: 2}, "holds 1 entries, its header says 2"},
		{"JSON not linked", []byte(`J[[1,"6b","","","","","",0,"","","68",null],[1,"6b","","","","","",0,"","78","6869",null]]`), Header{Chain: "c", FirstSeq: 1, LastSeq: 2}, "not linked"},
		{"JSON negative duration", []byte(`J[[1,"6b","","","","","",-5,"","","68",null]]`), Header{Chain: "c", FirstSeq: 1, LastSeq: 1}, "negative duration"},
		{"JSON no hash", []byte(`J[[1,"6b","","","","","",0,"","","",null]]`), Header{Chain: "c", FirstSeq: 1, LastSeq: 1}, "no kind or no hash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.data, tc.h)
			if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v; want store.ErrCorrupt saying %q", err, tc.want)
			}
			if got != nil {
				t.Fatalf("entries returned with an error: %d", len(got))
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	es := run(1, 5)
	f.Add(Append(nil, es), int64(1), int64(5))
	f.Add(Append(nil, es[:1]), int64(1), int64(1))
	f.Add([]byte(`J[[1,"6b","","","","","",0,"","","68",null]]`), int64(1), int64(1))
	f.Add([]byte{'B'}, int64(1), int64(1))
	f.Fuzz(func(t *testing.T, data []byte, first, last int64) {
		h := Header{ID: 1, Chain: "c", FirstSeq: first, LastSeq: last}
		got, err := Decode(data, h)
		if err != nil {
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("an error that is not store.ErrCorrupt: %v", err)
			}
			return
		}
		if int64(len(got)) != h.Len() {
			t.Fatalf("%d entries for a header of %d", len(got), h.Len())
		}
		for i, e := range got {
			if e.Kind == "" || e.Hash == "" || e.Seq != first+int64(i) || (i > 0 && e.PrevHash != got[i-1].Hash) {
				t.Fatalf("entry %d read wrong: %+v", i, e)
			}
		}
		// What reads as a binary block writes back as the same entries.
		if data[0] == FormBinary {
			again, err := Decode(Append(nil, got), h)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("re-encoded block differs: %v", err)
			}
		}
	})
}
