package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse-dev/gatehouse/audit"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/store"
)

// auditDB is a real database holding an audit trail, and a way to tamper
// with it in SQL, behind the store's back.
type auditDB struct {
	dsn  string
	exec func(t *testing.T, stmt string)
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
		}})
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
		}})
	})
}

// writeTrail writes six entries to chain gw/t through a Writer signing
// with key (its one checkpoint, at Close, is at seq 6) and two to the
// operators' chain, and returns the entries of gw/t as stored.
func writeTrail(t *testing.T, dsn string, key ed25519.PrivateKey) []store.AuditEntry {
	t.Helper()
	ctx := context.Background()
	st, err := openStore(ctx, dsn, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w, err := audit.NewWriter(ctx, st, &audit.WriterOptions{Chain: "gw/t", Instance: "t", Key: key})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 6; i++ {
		e := store.AuditEntry{Kind: audit.KindCall, Subject: "alice", Server: "bank", Tool: "transfer",
			ArgsDigest: audit.ArgsDigest(json.RawMessage(fmt.Sprintf(`{"amount":%d}`, i))), Outcome: "ok", Duration: time.Duration(i) * time.Millisecond}
		if err := w.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{audit.KindApprovalDecided, audit.KindPurge} {
		if _, err := audit.AppendOne(ctx, st, audit.OperatorChain, store.AuditEntry{Kind: k, Subject: "ops@host", Outcome: "approved"}); err != nil {
			t.Fatal(err)
		}
	}
	es, err := st.ReadAuditChain(ctx, "gw/t", 0, 0)
	if err != nil || len(es) != 6 {
		t.Fatalf("%d entries, %v", len(es), err)
	}
	return es
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

// TestAuditVerifyCatchesTampering: each kind of tampering, done in SQL on
// the real database, makes `gatehouse audit verify` exit 1 naming the
// chain, the first broken entry and what is wrong.
func TestAuditVerifyCatchesTampering(t *testing.T) {
	const where = `chain = 'gw/t'`
	cases := []struct {
		name   string
		tamper func(t *testing.T, db auditDB, es []store.AuditEntry)
		seq    int64
		what   string
		signed bool // caught only with the public key
	}{
		{"edit", func(t *testing.T, db auditDB, _ []store.AuditEntry) {
			db.exec(t, `UPDATE audit_log SET outcome = 'denied' WHERE `+where+` AND seq = 3`)
		}, 3, "edited", false},
		{"delete", func(t *testing.T, db auditDB, _ []store.AuditEntry) {
			db.exec(t, `DELETE FROM audit_log WHERE `+where+` AND seq = 3`)
		}, 3, "missing", false},
		{"insert", func(t *testing.T, db auditDB, es []store.AuditEntry) {
			// The strongest insert: room made by renumbering, the new entry
			// hashed and linked exactly as a writer would.
			db.exec(t, `UPDATE audit_log SET seq = -seq - 1 WHERE `+where+` AND seq >= 3`)
			db.exec(t, `UPDATE audit_log SET seq = -seq WHERE `+where+` AND seq < 0`)
			e := audit.Link(store.AuditEntry{At: es[1].At, Kind: audit.KindCall, Subject: "mallory", Outcome: "ok"},
				store.AuditHead{Chain: "gw/t", Last: 2, Hash: es[1].Hash})
			db.exec(t, fmt.Sprintf(`INSERT INTO audit_log (chain, seq, at, kind, subject, server, tool, args_digest, outcome, duration_us, instance, prev_hash, hash)
VALUES ('gw/t', 3, %d, 'call', 'mallory', '', '', '', 'ok', 0, '', %s, %s)`, e.At.UnixMilli(), lit(e.PrevHash), lit(e.Hash)))
		}, 4, "inserted", false},
		{"reorder", func(t *testing.T, db auditDB, _ []store.AuditEntry) {
			db.exec(t, `UPDATE audit_log SET seq = -seq WHERE `+where+` AND seq IN (3, 4)`)
			db.exec(t, `UPDATE audit_log SET seq = CASE seq WHEN -3 THEN 4 ELSE 3 END WHERE `+where+` AND seq < 0`)
		}, 3, "moved", false},
		{"truncation without a checkpoint", func(t *testing.T, db auditDB, _ []store.AuditEntry) {
			db.exec(t, `DELETE FROM audit_log WHERE `+where+` AND seq < 3`)
		}, 3, "no checkpoint at seq 2", false},
		{"truncation of the end", func(t *testing.T, db auditDB, _ []store.AuditEntry) {
			db.exec(t, `DELETE FROM audit_log WHERE `+where+` AND seq >= 5`)
		}, 5, "deleted from its end", false},
		{"rewrite with every hash recomputed", func(t *testing.T, db auditDB, es []store.AuditEntry) {
			// Someone who can write the database and knows the algorithm:
			// entries 3-6 rewritten and rehashed, the checkpoint's hash
			// moved along. Only the checkpoint's signature tells.
			head := store.AuditHead{Chain: "gw/t", Last: 2, Hash: es[1].Hash}
			for _, e := range es[2:] {
				e.Subject = "mallory"
				e = audit.Link(e, head)
				head.Last, head.Hash = e.Seq, e.Hash
				db.exec(t, fmt.Sprintf(`UPDATE audit_log SET subject = 'mallory', prev_hash = %s, hash = %s WHERE `+where+` AND seq = %d`,
					lit(e.PrevHash), lit(e.Hash), e.Seq))
			}
			db.exec(t, fmt.Sprintf(`UPDATE audit_checkpoints SET hash = %s WHERE `+where+` AND seq = 6`, lit(head.Hash)))
		}, 6, "does not verify", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			onAuditStores(t, func(t *testing.T, db auditDB) {
				_, key, _ := ed25519.GenerateKey(rand.Reader)
				es := writeTrail(t, db.dsn, key)
				pub := pubFile(t, key)
				if code, out, errOut := run(t, "audit", "verify", "--store", db.dsn, "--public-key", pub); code != 0 || !strings.Contains(out, "ok: the audit trail verifies") {
					t.Fatalf("before tampering: exit %d\n%s%s", code, out, errOut)
				}
				tc.tamper(t, db, es)
				args := []string{"audit", "verify", "--store", db.dsn}
				if tc.signed {
					// Without the key, the rewritten chain is consistent:
					// the hashes alone cannot tell (docs/audit.md).
					if code, out, errOut := run(t, args...); code != 0 {
						t.Fatalf("a consistent rewrite caught without the key? exit %d %s%s", code, out, errOut)
					}
					args = append(args, "--public-key", pub)
				}
				code, out, errOut := run(t, args...)
				want := fmt.Sprintf(`chain "gw/t", seq %d: `, tc.seq)
				if code != ExitFailure || !strings.Contains(errOut, want) || !strings.Contains(errOut, tc.what) ||
					!strings.Contains(out, fmt.Sprintf("BROKEN chain gw/t seq %d", tc.seq)) {
					t.Fatalf("verify after %s: exit %d, want 1 with %q and %q\nstdout: %s\nstderr: %s", tc.name, code, want, tc.what, out, errOut)
				}
			})
		})
	}
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
		if code != ExitFailure || got.OK || got.Problem == nil || got.Problem.Chain != "gw/t" || got.Problem.Seq != 6 ||
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
	if code != 0 || len(lines) != 8 {
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
