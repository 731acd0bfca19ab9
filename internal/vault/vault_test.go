package vault_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/vault"
	"github.com/gatehouse-dev/gatehouse/store"
)

// leaks returns the secrets found in b, plain, hex or base64.
func leaks(b []byte, secrets []string) []string {
	var found []string
	for _, s := range secrets {
		for _, form := range []string{s, hex.EncodeToString([]byte(s)), base64.StdEncoding.EncodeToString([]byte(s)), base64.RawStdEncoding.EncodeToString([]byte(s))} {
			if bytes.Contains(b, []byte(form)) {
				found = append(found, form)
			}
		}
	}
	return found
}

func TestRoundTrip(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		v := vault.New(b.open(t), keys(t, newKey(t), nil), nil)
		if got, err := v.Token(ctx, "gh", "alice"); got != nil || err != nil {
			t.Fatalf("Token of nothing = %v, %v; want nil, nil", got, err)
		}
		set := secretSet("alice")
		if err := v.PutToken(ctx, "gh", "alice", set); err != nil {
			t.Fatal(err)
		}
		// Another replica (another pool, same key) reads it.
		v2 := vault.New(b.open(t), v.Keys(), nil)
		got, err := v2.Token(ctx, "gh", "alice")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, set) {
			t.Fatalf("Token = %+v, want %+v", got, set)
		}
		if got, _ := v2.Token(ctx, "gh", "bob"); got != nil {
			t.Fatal("bob reads alice's token")
		}
		if err := v2.DeleteToken(ctx, "gh", "alice"); err != nil {
			t.Fatal(err)
		}
		if got, err := v.Token(ctx, "gh", "alice"); got != nil || err != nil {
			t.Fatalf("after DeleteToken: %v, %v", got, err)
		}
	})
}

// TestStoreCopyRevealsNoToken: the store read without the key, every column
// of every row of the vault's tables (and, for SQLite, the database and WAL
// files' bytes), holds no access token, refresh token or client secret in
// any encoding.
func TestStoreCopyRevealsNoToken(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		st := b.open(t)
		v := vault.New(st, keys(t, newKey(t), nil), nil)
		var secrets []string
		for _, sub := range []string{"alice", "bob", ""} {
			set := secretSet("s" + sub)
			secrets = append(secrets, secretsOf(set)...)
			if err := v.PutToken(ctx, "gh", sub, set); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := v.LockRefresh(ctx, "gh", "alice"); err != nil {
			t.Fatal(err)
		}
		dump := b.dump(t)
		if !bytes.Contains(dump, []byte("alice")) {
			t.Fatalf("the dump does not even hold the subject: it read nothing (%d bytes)", len(dump))
		}
		if l := leaks(dump, secrets); len(l) > 0 {
			t.Fatalf("the store without the key reveals %q", l)
		}
		// The control: the same grep finds what it looks for.
		if l := leaks(append(dump, secrets[0]...), secrets); len(l) == 0 {
			t.Fatal("the grep finds nothing even when a secret is there")
		}
	})
}

// TestWrongKey: a vault with another key gets a typed error and no token.
func TestWrongKey(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		st := b.open(t)
		set := secretSet("alice")
		if err := vault.New(st, keys(t, newKey(t), nil), nil).PutToken(ctx, "gh", "alice", set); err != nil {
			t.Fatal(err)
		}
		got, err := vault.New(st, keys(t, newKey(t), nil), nil).Token(ctx, "gh", "alice")
		if got != nil || !errors.Is(err, vault.ErrSealed) || !errors.Is(err, vault.ErrUnknownKey) {
			t.Fatalf("Token under another key = %v, %v; want nil and ErrSealed, ErrUnknownKey", got, err)
		}
		var oe *vault.OpenError
		if !errors.As(err, &oe) || oe.KeyID == "" {
			t.Fatalf("error %v is not an *OpenError naming the key", err)
		}
		if l := leaks([]byte(err.Error()), secretsOf(set)); len(l) > 0 {
			t.Fatalf("the error reveals %q", l)
		}
	})
}

// TestMovedRowDoesNotOpen: a sealed row moved (SQL UPDATE) to another
// subject or another server does not open there.
func TestMovedRowDoesNotOpen(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		v := vault.New(b.open(t), keys(t, newKey(t), nil), nil)
		set := secretSet("alice")
		if err := v.PutToken(ctx, "gh", "alice", set); err != nil {
			t.Fatal(err)
		}
		b.exec(t, `UPDATE connections SET subject = 'mallory' WHERE subject = 'alice'`)
		got, err := v.Token(ctx, "gh", "mallory")
		if got != nil || !errors.Is(err, vault.ErrSealed) || errors.Is(err, vault.ErrUnknownKey) {
			t.Fatalf("alice's row moved to mallory opens: %v, %v", got, err)
		}
		if l := leaks([]byte(err.Error()), secretsOf(set)); len(l) > 0 {
			t.Fatalf("the error reveals %q", l)
		}
		b.exec(t, `UPDATE connections SET subject = 'alice', server = 'linear' WHERE subject = 'mallory'`)
		if got, err := v.Token(ctx, "linear", "alice"); got != nil || !errors.Is(err, vault.ErrSealed) {
			t.Fatalf("the row moved to another server opens: %v, %v", got, err)
		}
		// Moved back, it opens: the move, not the row, was refused.
		b.exec(t, `UPDATE connections SET server = 'gh' WHERE server = 'linear'`)
		if got, err := v.Token(ctx, "gh", "alice"); err != nil || got.AccessToken != set.AccessToken {
			t.Fatalf("moved back: %v, %v", got, err)
		}
	})
}

// TestTamperedRowDoesNotOpen: any byte of the blob flipped, or the blob
// cut, and it does not open.
func TestTamperedRowDoesNotOpen(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		st := b.open(t)
		v := vault.New(st, keys(t, newKey(t), nil), nil)
		if err := v.PutToken(ctx, "gh", "alice", secretSet("alice")); err != nil {
			t.Fatal(err)
		}
		c, _, err := st.Connection(ctx, "gh", "alice")
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range []int{0, 1, 13, len(c.Sealed) / 2, len(c.Sealed) - 1} {
			bad := bytes.Clone(c.Sealed)
			bad[i] ^= 0x01
			b.exec(t, `UPDATE connections SET sealed = $1 WHERE subject = 'alice'`, bad)
			if got, err := v.Token(ctx, "gh", "alice"); got != nil || !errors.Is(err, vault.ErrSealed) {
				t.Fatalf("byte %d flipped: %v, %v; want ErrSealed", i, got, err)
			}
		}
		b.exec(t, `UPDATE connections SET sealed = $1 WHERE subject = 'alice'`, c.Sealed[:20])
		if got, err := v.Token(ctx, "gh", "alice"); got != nil || !errors.Is(err, vault.ErrSealed) {
			t.Fatalf("cut blob: %v, %v; want ErrSealed", got, err)
		}
	})
}

// TestRotation: rows sealed under the old key open once it is the previous
// key, Rekey moves them all to the new key, then the old key can go.
func TestRotation(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		st := b.open(t)
		oldK, newK := newKey(t), newKey(t)
		v1 := vault.New(st, keys(t, oldK, nil), nil)
		subjects := []string{"alice", "bob", ""}
		for _, sub := range subjects {
			if err := v1.PutToken(ctx, "gh", sub, secretSet(sub)); err != nil {
				t.Fatal(err)
			}
		}
		v2 := vault.New(st, keys(t, newK, oldK), nil)
		for _, sub := range subjects {
			if got, err := v2.Token(ctx, "gh", sub); err != nil || got.AccessToken != secretSet(sub).AccessToken {
				t.Fatalf("%q under the previous key: %v, %v", sub, got, err)
			}
		}
		n, err := v2.Rekey(ctx)
		if err != nil || n != 3 {
			t.Fatalf("Rekey = %d, %v; want 3", n, err)
		}
		cs, err := st.Connections(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if c.KeyID != vault.KeyID(newK) {
				t.Fatalf("%s/%q still under key %s after rekey", c.Server, c.Subject, c.KeyID)
			}
		}
		if n, err := v2.Rekey(ctx); err != nil || n != 0 {
			t.Fatalf("second Rekey = %d, %v; want 0", n, err)
		}
		v3 := vault.New(st, keys(t, newK, nil), nil) // the old key dropped
		for _, sub := range subjects {
			if got, err := v3.Token(ctx, "gh", sub); err != nil || got.RefreshToken != secretSet(sub).RefreshToken {
				t.Fatalf("%q with the old key dropped: %v, %v", sub, got, err)
			}
		}
		if _, err := v1.Token(ctx, "gh", "alice"); !errors.Is(err, vault.ErrUnknownKey) {
			t.Fatalf("the old key alone after rekey: %v; want ErrUnknownKey", err)
		}
	})
}

// raceStore writes a new token set (a refresh by another replica) just
// before the first SwapConnection goes through.
type raceStore struct {
	store.ConnectionStore
	before func()
}

func (r *raceStore) SwapConnection(ctx context.Context, c store.Connection, old []byte) (bool, error) {
	if f := r.before; f != nil {
		r.before = nil
		f()
	}
	return r.ConnectionStore.SwapConnection(ctx, c, old)
}

// TestRekeyKeepsConcurrentRefresh: a refresh written while Rekey is
// re-sealing a row is not overwritten by the old token set.
func TestRekeyKeepsConcurrentRefresh(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		st := b.open(t)
		oldK, newK := newKey(t), newKey(t)
		if err := vault.New(st, keys(t, oldK, nil), nil).PutToken(ctx, "gh", "alice", secretSet("before")); err != nil {
			t.Fatal(err)
		}
		ks := keys(t, newK, oldK)
		refreshed := secretSet("refreshed")
		rs := &raceStore{ConnectionStore: st}
		rs.before = func() {
			if err := vault.New(b.open(t), ks, nil).PutToken(ctx, "gh", "alice", refreshed); err != nil {
				t.Error(err)
			}
		}
		n, err := vault.New(rs, ks, nil).Rekey(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := vault.New(st, ks, nil).Token(ctx, "gh", "alice")
		if err != nil || got.AccessToken != refreshed.AccessToken {
			t.Fatalf("after rekey raced by a refresh: %v, %v; want the refreshed set (rekeyed %d)", got, err, n)
		}
	})
}

// TestSealOpen: Seal and Open bind their AAD; errors never carry data.
func TestSealOpen(t *testing.T) {
	v := vault.New(nil, keys(t, newKey(t), nil), nil)
	id, sealed, err := v.Seal("flow", []byte("verifier-secret"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("verifier-secret")) {
		t.Fatal("sealed holds the plaintext")
	}
	pt, err := v.Open("flow", id, sealed)
	if err != nil || string(pt) != "verifier-secret" {
		t.Fatalf("Open = %q, %v", pt, err)
	}
	_, again, _ := v.Seal("flow", []byte("verifier-secret"))
	if bytes.Equal(again, sealed) {
		t.Fatal("two seals of one plaintext are equal: the nonce is not fresh")
	}
	for name, f := range map[string]func() ([]byte, error){
		"other aad":   func() ([]byte, error) { return v.Open("flow2", id, sealed) },
		"other key":   func() ([]byte, error) { return v.Open("flow", "0011223344556677", sealed) },
		"empty":       func() ([]byte, error) { return v.Open("flow", id, nil) },
		"bad version": func() ([]byte, error) { b := bytes.Clone(sealed); b[0] = 9; return v.Open("flow", id, b) },
	} {
		pt, err := f()
		if pt != nil || !errors.Is(err, vault.ErrSealed) || strings.Contains(err.Error(), "verifier-secret") {
			t.Errorf("%s: %q, %v; want ErrSealed", name, pt, err)
		}
	}
}
