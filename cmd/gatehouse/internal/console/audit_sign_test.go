package console

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
)

// TestActionsCheckpointSigned: with Options.AuditSigningKey, each action
// the console records (two decisions and a purge here) checkpoints the
// operators' chain at its entry, signed and linked to the checkpoint
// before, so the chain verifies with the public key (and with a head kept
// of it); without a key, on a store whose checkpoints are signed, the
// action is recorded without a checkpoint rather than with an unsigned one.
func TestActionsCheckpointSigned(t *testing.T) {
	eachStore(t, func(t *testing.T, d string) {
		ctx := context.Background()
		st := openStore(t, d)
		pub, key, _ := ed25519.GenerateKey(rand.Reader)
		serve := func(k ed25519.PrivateKey) *client {
			h, err := New(&Options{Store: st, Admins: []Admin{{Name: "alice", SHA256: hashOf(aliceToken)}}, AuditKey: pub, AuditSigningKey: k})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)
			c := newClient(t, srv.URL)
			c.login(aliceToken)
			return c
		}
		c := serve(key)
		tok := c.csrf()
		for owner, verdict := range map[string]string{"acme-ltd": "approve", "other": "deny"} {
			id := askApproval(t, st, owner, `{"to":"x"}`)
			if code, _, _ := c.do("POST", "/approvals/decide", url.Values{"id": {id}, "verdict": {verdict}, "csrf": {tok}}, sameOrigin); code != http.StatusSeeOther {
				t.Fatalf("%s: %d", verdict, code)
			}
		}
		if code, _, _ := c.do("POST", "/runs/purge", url.Values{"subject": {"acme-ltd"}, "csrf": {tok}}, sameOrigin); code != http.StatusSeeOther {
			t.Fatalf("purge: %d", code)
		}
		cps, err := st.AuditCheckpoints(ctx, audit.OperatorChain)
		if err != nil || len(cps) != 3 {
			t.Fatalf("checkpoints %+v %v", cps, err)
		}
		for i, cp := range cps {
			l, linked := audit.LinkOf(cp)
			if cp.Seq != int64(i+1) || audit.VerifyCheckpoint(pub, cp) != nil || !linked || l.Seq != int64(i) {
				t.Fatalf("checkpoint %d: %+v, link %+v", i, cp, l)
			}
		}
		head, _, err := audit.LatestHead(ctx, st, cps[2].At)
		if err != nil {
			t.Fatal(err)
		}
		res, err := audit.Verify(ctx, st, &audit.VerifyOptions{PublicKey: pub, ExpectHead: head})
		if err != nil || res.Problem != nil || res.Chains[0].Signed != 3 || res.Chains[0].Linked != 3 || res.Chains[0].HeadSeq != 3 {
			t.Fatalf("verify: %v %+v %+v", err, res.Problem, res.Chains)
		}
		_, _, page := c.do("GET", "/audit/verify", nil, nil)
		if !strings.Contains(page, "Every chain verifies.") {
			t.Fatalf("the verify page: %s", page)
		}

		// A console without the key on this signed store.
		c2 := serve(nil)
		id := askApproval(t, st, "third", `{"to":"later"}`)
		if code, _, _ := c2.do("POST", "/approvals/decide", url.Values{"id": {id}, "verdict": {"approve"}, "csrf": {c2.csrf()}}, sameOrigin); code != http.StatusSeeOther {
			t.Fatalf("decide without a key: %d", code)
		}
		if es := operatorEntries(t, st); len(es) != 4 {
			t.Fatalf("entries %+v", es)
		}
		if cps, _ := st.AuditCheckpoints(ctx, audit.OperatorChain); len(cps) != 3 {
			t.Fatalf("an unsigned checkpoint was written: %+v", cps)
		}
		if res, _ := audit.Verify(ctx, st, &audit.VerifyOptions{PublicKey: pub}); res.Problem != nil {
			t.Fatalf("verify after the keyless action: %+v", res.Problem)
		}
	})
}
