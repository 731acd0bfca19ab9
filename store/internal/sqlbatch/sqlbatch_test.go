package sqlbatch

import (
	"reflect"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
)

// TestAuditArgsShared: AuditArgs passes the values of every row in
// AuditValues's order, a text equal to the row before's as that row's
// argument or its own, and allocates no string for the texts a batch
// repeats.
func TestAuditArgsShared(t *testing.T) {
	at := time.UnixMilli(1_780_000_000_000)
	es := []store.AuditEntry{
		{Chain: "c", Seq: 1, At: at, Kind: "call", Subject: "a", Server: "s", Tool: "t", ArgsDigest: "d1", Outcome: "ok", Instance: "i", Hash: "h1"},
		{Chain: "c", Seq: 2, At: at, Kind: "call", Subject: "b", Server: "s", Tool: "t", ArgsDigest: "d1", Outcome: "ok", Instance: "i", PrevHash: "h1", Hash: "h2", Detail: []byte(`{}`)},
		{Chain: "c", Seq: 3, At: at, Kind: "refusal", Subject: "b", Server: "s2", Tool: "u", ArgsDigest: "d2", Outcome: "denied", Instance: "j", PrevHash: "h2", Hash: "h3", Duration: time.Second},
		{Chain: "c2", Seq: 4, At: at, Kind: "refusal", Subject: "b", Server: "s2", Tool: "u", ArgsDigest: "d2", Outcome: "denied", Instance: "j", PrevHash: "hx", Hash: "h4"},
	}
	var want []any
	for _, e := range es {
		want = append(want, e.Chain, e.Seq, norm.MS(e.At), e.Kind, e.Subject, e.Server, e.Tool, e.ArgsDigest, e.Outcome,
			e.Duration.Microseconds(), e.Instance, e.PrevHash, e.Hash, e.Detail)
	}
	got := AuditArgs([]any{"before"}, es)
	if !reflect.DeepEqual(got[1:], want) || got[0] != "before" {
		t.Fatalf("AuditArgs:\n got %v\nwant %v", got[1:], want)
	}
	same := make([]store.AuditEntry, 64)
	for i := range same {
		same[i] = es[0]
		same[i].Seq, same[i].Hash = int64(i+1), "h"+string(rune('A'+i))
		if i > 0 {
			same[i].PrevHash = same[i-1].Hash
		}
	}
	args := make([]any, 0, 14*len(same))
	// A row after the first boxes its hash (its one new text) and its
	// time (an integer past 255): two allocations, where each of its ten
	// texts was one.
	if n := testing.AllocsPerRun(20, func() { args = AuditArgs(args[:0], same) }); n > 3*64 {
		t.Errorf("AuditArgs of 64 repeating rows: %.0f allocations", n)
	}
}
