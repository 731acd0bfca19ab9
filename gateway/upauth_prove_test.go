package gateway

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store"
)

// TestConnectProofEndToEnd: a gateway whose connections are in the vault
// of its SQLite store, a real authorization server and a protected go-sdk
// upstream. Alice's connect URL opened by bob's browser (bob's static
// token posted as the proof) is refused as another identity: nothing
// stored, the URL spent. Her next URL opened with her own token connects
// her: the connection row records her upstream account (the upstream's ID
// token's issuer#sub), and the audit trail holds both ends (connect.flow
// another_identity, then connected with the account).
func TestConnectProofEndToEnd(t *testing.T) {
	e := startUserGatewayOn(t, userSetup{})
	ctx := context.Background()
	st := openTestStore(t, "sqlite:"+e.db)
	u := connectURL(t, e.call(aliceToken))
	jar, _ := cookiejar.New(nil)
	code, body, _ := openConnect(t, &http.Client{Jar: jar, Timeout: 30 * time.Second}, u, "", bobToken)
	if code != http.StatusForbidden || !strings.Contains(body, "another identity") {
		t.Fatalf("alice's URL with bob's token: %d %s", code, body)
	}
	if _, ok, _ := st.Connection(ctx, "up", "alice"); ok {
		t.Fatal("a connection was stored for alice")
	}
	if code := walk(t, u, "", aliceToken); code != http.StatusGone {
		t.Fatalf("the spent URL: %d", code)
	}
	if code := walk(t, connectURL(t, e.call(aliceToken)), "", aliceToken); code != http.StatusOK {
		t.Fatalf("alice's own URL: %d", code)
	}
	account := e.as.Issuer() + "#alice"
	c, ok, err := st.Connection(ctx, "up", "alice")
	if err != nil || !ok || c.Account != account {
		t.Fatalf("alice's connection: %+v %v %v", c, ok, err)
	}
	if res := e.call(aliceToken); res.IsError {
		t.Fatalf("alice's retry: %+v", res)
	}
	var got []string
	deadline := time.Now().Add(15 * time.Second)
	for {
		es, err := st.ListAudit(ctx, store.AuditFilter{Kind: audit.KindConnectFlow})
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, e := range es {
			got = append(got, e.Subject+" "+e.Server+" "+e.Outcome+" "+string(e.Detail))
		}
		if len(got) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	want := []string{`alice up another_identity {"proof":"token"}`, `alice up connected {"account":"` + account + `","proof":"token"}`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("audit %q, want %q", got, want)
	}
}
