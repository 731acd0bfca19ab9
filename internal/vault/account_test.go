package vault_test

import (
	"context"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/vault"
)

// TestPutConnectedAccount: a connection made through a connect flow
// records its upstream account (plaintext, beside the sealed set); a
// refresh (PutToken) keeps it; a rekey keeps it; a new connection with
// another account replaces it, and one whose account is unknown clears
// it. On SQLite and PostgreSQL.
func TestPutConnectedAccount(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		st := b.open(t)
		k1, k2 := newKey(t), newKey(t)
		v := vault.New(st, keys(t, k1, nil), nil)
		account := func() string {
			t.Helper()
			c, ok, err := st.Connection(ctx, "gh", "alice")
			if err != nil || !ok {
				t.Fatalf("connection: %v %v", ok, err)
			}
			return c.Account
		}
		if err := v.PutConnected(ctx, "gh", "alice", secretSet("a1"), "https://as#octo"); err != nil {
			t.Fatal(err)
		}
		if got := account(); got != "https://as#octo" {
			t.Fatalf("after PutConnected: %q", got)
		}
		if set, err := v.Token(ctx, "gh", "alice"); err != nil || set.AccessToken != secretSet("a1").AccessToken {
			t.Fatalf("the set: %+v %v", set, err)
		}
		if err := v.PutToken(ctx, "gh", "alice", secretSet("a2")); err != nil { // a refresh
			t.Fatal(err)
		}
		if got := account(); got != "https://as#octo" {
			t.Fatalf("after a refresh: %q", got)
		}
		if n, err := vault.New(st, keys(t, k2, k1), nil).Rekey(ctx); err != nil || n != 1 {
			t.Fatalf("rekey: %d %v", n, err)
		}
		if got := account(); got != "https://as#octo" {
			t.Fatalf("after a rekey: %q", got)
		}
		v = vault.New(st, keys(t, k2, nil), nil)
		if err := v.PutConnected(ctx, "gh", "alice", secretSet("a3"), "https://as#other"); err != nil {
			t.Fatal(err)
		}
		if got := account(); got != "https://as#other" {
			t.Fatalf("another account: %q", got)
		}
		if err := v.PutConnected(ctx, "gh", "alice", secretSet("a4"), ""); err != nil {
			t.Fatal(err)
		}
		if got := account(); got != "" {
			t.Fatalf("an unknown account kept the old one: %q", got)
		}
		if err := v.PutConnected(ctx, "gh", "alice", nil, "x"); err == nil {
			t.Fatal("a nil set was stored")
		}
	})
}
