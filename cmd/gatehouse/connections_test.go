package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/internal/vault"
)

func vaultKey(t *testing.T) []byte {
	k := make([]byte, vault.KeySize)
	rand.Read(k)
	return k
}

func keyFile(t *testing.T, ks ...[]byte) string {
	var lines []string
	for _, k := range ks {
		lines = append(lines, base64.StdEncoding.EncodeToString(k))
	}
	p := filepath.Join(t.TempDir(), "vault.key")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func cliSet(tag string) *upstream.TokenSet {
	return &upstream.TokenSet{AccessToken: "AT-cli-" + tag + "-93kd", RefreshToken: "RT-cli-" + tag + "-x81q",
		ClientSecret: "CS-cli-" + tag, Scopes: []string{"repo", "read:org"}, TokenType: "Bearer",
		Expiry: time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)}
}

// TestConnectionsCLI: list (with and without the key), revoke (per
// subject, per server, the service ones, refused without a selector),
// rekey, each audited on the operators' chain, and no token in any
// output, error or audit entry. Real SQLite file.
func TestConnectionsCLI(t *testing.T) {
	t.Setenv(vault.EnvKey, "")
	t.Setenv(vault.EnvPreviousKey, "")
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "state", "gh.db")
	st, err := openStore(ctx, dsn, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	keyA, keyB := vaultKey(t), vaultKey(t)
	ksA, _ := vault.NewKeys(keyA, nil)
	v := vault.New(st, ksA, nil)
	var secrets []string
	for _, c := range [][2]string{{"github", "alice"}, {"linear", "alice"}, {"github", "bob"}, {"github", ""}} {
		set := cliSet(c[0] + c[1])
		secrets = append(secrets, set.AccessToken, set.RefreshToken, set.ClientSecret)
		if err := v.PutToken(ctx, c[0], c[1], set); err != nil {
			t.Fatal(err)
		}
	}
	// alice's github connection was made through a connect URL: its
	// upstream account recorded.
	if err := v.PutConnected(ctx, "github", "alice", cliSet("githubalice"), "https://github.example.com#octo-alice"); err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	cli := func(want int, args ...string) string {
		t.Helper()
		code, out, errOut := run(t, append(args, "--store", dsn)...)
		all.WriteString(out + errOut)
		if code != want {
			t.Fatalf("%v: exit %d, want %d: %s%s", args, code, want, out, errOut)
		}
		return out
	}

	// list --json with the key: expiry, scopes, refresh token present.
	var got struct {
		Connections []connectionJSON `json:"connections"`
	}
	if err := json.Unmarshal([]byte(cli(0, "connections", "list", "--json", "--key-file", keyFile(t, keyA))), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Connections) != 4 {
		t.Fatalf("connections = %+v", got.Connections)
	}
	for _, c := range got.Connections {
		if c.Sealed != "" || c.ExpiresAt == nil || !c.ExpiresAt.Equal(time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)) ||
			strings.Join(c.Scopes, " ") != "repo read:org" || c.HasRefreshToken == nil || !*c.HasRefreshToken || c.KeyID != ksA.CurrentID() {
			t.Fatalf("listed with the key: %+v", c)
		}
		if (c.Subject == "") != c.Service {
			t.Fatalf("service flag: %+v", c)
		}
		if want := map[bool]string{true: "https://github.example.com#octo-alice"}[c.Server == "github" && c.Subject == "alice"]; c.Account != want {
			t.Fatalf("account of %s/%s: %q, want %q", c.Server, c.Subject, c.Account, want)
		}
	}
	// Without a key: the metadata only (the account is not sealed), no
	// warning (none configured).
	out := cli(0, "connections", "list")
	if !strings.Contains(out, "(service)") || !strings.Contains(out, "(sealed)") || !strings.Contains(out, "linear") ||
		!strings.Contains(out, "ACCOUNT") || !strings.Contains(out, "https://github.example.com#octo-alice") {
		t.Fatalf("list without a key:\n%s", out)
	}
	// With the wrong key: sealed, said so.
	got.Connections = nil
	if err := json.Unmarshal([]byte(cli(0, "connections", "list", "--json", "--subject", "alice", "--key-file", keyFile(t, keyB))), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Connections) != 2 || !strings.Contains(got.Connections[0].Sealed, "does not open") || got.Connections[0].ExpiresAt != nil {
		t.Fatalf("alice's under a wrong key: %+v", got.Connections)
	}

	// revoke: exactly one selector.
	cli(ExitUsage, "connections", "revoke")
	cli(ExitUsage, "connections", "revoke", "--subject", "alice", "--all")
	cli(ExitUsage, "connections", "revoke", "--subject", "")
	if out := cli(0, "connections", "revoke", "--subject", "alice", "--server", "github"); !strings.Contains(out, `revoked 1 connections to github of subject "alice"`) {
		t.Fatalf("revoke one: %q", out)
	}
	if out := cli(0, "connections", "revoke", "--subject", "alice"); !strings.Contains(out, "revoked 1 connections") {
		t.Fatalf("revoke the rest of alice's: %q", out)
	}
	if out := cli(0, "connections", "revoke", "--service"); !strings.Contains(out, "revoked 1 connections of the service") {
		t.Fatalf("revoke the service's: %q", out)
	}
	left, err := st.Connections(ctx, "")
	if err != nil || len(left) != 1 || left[0].Subject != "bob" {
		t.Fatalf("left after revokes: %+v, %v", left, err)
	}

	// rekey: without a key refused; with B then A, bob's moves to B, and B
	// alone opens it.
	cli(exitInternal, "connections", "rekey")
	if out := cli(0, "connections", "rekey", "--key-file", keyFile(t, keyB, keyA)); !strings.Contains(out, "re-encrypted 1 connections") {
		t.Fatalf("rekey: %q", out)
	}
	got.Connections = nil
	if err := json.Unmarshal([]byte(cli(0, "connections", "list", "--json", "--key-file", keyFile(t, keyB))), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Connections) != 1 || got.Connections[0].Sealed != "" || got.Connections[0].ExpiresAt == nil {
		t.Fatalf("after rekey, under the new key alone: %+v", got.Connections)
	}

	// runs purge takes bob's connection with his runs.
	if out := cli(0, "runs", "purge", "--subject", "bob"); !strings.Contains(out, "purged 1 rows") {
		t.Fatalf("purge: %q", out)
	}
	if left, _ := st.Connections(ctx, ""); len(left) != 0 {
		t.Fatalf("after purge: %+v", left)
	}

	// Each command is on the operators' chain.
	es, err := st.ReadAuditChain(ctx, audit.OperatorChain, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, e := range es {
		count[e.Kind]++
		all.Write(e.Detail)
	}
	if count[audit.KindConnectionsList] != 4 || count[audit.KindConnectionsRevoke] != 3 || count[audit.KindConnectionsRekey] != 1 || count[audit.KindPurge] != 1 {
		t.Fatalf("audit kinds = %v", count)
	}
	for _, s := range secrets {
		if strings.Contains(all.String(), s) {
			t.Fatalf("a token in the output or the audit trail:\n%s", all.String())
		}
	}
}
