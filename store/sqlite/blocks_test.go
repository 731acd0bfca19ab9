package sqlite_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// TestMigrateAuditBlocksFromV13: a file of schema version 13 (audit_log, a
// row an entry) whose entries hold texts and details of every kind
// (quotes, a newline, non-ASCII, JSON with its own spacing, no detail)
// upgrades to blocks: every entry reads back byte for byte with its ID,
// the chain verifies, and the store goes on in blocks after it, its IDs
// after the greatest, a checkpoint and a truncation in both forms.
func TestMigrateAuditBlocksFromV13(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "v13.db")
	at0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	head := store.AuditHead{Chain: "gw/v13"}
	var old []store.AuditEntry
	for i := range 12 {
		e := store.AuditEntry{At: at0.Add(time.Duration(i) * time.Second), Kind: audit.KindCall, Subject: []string{"zoë", `b "q" b`, "line\nbreak", ""}[i%4],
			Server: "bank", Tool: "pay", ArgsDigest: audit.ArgsDigest([]byte(fmt.Sprintf(`{"n":%d}`, i))), Outcome: "ok",
			Duration: time.Duration(i) * 1500 * time.Microsecond, Instance: "old"}
		switch i % 3 {
		case 0:
			e.Detail = []byte(`{ "replayed" : true,  "note": "ä\u00e4" }`)
		case 1:
			e.Detail = []byte(`{}`)
		}
		e = audit.Link(e, head)
		head.Last, head.Hash = e.Seq, e.Hash
		old = append(old, e)
	}
	rawExec(t, path, schemaAt(t, v12Dialect, 13)...)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range old {
		var detail any
		if e.Detail != nil {
			detail = e.Detail
		}
		if _, err := db.Exec(`INSERT INTO audit_log (chain, seq, at, kind, subject, server, tool, args_digest, outcome, duration_us, instance, prev_hash, hash, detail)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, e.Chain, e.Seq, e.At.UnixMilli(), e.Kind, e.Subject, e.Server, e.Tool, e.ArgsDigest, e.Outcome,
			e.Duration.Microseconds(), e.Instance, e.PrevHash, e.Hash, detail); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	s, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if got := queryStrings(t, path, `SELECT name FROM sqlite_master WHERE name = 'audit_log'`); len(got) != 0 {
		t.Fatalf("audit_log is still there: %q", got)
	}
	if got := queryStrings(t, path, `SELECT DISTINCT substr(data, 1, 1) FROM audit_blocks`); strings.Join(got, "") != "J" {
		t.Fatalf("the migrated blocks' forms: %q", got)
	}
	back, err := s.ListAudit(ctx, store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range old {
		old[i].ID = int64(i + 1)
	}
	if !reflect.DeepEqual(back, old) {
		for i := range back {
			if !reflect.DeepEqual(back[i], old[i]) {
				t.Fatalf("entry %d after the migration:\n got %+v\nwant %+v", i+1, back[i], old[i])
			}
		}
		t.Fatalf("%d entries after the migration, want %d", len(back), len(old))
	}
	if res, err := audit.Verify(ctx, s, nil); err != nil || res.Problem != nil {
		t.Fatalf("verify after the migration: %v, %+v", err, res)
	}

	// The store goes on in blocks: a batch of 5 after the 12 blocks of one.
	more := make([]store.AuditEntry, 5)
	for i := range more {
		more[i] = store.AuditEntry{Chain: "gw/v13", At: at0.Add(time.Hour), Kind: audit.KindCall, Subject: "new", Outcome: "ok"}
	}
	out, err := s.AppendAuditLinked(ctx, more, audit.Link)
	if err != nil {
		t.Fatal(err)
	}
	if out[0].ID != 13 || out[4].ID != 17 || out[0].Seq != 13 || out[0].PrevHash != old[11].Hash {
		t.Fatalf("the batch after the migration: first %+v", out[0])
	}
	if got := queryStrings(t, path, `SELECT id || ':' || first_seq || '-' || last_seq || ':' || substr(data, 1, 1) FROM audit_blocks WHERE id > 12`); strings.Join(got, " ") != "13:13-17:B" {
		t.Fatalf("the new block: %q", got)
	}
	// Checkpoints at an entry inside a binary block and at a migrated one;
	// a truncation that cuts the binary block.
	for _, seq := range []int64{15, 6} {
		if err := s.PutAuditCheckpoint(ctx, store.AuditCheckpoint{Chain: "gw/v13", Seq: seq, Hash: entryHash(t, s, "gw/v13", seq)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutAuditCheckpoint(ctx, store.AuditCheckpoint{Chain: "gw/v13", Seq: 14, Hash: old[3].Hash}); err == nil {
		t.Fatal("a checkpoint with another entry's hash was taken")
	}
	if n, err := s.TruncateAudit(ctx, "gw/v13", 16); err != nil || n != 15 {
		t.Fatalf("TruncateAudit(16) = %d, %v; want 15", n, err)
	}
	rest, err := s.ReadAuditChain(ctx, "gw/v13", 0, 0)
	if err != nil || len(rest) != 2 || rest[0].Seq != 16 || rest[0].ID != 16 || rest[1].ID != 17 || rest[0].Hash != out[3].Hash {
		t.Fatalf("the chain after truncation: %+v, %v", rest, err)
	}
	h, err := s.AuditHead(ctx, "gw/v13")
	if err != nil || h.First != 16 || h.Last != 17 || h.Entries != 2 || h.Hash != out[4].Hash {
		t.Fatalf("head after truncation: %+v, %v", h, err)
	}
	if res, err := audit.Verify(ctx, s, nil); err != nil || res.Problem != nil {
		t.Fatalf("verify after truncation: %v, %+v", err, res)
	}
}

// TestAuditBlocksRead: many blocks of two chains (batches of 1 to 7
// entries, subjects and times that vary inside a block) read back through
// every filter and cursor as a model of the entries says, across the
// readers' pages of blocks.
func TestAuditBlocksRead(t *testing.T) {
	ctx := t.Context()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "blocks.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var all []store.AuditEntry
	k := 0
	for b := range 160 {
		chain := []string{"gw/a", "gw/b"}[b%3%2]
		n := 1 + b%7
		batch := make([]store.AuditEntry, n)
		for i := range batch {
			k++
			batch[i] = store.AuditEntry{Chain: chain, At: at0.Add(time.Duration(k) * time.Second), Kind: []string{audit.KindCall, audit.KindRefusal}[k%5/4],
				Subject: []string{"alice", "bob", "carol"}[k%3], Tool: "t", Outcome: "ok"}
		}
		out, err := s.AppendAuditLinked(ctx, batch, audit.Link)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, out...)
	}
	for i, e := range all {
		if e.ID != int64(i+1) {
			t.Fatalf("entry %d has ID %d", i, e.ID)
		}
	}
	model := func(f store.AuditFilter) []store.AuditEntry {
		var out []store.AuditEntry
		for _, e := range all {
			if e.ID > f.AfterID && (f.Chain == "" || e.Chain == f.Chain) && (f.Subject == "" || e.Subject == f.Subject) &&
				(f.Kind == "" || e.Kind == f.Kind) && (f.Since.IsZero() || !e.At.Before(f.Since)) && (f.Until.IsZero() || e.At.Before(f.Until)) {
				out = append(out, e)
				if f.Limit > 0 && len(out) == f.Limit {
					break
				}
			}
		}
		return out
	}
	ids := func(es []store.AuditEntry) []int64 {
		out := []int64{}
		for _, e := range es {
			out = append(out, e.ID)
		}
		return out
	}
	for _, f := range []store.AuditFilter{
		{},
		{AfterID: 1}, {AfterID: 300}, {AfterID: 301, Limit: 3}, {AfterID: int64(len(all))}, {AfterID: int64(len(all) - 2)},
		{Limit: 1}, {Limit: 70}, {Chain: "gw/b"}, {Chain: "gw/a", AfterID: 250, Limit: 40}, {Subject: "bob", Limit: 100},
		{Subject: "carol", Chain: "gw/b", AfterID: 17}, {Kind: audit.KindRefusal}, {Since: at0.Add(200 * time.Second), Until: at0.Add(420 * time.Second)},
		{Since: at0.Add(10 * time.Hour)}, {Subject: "nobody"},
	} {
		got, err := s.ListAudit(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if want := model(f); !reflect.DeepEqual(ids(got), ids(want)) {
			t.Fatalf("ListAudit(%+v):\n got %v\nwant %v", f, ids(got), ids(want))
		}
		for _, e := range got {
			if w := all[e.ID-1]; !reflect.DeepEqual(e, w) {
				t.Fatalf("entry %d reads back as %+v, written %+v", e.ID, e, w)
			}
		}
	}
	for _, chain := range []string{"gw/a", "gw/b"} {
		var of []store.AuditEntry
		for _, e := range all {
			if e.Chain == chain {
				of = append(of, e)
			}
		}
		for _, c := range []struct {
			after int64
			limit int
		}{{0, 0}, {0, 5}, {1, 0}, {3, 2}, {100, 0}, {101, 1}, {int64(len(of)) - 1, 0}, {int64(len(of)), 0}, {int64(len(of)) + 5, 3}} {
			got, err := s.ReadAuditChain(ctx, chain, c.after, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			var want []store.AuditEntry
			for _, e := range of {
				if e.Seq > c.after && (c.limit == 0 || len(want) < c.limit) {
					want = append(want, e)
				}
			}
			if !reflect.DeepEqual(ids(got), ids(want)) {
				t.Fatalf("ReadAuditChain(%s, %d, %d):\n got %v\nwant %v", chain, c.after, c.limit, ids(got), ids(want))
			}
		}
		h, err := s.AuditHead(ctx, chain)
		if err != nil || h.First != 1 || h.Last != int64(len(of)) || h.Entries != int64(len(of)) || h.Hash != of[len(of)-1].Hash {
			t.Fatalf("head of %s: %+v, %v", chain, h, err)
		}
	}
	heads, err := s.AuditHeads(ctx)
	if err != nil || len(heads) != 2 || heads[0].Chain != "gw/a" || heads[1].Chain != "gw/b" {
		t.Fatalf("heads: %+v, %v", heads, err)
	}
	if res, err := audit.Verify(ctx, s, nil); err != nil || res.Problem != nil {
		t.Fatalf("verify: %v, %+v", err, res)
	}
}
