package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/store"
)

// auditDB is a real database holding an audit trail, and a way to tamper
// with it in SQL, behind the store's back.
type auditDB struct {
	dsn  string
	exec func(t *testing.T, stmt string)
	// blob is b as an SQL literal of the database's bytes type.
	blob func(b []byte) string
	// entryRows are the statements that write es (of one chain; IDs,
	// seqs and hashes as given) in the store's layout: PostgreSQL's
	// audit_log, a row an entry; SQLite's audit_blocks, here a block of one
	// in the JSON form its migration writes, which the store reads as it
	// reads its own.
	entryRows func(es []store.AuditEntry) []string
}

// replace deletes chain's entries and writes es in their place, in SQL:
// what someone who can write the database does to the trail.
func (db auditDB) replace(t *testing.T, chain string, es []store.AuditEntry) {
	t.Helper()
	table := "audit_log"
	if strings.HasPrefix(db.dsn, "sqlite:") {
		table = "audit_blocks"
	}
	db.exec(t, `DELETE FROM `+table+` WHERE chain = `+lit(chain))
	for _, stmt := range db.entryRows(es) {
		db.exec(t, stmt)
	}
}

// sqliteBlocks writes each entry as a block of one in the JSON form: an
// array of entries, each [at, kind, subject, server, tool, args_digest,
// outcome, duration_us, instance, prev_hash, hash, detail], every text the
// hex of its bytes.
func sqliteBlocks(es []store.AuditEntry) []string {
	var out []string
	for _, e := range es {
		h := func(s string) string { return `"` + hex.EncodeToString([]byte(s)) + `"` }
		detail := "null"
		if e.Detail != nil {
			detail = h(string(e.Detail))
		}
		data := fmt.Sprintf(`J[[%d,%s,%s,%s,%s,%s,%s,%d,%s,%s,%s,%s]]`, e.At.UnixMilli(), h(e.Kind), h(e.Subject), h(e.Server), h(e.Tool),
			h(e.ArgsDigest), h(e.Outcome), e.Duration.Microseconds(), h(e.Instance), h(e.PrevHash), h(e.Hash), detail)
		out = append(out, fmt.Sprintf(`INSERT INTO audit_blocks (id, chain, first_seq, last_seq, last_hash, data) VALUES (%d, %s, %d, %d, %s, CAST(%s AS BLOB))`,
			e.ID, lit(e.Chain), e.Seq, e.Seq, lit(e.Hash), lit(data)))
	}
	return out
}

// postgresRows writes each entry as a row of audit_log.
func postgresRows(es []store.AuditEntry) []string {
	var out []string
	for _, e := range es {
		detail := "NULL"
		if e.Detail != nil {
			detail = `'\x` + hex.EncodeToString(e.Detail) + `'::bytea`
		}
		out = append(out, fmt.Sprintf(`INSERT INTO audit_log (id, chain, seq, at, kind, subject, server, tool, args_digest, outcome, duration_us, instance, prev_hash, hash, detail)
VALUES (%d, %s, %d, %d, %s, %s, %s, %s, %s, %s, %d, %s, %s, %s, %s)`, e.ID, lit(e.Chain), e.Seq, e.At.UnixMilli(), lit(e.Kind), lit(e.Subject), lit(e.Server),
			lit(e.Tool), lit(e.ArgsDigest), lit(e.Outcome), e.Duration.Microseconds(), lit(e.Instance), lit(e.PrevHash), lit(e.Hash), detail))
	}
	return out
}

// edited returns a copy of es with f applied to each (f drops an entry
// by returning false).
func edited(es []store.AuditEntry, f func(e *store.AuditEntry) bool) []store.AuditEntry {
	var out []store.AuditEntry
	for _, e := range es {
		if f(&e) {
			out = append(out, e)
		}
	}
	return out
}

// onAuditStores runs f on a fresh SQLite file and a fresh PostgreSQL
// schema (skipped without $GATEHOUSE_TEST_POSTGRES).
func onAuditStores(t *testing.T, f func(t *testing.T, db auditDB)) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "gh.db")
		f(t, auditDB{dsn: "sqlite:" + path, exec: func(t *testing.T, stmt string) {
			t.Helper()
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}, blob: func(b []byte) string { return "X'" + hex.EncodeToString(b) + "'" }, entryRows: sqliteBlocks})
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.Schema(t, "cli_audit", "the audit tampering tests on PostgreSQL")
		f(t, auditDB{dsn: dsn, exec: func(t *testing.T, stmt string) {
			t.Helper()
			ctx := context.Background()
			c, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			if _, err := c.Exec(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}, blob: func(b []byte) string { return `'\x` + hex.EncodeToString(b) + "'::bytea" }, entryRows: postgresRows})
	})
}

// trail is what writeTrail wrote, as stored.
type trail struct {
	gw, op       []store.AuditEntry      // the entries of gw/t and of the operators' chain
	gwCPs, opCPs []store.AuditCheckpoint // their checkpoints
}

// writeTrail writes six entries to chain gw/t through a Writer signing
// with key, a checkpoint after the third (its first, linked to none) and
// one at Close (at seq 6, linked to 3), and three operators' entries (an
// approval decided, a trust, a purge), each checkpointed and signed as
// the operators' commands do (at 1, 2 and 3, each linked to the one
// before).
func writeTrail(t *testing.T, dsn string, key ed25519.PrivateKey) trail {
	t.Helper()
	ctx := context.Background()
	st, err := openStore(ctx, dsn, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w, err := audit.NewWriter(ctx, st, &audit.WriterOptions{Chain: "gw/t", Instance: "t", Key: key, CheckpointEvery: 3, Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 6; i++ {
		e := store.AuditEntry{Kind: audit.KindCall, Subject: "alice", Server: "bank", Tool: "transfer",
			ArgsDigest: audit.ArgsDigest(json.RawMessage(fmt.Sprintf(`{"amount":%d}`, i))), Outcome: "ok", Duration: time.Duration(i) * time.Millisecond}
		if err := w.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, e := range []store.AuditEntry{
		{Kind: audit.KindApprovalDecided, Subject: "carol@ops", Tool: "transfer", Outcome: "approved"},
		{Kind: audit.KindTrust, Subject: "ops@host", Server: "bank", Outcome: "trusted"},
		{Kind: audit.KindPurge, Subject: "ops@host", Outcome: "ok"},
	} {
		if _, err := audit.AppendCheckpointed(ctx, st, audit.OperatorChain, e, key); err != nil {
			t.Fatal(err)
		}
	}
	var tr trail
	tr.gw, _ = st.ReadAuditChain(ctx, "gw/t", 0, 0)
	tr.op, _ = st.ReadAuditChain(ctx, audit.OperatorChain, 0, 0)
	tr.gwCPs, _ = st.AuditCheckpoints(ctx, "gw/t")
	tr.opCPs, err = st.AuditCheckpoints(ctx, audit.OperatorChain)
	if err != nil || len(tr.gw) != 6 || len(tr.op) != 3 || len(tr.gwCPs) != 2 || tr.gwCPs[0].Seq != 3 || len(tr.opCPs) != 3 {
		t.Fatalf("trail: %d+%d entries, checkpoints %+v %+v, %v", len(tr.gw), len(tr.op), tr.gwCPs, tr.opCPs, err)
	}
	return tr
}

func pubFile(t *testing.T, k ed25519.PrivateKey) string {
	t.Helper()
	b, err := audit.MarshalPublicKey(k.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "audit.pub")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func lit(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// rewrite is the strongest rewrite of a chain by someone who can write the
// database and knows the algorithms but not the key: from entry from on,
// each entry edited by edit and every hash recomputed and relinked; every
// checkpoint from there made to name the new hash, and every link of a
// linked checkpoint's signature made to name the new digest of the
// checkpoint it links to. Only the signatures tell.
func rewrite(t *testing.T, db auditDB, es []store.AuditEntry, cps []store.AuditCheckpoint, from int64, edit func(*store.AuditEntry)) {
	t.Helper()
	chain := es[0].Chain
	head := store.AuditHead{Chain: chain, Last: from - 1}
	if from > 1 {
		head.Hash = es[from-2].Hash
	}
	hashAt := map[int64]string{}
	out := append([]store.AuditEntry(nil), es[:from-1]...)
	for _, e := range es[from-1:] {
		edit(&e)
		id := e.ID
		e = audit.Link(e, head)
		e.ID = id
		head.Last, head.Hash = e.Seq, e.Hash
		hashAt[e.Seq] = e.Hash
		out = append(out, e)
	}
	db.replace(t, chain, out)
	digestAt := map[int64][32]byte{}
	for _, c := range cps {
		if h, ok := hashAt[c.Seq]; ok {
			c.Hash = h
		}
		if l, ok := audit.LinkOf(c); ok && l.Seq > 0 {
			c.Signature = append([]byte(nil), c.Signature...)
			d := digestAt[l.Seq]
			copy(c.Signature[9:41], d[:])
		}
		digestAt[c.Seq] = audit.CheckpointDigest(c)
		db.exec(t, fmt.Sprintf(`UPDATE audit_checkpoints SET hash = %s, signature = %s WHERE chain = %s AND seq = %d`,
			lit(c.Hash), db.blob(c.Signature), lit(chain), c.Seq))
	}
}

// caught is the first broken entry verify names; a zero caught means the
// tampering passes unseen.
type caught struct {
	chain string
	seq   int64
	what  string
}

// TestAuditVerifyCatchesTampering: each kind of tampering, done in SQL on
// the real database, makes `gatehouse audit verify` exit 1 naming the
// chain, the first broken entry and what is wrong, with the flags that
// catch it; with the others it passes (what docs/audit.md's table says,
// row by row). Before tampering, `gatehouse audit head --out` keeps the
// head that --expect-head reads.
func TestAuditVerifyCatchesTampering(t *testing.T) {
	const where = `chain = 'gw/t'`
	const opWhere = `chain = 'operator'`
	cases := []struct {
		name   string
		tamper func(t *testing.T, db auditDB, tr trail)
		// what plain verify, verify --public-key and verify --expect-head
		// (without the key) say; with both flags, the key's answer, else
		// the head's.
		plain, key, head caught
		// expectChain, when set, is caught by --expect-chain too.
		expectChain caught
	}{
		{name: "an entry edited", tamper: func(t *testing.T, db auditDB, tr trail) {
			db.replace(t, "gw/t", edited(tr.gw, func(e *store.AuditEntry) bool {
				if e.Seq == 2 {
					e.Outcome = "denied"
				}
				return true
			}))
		}, plain: caught{"gw/t", 2, "edited"}, key: caught{"gw/t", 2, "edited"}, head: caught{"gw/t", 2, "edited"}},
		{name: "an entry deleted", tamper: func(t *testing.T, db auditDB, tr trail) {
			db.replace(t, "gw/t", edited(tr.gw, func(e *store.AuditEntry) bool { return e.Seq != 2 }))
		}, plain: caught{"gw/t", 2, "missing"}, key: caught{"gw/t", 2, "missing"}, head: caught{"gw/t", 2, "missing"}},
		{name: "an entry inserted", tamper: func(t *testing.T, db auditDB, tr trail) {
			// The strongest insert: room made by renumbering, the new entry
			// hashed and linked exactly as a writer would.
			es := edited(tr.gw, func(e *store.AuditEntry) bool {
				if e.Seq >= 5 {
					e.Seq++
				}
				return true
			})
			in := audit.Link(store.AuditEntry{At: tr.gw[3].At, Kind: audit.KindCall, Subject: "mallory", Outcome: "ok"},
				store.AuditHead{Chain: "gw/t", Last: 4, Hash: tr.gw[3].Hash})
			in.ID = 1000
			db.replace(t, "gw/t", append(es, in))
		}, plain: caught{"gw/t", 6, "inserted"}, key: caught{"gw/t", 6, "inserted"}, head: caught{"gw/t", 6, "inserted"}},
		{name: "two entries swapped", tamper: func(t *testing.T, db auditDB, tr trail) {
			db.replace(t, "gw/t", edited(tr.gw, func(e *store.AuditEntry) bool {
				switch e.Seq {
				case 4:
					e.Seq = 5
				case 5:
					e.Seq = 4
				}
				return true
			}))
		}, plain: caught{"gw/t", 4, "moved"}, key: caught{"gw/t", 4, "moved"}, head: caught{"gw/t", 4, "moved"}},
		{name: "the start deleted without a checkpoint", tamper: func(t *testing.T, db auditDB, tr trail) {
			db.replace(t, "gw/t", edited(tr.gw, func(e *store.AuditEntry) bool { return e.Seq >= 3 }))
		}, plain: caught{"gw/t", 3, "no checkpoint at seq 2"}, key: caught{"gw/t", 3, "no checkpoint at seq 2"}, head: caught{"gw/t", 3, "no checkpoint at seq 2"}},
		{name: "the end deleted, its checkpoint left", tamper: func(t *testing.T, db auditDB, tr trail) {
			db.replace(t, "gw/t", edited(tr.gw, func(e *store.AuditEntry) bool { return e.Seq < 5 }))
		}, plain: caught{"gw/t", 5, "deleted from its end"}, key: caught{"gw/t", 5, "deleted from its end"}, head: caught{"gw/t", 5, "deleted from its end"}},
		{name: "a rewrite with every hash recomputed", tamper: func(t *testing.T, db auditDB, tr trail) {
			rewrite(t, db, tr.gw, tr.gwCPs, 4, func(e *store.AuditEntry) { e.Subject = "mallory" })
		}, key: caught{"gw/t", 6, "does not verify"}, head: caught{"gw/t", 6, "not the one the head file's checkpoint names"}},
		{name: "an operator's decision rewritten", tamper: func(t *testing.T, db auditDB, tr trail) {
			// Who approved, and the chain after it, rewritten; the
			// checkpoints and their links moved along.
			rewrite(t, db, tr.op, tr.opCPs, 1, func(e *store.AuditEntry) {
				if e.Seq == 1 {
					e.Subject = "mallory"
				}
			})
		}, key: caught{"operator", 1, "does not verify"}, head: caught{"operator", 3, "not the one the head file's checkpoint names"}},
		{name: "an operator's decision edited", tamper: func(t *testing.T, db auditDB, tr trail) {
			db.replace(t, audit.OperatorChain, edited(tr.op, func(e *store.AuditEntry) bool {
				if e.Seq == 1 {
					e.Subject = "mallory"
				}
				return true
			}))
		}, plain: caught{"operator", 1, "edited"}, key: caught{"operator", 1, "edited"}, head: caught{"operator", 1, "edited"}},
		{name: "the newest operator's entry rewritten, its checkpoint deleted", tamper: func(t *testing.T, db auditDB, tr trail) {
			rewrite(t, db, tr.op, nil, 3, func(e *store.AuditEntry) { e.Outcome = "nothing" })
			db.exec(t, `DELETE FROM audit_checkpoints WHERE `+opWhere+` AND seq = 3`)
		}, head: caught{"operator", 3, "not the one the head file's checkpoint names"}},
		{name: "a fake replica's chain added", tamper: func(t *testing.T, db auditDB, tr trail) {
			head := store.AuditHead{Chain: "gw/fake"}
			var fake []store.AuditEntry
			for i := range 3 {
				e := audit.Link(store.AuditEntry{At: tr.gw[i].At, Kind: audit.KindCall, Subject: "mallory", Outcome: "ok"}, head)
				e.ID = int64(1000 + i)
				fake = append(fake, e)
				head.Last, head.Hash = e.Seq, e.Hash
			}
			db.replace(t, "gw/fake", fake)
		}, key: caught{"gw/fake", 1, "the chain has no checkpoint"}},
		{name: "a chain's end cut with its checkpoints", tamper: func(t *testing.T, db auditDB, tr trail) {
			db.replace(t, "gw/t", edited(tr.gw, func(e *store.AuditEntry) bool { return e.Seq < 4 }))
			db.exec(t, `DELETE FROM audit_checkpoints WHERE `+where+` AND seq >= 4`)
		}, head: caught{"gw/t", 4, "ends at seq 3, before seq 6 of the head file's checkpoint"}},
		{name: "a checkpoint in the middle deleted", tamper: func(t *testing.T, db auditDB, _ trail) {
			db.exec(t, `DELETE FROM audit_checkpoints WHERE `+where+` AND seq = 3`)
		}, plain: caught{"gw/t", 3, "missing, yet the checkpoint at seq 6 links to it"}, key: caught{"gw/t", 3, "missing, yet the checkpoint at seq 6 links to it"},
			head: caught{"gw/t", 3, "missing, yet the checkpoint at seq 6 links to it"}},
		{name: "a checkpoint in the middle deleted, the next one's link rewritten", tamper: func(t *testing.T, db auditDB, tr trail) {
			db.exec(t, `DELETE FROM audit_checkpoints WHERE `+where+` AND seq = 3`)
			sig := append([]byte(nil), tr.gwCPs[1].Signature...)
			clear(sig[1:41]) // links to none
			db.exec(t, `UPDATE audit_checkpoints SET signature = `+db.blob(sig)+` WHERE `+where+` AND seq = 6`)
		}, key: caught{"gw/t", 6, "does not verify"}, head: caught{"gw/t", 6, "the store's checkpoint is not the head file's: replaced"}},
		{name: "every checkpoint of a chain deleted", tamper: func(t *testing.T, db auditDB, _ trail) {
			db.exec(t, `DELETE FROM audit_checkpoints WHERE `+opWhere)
		}, key: caught{"operator", 1, "the chain has no checkpoint"}, head: caught{"operator", 3, "the head file's checkpoint is no longer in the store: deleted"}},
		{name: "a whole chain deleted", tamper: func(t *testing.T, db auditDB, _ trail) {
			db.replace(t, audit.OperatorChain, nil)
			db.exec(t, `DELETE FROM audit_checkpoints WHERE `+opWhere)
		}, head: caught{"operator", 0, "the chain is missing"}, expectChain: caught{"operator", 0, "the chain is missing: it was expected (--expect-chain)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			onAuditStores(t, func(t *testing.T, db auditDB) {
				_, key, _ := ed25519.GenerateKey(rand.Reader)
				tr := writeTrail(t, db.dsn, key)
				pub := pubFile(t, key)
				headFile := filepath.Join(t.TempDir(), "head.json")
				if code, out, errOut := run(t, "audit", "head", "--store", db.dsn, "--out", headFile); code != 0 || out != "" || errOut != "" {
					t.Fatalf("audit head: exit %d\n%s%s", code, out, errOut)
				}
				all := []string{"--public-key", pub, "--expect-head", headFile, "--expect-chain", "gw/t", "--expect-chain", "operator"}
				if code, out, errOut := run(t, append([]string{"audit", "verify", "--store", db.dsn}, all...)...); code != 0 || !strings.Contains(out, "ok: the audit trail verifies") {
					t.Fatalf("before tampering: exit %d\n%s%s", code, out, errOut)
				}
				tc.tamper(t, db, tr)
				both := tc.key
				if both.what == "" {
					both = tc.head
				}
				for _, v := range []struct {
					flags []string
					want  caught
				}{
					{nil, tc.plain},
					{[]string{"--public-key", pub}, tc.key},
					{[]string{"--expect-head", headFile}, tc.head},
					{[]string{"--public-key", pub, "--expect-head", headFile}, both},
					{[]string{"--expect-chain", "operator"}, tc.expectChain.or(tc.plain)},
				} {
					code, out, errOut := run(t, append([]string{"audit", "verify", "--store", db.dsn}, v.flags...)...)
					if v.want.what == "" {
						if code != 0 {
							t.Errorf("verify %v after %s: exit %d, want it unseen (0)\nstdout: %s\nstderr: %s", v.flags, tc.name, code, out, errOut)
						}
						continue
					}
					want := fmt.Sprintf(`chain %q, seq %d: `, v.want.chain, v.want.seq)
					if code != ExitFailure || !strings.Contains(errOut, want) || !strings.Contains(errOut, v.want.what) ||
						!strings.Contains(out, fmt.Sprintf("BROKEN chain %s seq %d", v.want.chain, v.want.seq)) {
						t.Errorf("verify %v after %s: exit %d, want 1 with %q and %q\nstdout: %s\nstderr: %s", v.flags, tc.name, code, want, v.want.what, out, errOut)
					}
				}
			})
		})
	}
}

// TestAuditVerifyReportsUnreadableBlock: on SQLite, whose trail is kept in
// blocks, a block whose bytes were edited so that they no longer read as
// entries is a break of its chain at the block, not a failure to verify.
func TestAuditVerifyReportsUnreadableBlock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gh.db")
	dsn := "sqlite:" + path
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	writeTrail(t, dsn, key)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The block of entry 4 (the writer's batches here are of one), cut
	// short.
	res, err := db.Exec(`UPDATE audit_blocks SET data = substr(data, 1, length(data) - 5) WHERE chain = 'gw/t' AND first_seq = 4`)
	if n, _ := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("tampering: %v, %d rows", err, n)
	}
	code, out, errOut := run(t, "audit", "verify", "--store", dsn)
	if code != ExitFailure || !strings.Contains(out, "BROKEN chain gw/t seq 4") || !strings.Contains(errOut, "cannot be read") ||
		!strings.Contains(errOut, "stored data is corrupt") {
		t.Fatalf("verify after a block was cut: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// or is c, or d when c is zero.
func (c caught) or(d caught) caught {
	if c.what == "" {
		return d
	}
	return c
}

// TestAuditVerifyRefusesAnotherKey: checkpoints signed by the gateway's key
// do not verify against another key (a verifier handed the wrong key, or a
// trail re-signed by someone else).
func TestAuditVerifyRefusesAnotherKey(t *testing.T) {
	onAuditStores(t, func(t *testing.T, db auditDB) {
		_, key, _ := ed25519.GenerateKey(rand.Reader)
		_, other, _ := ed25519.GenerateKey(rand.Reader)
		writeTrail(t, db.dsn, key)
		code, out, errOut := run(t, "audit", "verify", "--store", db.dsn, "--public-key", pubFile(t, other), "--json")
		var got auditVerifyJSON
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if code != ExitFailure || got.OK || got.Problem == nil || got.Problem.Chain != "gw/t" || got.Problem.Seq != 3 ||
			!strings.Contains(got.Problem.What, "signed by key "+audit.KeyID(key.Public().(ed25519.PublicKey))) {
			t.Fatalf("exit %d %+v %s", code, got.Problem, errOut)
		}
	})
}

func TestAuditExport(t *testing.T) {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "gh.db")
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	writeTrail(t, dsn, key)
	code, out, errOut := run(t, "audit", "export", "--store", dsn, "--since", "1h")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 9 {
		t.Fatalf("export: exit %d, %d lines\n%s%s", code, len(lines), out, errOut)
	}
	var first audit.JSONEntry
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.Chain != "gw/t" || first.Seq != 1 || first.Tool != "transfer" {
		t.Fatalf("%v %+v", err, first)
	}
	if strings.Contains(out, "amount") {
		t.Fatal("the arguments themselves were exported")
	}
	code, out, _ = run(t, "audit", "export", "--store", dsn, "--format", "otel", "--kind", "purge")
	if code != 0 || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, `{"resourceLogs":[`) {
		t.Fatalf("otel: exit %d %s", code, out)
	}
	code, out, _ = run(t, "audit", "export", "--store", dsn, "--since", time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	if code != 0 || out != "" {
		t.Fatalf("since the future: exit %d %q", code, out)
	}
	for _, bad := range [][]string{{"--since", "yesterday"}, {"--since", ""}, {"--format", "xml"}, {"--since", "-1d"}} {
		code, _, errOut := run(t, append([]string{"audit", "export", "--store", dsn}, bad...)...)
		if code != ExitUsage || !strings.Contains(errOut, bad[1]) && bad[1] != "" {
			t.Errorf("%v: exit %d %s", bad, code, errOut)
		}
	}
}

func TestAuditKeygenAndUsage(t *testing.T) {
	dir := t.TempDir()
	priv := filepath.Join(dir, "audit.key")
	code, out, errOut := run(t, "audit", "keygen", "--out", priv)
	if code != 0 {
		t.Fatalf("keygen: %d %s", code, errOut)
	}
	b, _ := os.ReadFile(priv)
	k, err := audit.ParsePrivateKey(b)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := audit.ParsePublicKey([]byte(out))
	if err != nil || !pub.Equal(k.Public()) {
		t.Fatalf("the public key printed is not the private key's: %v", err)
	}
	if fi, _ := os.Stat(priv); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if code, _, _ := run(t, "audit", "keygen", "--out", priv); code == 0 {
		t.Fatal("keygen overwrote a key")
	}
	dsn := "sqlite:" + filepath.Join(dir, "gh.db")
	if code, _, errOut := run(t, "audit", "verify", "--store", dsn, "--public-key", priv); code != ExitUsage || !strings.Contains(errOut, "PUBLIC KEY") {
		t.Fatalf("a private key as --public-key: %d %s", code, errOut)
	}
	if code, _, errOut := run(t, "store", "init", "--store", dsn); code != 0 {
		t.Fatalf("store init: %d %s", code, errOut)
	}
	if code, out, _ := run(t, "audit", "verify", "--store", dsn); code != 0 || !strings.Contains(out, "(no audit entries)") {
		t.Fatalf("empty store: %d %s", code, out)
	}
	if code, _, _ := run(t, "audit"); code != ExitUsage {
		t.Fatalf("bare audit: %d", code)
	}
}

// TestOperatorActionsAudited: an approval decided, a listing trusted and a
// purge, each by its command on the real store, are entries of the
// operators' chain naming who did it, and the chain verifies.
func TestOperatorActionsAudited(t *testing.T) {
	onAuditStores(t, func(t *testing.T, db auditDB) {
		ctx := context.Background()
		fx := seedDrift(t, db.dsn)
		st := openDSN(t, db.dsn)
		args := json.RawMessage(`{"amount":900,"to":"acct-7"}`)
		a, _, err := st.CreateApproval(ctx, store.Approval{ID: "apr_0123456789abcdef", RecordKey: store.RecordKey{Scope: "gateway", RunID: "r", ToolCallID: "c"},
			Server: "bank", Tool: "pay", ArgsFingerprint: "f", Args: args, Owner: "alice", State: store.ApprovalPending}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, cmd := range [][]string{
			{"approvals", "approve", a.ID, "--by", "carol@ops"},
			{"trust", "pay", "--listing", fx.listing},
			{"runs", "purge", "--subject", "alice"},
		} {
			if code, out, errOut := run(t, append(cmd, "--store", db.dsn)...); code != 0 || errOut != "" {
				t.Fatalf("%v: exit %d\n%s%s", cmd, code, out, errOut)
			}
		}
		es, err := st.ReadAuditChain(ctx, audit.OperatorChain, 0, 0)
		if err != nil || len(es) != 3 {
			t.Fatalf("operator chain: %d entries, %v", len(es), err)
		}
		me := defaultOperator()
		got := fmt.Sprintf("%s %s %s %s %s | %s %s %s %s | %s %s %s", es[0].Kind, es[0].Subject, es[0].Tool, es[0].Outcome, es[0].ArgsDigest,
			es[1].Kind, es[1].Subject, es[1].Server, es[1].Outcome, es[2].Kind, es[2].Subject, es[2].Detail)
		want := fmt.Sprintf("approval.decided carol@ops pay approved %s | trust %s pay trusted | purge %s {\"rows\":1,\"subject\":\"alice\"}",
			audit.ArgsDigest(args), me, me)
		if got != want {
			t.Fatalf("entries\n%s\nwant\n%s", got, want)
		}
		if !strings.Contains(string(es[0].Detail), a.ID) || !strings.Contains(string(es[1].Detail), fx.listing) {
			t.Fatalf("details %s %s", es[0].Detail, es[1].Detail)
		}
		if code, out, errOut := run(t, "audit", "verify", "--store", db.dsn); code != 0 {
			t.Fatalf("verify: exit %d %s%s", code, out, errOut)
		}
	})
}

// TestAuditHeadCommand: `audit head` writes the latest signed checkpoint
// of every chain, to stdout or replacing --out whole; a chain without one
// is named on stderr and left out, and with none at all nothing is written
// (exit 1). A head file verify cannot read is a usage error naming it.
func TestAuditHeadCommand(t *testing.T) {
	dir := t.TempDir()
	dsn := "sqlite:" + filepath.Join(dir, "gh.db")
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	tr := writeTrail(t, dsn, key)
	code, out, errOut := run(t, "audit", "head", "--store", dsn)
	if code != 0 || errOut != "" {
		t.Fatalf("head: exit %d %s", code, errOut)
	}
	h, err := audit.ParseHead([]byte(out))
	if err != nil || len(h.Chains) != 2 || h.Chains[0].Chain != "gw/t" || h.Chains[0].Seq != 6 || h.Chains[0].Hash != tr.gw[5].Hash ||
		h.Chains[1].Chain != audit.OperatorChain || h.Chains[1].Seq != 3 || !bytes.Equal(h.Chains[1].Signature, tr.opCPs[2].Signature) {
		t.Fatalf("head %v\n%s", err, out)
	}
	if time.Since(h.Written) > time.Minute {
		t.Fatalf("written %v", h.Written)
	}
	file := filepath.Join(dir, "head.json")
	if err := os.WriteFile(file, []byte("an older head, longer than the new one"+strings.Repeat(".", 4096)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run(t, "audit", "head", "--store", dsn, "--out", file); code != 0 {
		t.Fatalf("head --out: exit %d %s", code, errOut)
	}
	b, _ := os.ReadFile(file)
	if _, err := audit.ParseHead(b); err != nil {
		t.Fatalf("the file written: %v\n%s", err, b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".head.json.*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}

	// A chain with no signed checkpoint is named and left out.
	st := openDSN(t, dsn)
	if _, err := audit.AppendOne(context.Background(), st, "gw/unsigned", store.AuditEntry{Kind: audit.KindCall, Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, "audit", "head", "--store", dsn)
	if h, err := audit.ParseHead([]byte(out)); code != 0 || err != nil || len(h.Chains) != 2 || !strings.Contains(errOut, `chain "gw/unsigned" has no signed checkpoint: not in the head`) {
		t.Fatalf("an unsigned chain: exit %d %v %s", code, err, errOut)
	}
	// No signed checkpoint at all.
	dsn2 := "sqlite:" + filepath.Join(dir, "unsigned.db")
	st2 := openDSN(t, dsn2)
	if _, err := audit.AppendCheckpointed(context.Background(), st2, audit.OperatorChain, store.AuditEntry{Kind: audit.KindPurge, Outcome: "ok"}, nil); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, "audit", "head", "--store", dsn2, "--out", filepath.Join(dir, "none.json"))
	if code != ExitFailure || out != "" || !strings.Contains(errOut, "no chain of the audit trail has a signed checkpoint") {
		t.Fatalf("nothing signed: exit %d %q %s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "none.json")); !os.IsNotExist(err) {
		t.Fatalf("a head without chains was written: %v", err)
	}

	// verify --expect-head with a file it cannot use.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"format": "gatehouse-audit-head/1", "written": "2026-03-01T12:00:00Z", "chains": []}`), 0o600)
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"missing": {[]string{"--expect-head", filepath.Join(dir, "absent.json")}, "--expect-head: open " + filepath.Join(dir, "absent.json")},
		"bad":     {[]string{"--expect-head", bad}, "--expect-head " + bad + ": audit: bad head file: chains is empty"},
		"empty":   {[]string{"--expect-chain", ""}, "--expect-chain needs a chain's name"},
	} {
		code, _, errOut := run(t, append([]string{"audit", "verify", "--store", dsn}, tc.args...)...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d %s, want 2 and %q", name, code, errOut, tc.want)
		}
	}
}

// TestOperatorActionsSigned: with the gateway's config (--config naming
// audit.signingKeyFile), an approval decided, a trust and a purge each
// checkpoint the operators' chain, signed and linked, and verify
// --public-key passes. A config naming a key this command cannot read
// records the action anyway, without a checkpoint, and says so; a command
// without the config (no key) on a store whose checkpoints are signed
// writes no unsigned checkpoint, and says so.
func TestOperatorActionsSigned(t *testing.T) {
	onAuditStores(t, func(t *testing.T, db auditDB) {
		ctx := context.Background()
		dir := t.TempDir()
		_, key, _ := ed25519.GenerateKey(rand.Reader)
		pemKey, _ := audit.MarshalPrivateKey(key)
		if err := os.WriteFile(filepath.Join(dir, "audit.key"), pemKey, 0o600); err != nil {
			t.Fatal(err)
		}
		config := func(name, keyFile string) string {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, fmt.Appendf(nil, "store: %q\naudit: {signingKeyFile: %s}\n", db.dsn, keyFile), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}
		withKey, noKeyFile := config("gh.yaml", "audit.key"), config("elsewhere.yaml", "absent.key")
		fx := seedDrift(t, db.dsn)
		st := openDSN(t, db.dsn)
		for i := range 3 {
			if _, _, err := st.CreateApproval(ctx, store.Approval{ID: fmt.Sprintf("apr_%016d", i), RecordKey: store.RecordKey{Scope: "gateway", RunID: "r", ToolCallID: fmt.Sprint(i)},
				Server: "bank", Tool: "pay", ArgsFingerprint: "f", Args: json.RawMessage(`{}`), Owner: "alice", State: store.ApprovalPending}, 0); err != nil {
				t.Fatal(err)
			}
		}
		for _, cmd := range [][]string{
			{"approvals", "approve", "apr_0000000000000000", "--by", "carol@ops"},
			{"trust", "pay", "--listing", fx.listing},
			{"runs", "purge", "--subject", "nobody"},
		} {
			if code, out, errOut := run(t, append(cmd, "--config", withKey)...); code != 0 || errOut != "" {
				t.Fatalf("%v: exit %d\n%s%s", cmd, code, out, errOut)
			}
		}
		cps, err := st.AuditCheckpoints(ctx, audit.OperatorChain)
		if err != nil || len(cps) != 3 {
			t.Fatalf("checkpoints %+v %v", cps, err)
		}
		for i, c := range cps {
			l, ok := audit.LinkOf(c)
			if c.Seq != int64(i+1) || !ok || audit.VerifyCheckpoint(key.Public().(ed25519.PublicKey), c) != nil || (i > 0 && l.Seq != int64(i)) {
				t.Fatalf("checkpoint %d: %+v link %+v", i, c, l)
			}
		}
		pub := pubFile(t, key)
		if code, out, errOut := run(t, "audit", "verify", "--config", withKey, "--public-key", pub); code != 0 || !strings.Contains(out, "chain operator: seq 1-3, 3 entries, 3 checkpoints, 3 signed") {
			t.Fatalf("verify: exit %d %s%s", code, out, errOut)
		}

		// The key named but not readable here: recorded, not checkpointed.
		code, _, errOut := run(t, "approvals", "deny", "apr_0000000000000001", "--by", "carol@ops", "--config", noKeyFile)
		if code != 0 || !strings.Contains(errOut, "gatehouse: warning: the audit signing key cannot be read (audit.signingKeyFile "+filepath.Join(dir, "absent.key")) ||
			!strings.Contains(errOut, "the approval.decided is recorded without a signed checkpoint") {
			t.Fatalf("unreadable key: exit %d %s", code, errOut)
		}
		// No config, so no key, on a signed store: no unsigned checkpoint.
		code, _, errOut = run(t, "approvals", "approve", "apr_0000000000000002", "--by", "carol@ops", "--store", db.dsn)
		if code != 0 || !strings.Contains(errOut, "recorded the approval.decided without a checkpoint") || !strings.Contains(errOut, "--config") {
			t.Fatalf("no key: exit %d %s", code, errOut)
		}
		if es, _ := st.ReadAuditChain(ctx, audit.OperatorChain, 0, 0); len(es) != 5 || es[3].Outcome != "denied" || es[4].Outcome != "approved" {
			t.Fatalf("operator entries %+v", es)
		}
		if cps, _ := st.AuditCheckpoints(ctx, audit.OperatorChain); len(cps) != 3 {
			t.Fatalf("checkpoints after the unsigned actions: %+v", cps)
		}
		// The chain still verifies with the key: entries 4 and 5 wait for
		// the next signed checkpoint.
		if code, out, errOut := run(t, "audit", "verify", "--store", db.dsn, "--public-key", pub); code != 0 {
			t.Fatalf("verify: exit %d %s%s", code, out, errOut)
		}
	})
}
