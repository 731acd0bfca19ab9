package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/config"
)

func hashOf(tok string) string {
	s := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(s[:])
}

// A caller who knows the config (the hashes) but not the tokens gets in
// nowhere; a prefix or a case change of a token is not the token.
func TestVerifierAttacks(t *testing.T) {
	au := staticAuthenticator(&config.Auth{Tokens: []config.Token{
		{SHA256: hashOf("s3cret-alice"), Subject: "alice"},
		{SHA256: hashOf("s3cret-bob"), Subject: "bob", Scopes: []string{"tool:a__x"}},
	}})
	for _, bad := range []string{"", hashOf("s3cret-alice"), "s3cret-alic", "S3CRET-ALICE", "s3cret-alice ", "s3cret-alice\x00"} {
		if _, err := au.Verify(context.Background(), bad, nil); !errors.Is(err, auth.ErrInvalidToken) {
			t.Errorf("token %q: %v, want ErrInvalidToken", bad, err)
		}
	}
	ti, err := au.Verify(context.Background(), "s3cret-bob", nil)
	if err != nil || ti.UserID != "bob" || ti.Expiration.IsZero() {
		t.Fatalf("bob: %+v %v", ti, err)
	}
	if !au.Allows("bob", nil, "a__x") || au.Allows("bob", nil, "a__y") || !au.Allows("alice", nil, "a__y") || au.Allows("mallory", nil, "a__x") {
		t.Error("scopes decide wrongly")
	}
	if open := staticAuthenticator(nil); !open.Allows("local", nil, "anything") {
		t.Error("without auth every tool is in scope")
	}
}

// One caller's key never names another caller's work, and the raw key
// never goes upstream.
func TestUnitOfWork(t *testing.T) {
	r1, c1 := unitOfWork("alice", "bank__pay", "order-42")
	r2, c2 := unitOfWork("bob", "bank__pay", "order-42")
	r3, c3 := unitOfWork("alice", "bank__refund", "order-42")
	if c1 == c2 || r1 == r2 || c1 == c3 || r1 == r3 {
		t.Error("units of work collide across subjects or tools")
	}
	if r, c := unitOfWork("alice", "bank__pay", "order-42"); r != r1 || c != c1 {
		t.Error("unit of work is not a pure function")
	}
	// Separator games: ("a\x00b", "c") vs ("a", "b\x00c").
	_, x := unitOfWork("a\x00b", "c", "k")
	_, y := unitOfWork("a", "b\x00c", "k")
	if x == y {
		t.Error("subject/tool boundary is ambiguous")
	}
	if strings.Contains(r1+":"+c1, "order-42") || !strings.HasPrefix(r1, "gw_") {
		t.Errorf("upstream key %s:%s", r1, c1)
	}
}

// The caller's reserved and consumed _meta keys never go upstream, and the
// caller's map is not shared.
func TestForwardMeta(t *testing.T) {
	in := mcp.Meta{"idempotencyKey": "k", "runId": "r", "progressToken": 1, "custom": "v",
		"io.modelcontextprotocol/related-task": map[string]any{"taskId": "t"}}
	out := forwardMeta(in)
	if len(out) != 1 || out["custom"] != "v" {
		t.Fatalf("forwarded %v", out)
	}
	out["custom"] = "changed"
	if in["custom"] != "v" {
		t.Error("the caller's map was shared")
	}
	if forwardMeta(mcp.Meta{"idempotencyKey": "k"}) != nil {
		t.Error("nothing to forward should be nil")
	}
}

func TestFirewallRun(t *testing.T) {
	if a, b := firewallRun("alice", "job", ""), firewallRun("bob", "job", ""); a == b || a == "" {
		t.Errorf("runs %q %q: a runId must be scoped to the subject", a, b)
	}
	if a, b := firewallRun("alice", "", "s1"), firewallRun("alice", "", "s2"); a == b || a == "" {
		t.Errorf("runs %q %q: without a runId the session names the run", a, b)
	}
	if firewallRun("alice", "", "") != "" {
		t.Error("no runId and no session: no run")
	}
}
