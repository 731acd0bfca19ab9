package auditlog

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/config"
	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func parse(t *testing.T, dir, yml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(yml), filepath.Join(dir, "gh.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestKey: each way the signing key can be missing or wrong stops the
// gateway with the field named; a good one, in a file or a variable, is
// read.
func TestKey(t *testing.T) {
	dir := t.TempDir()
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pemKey, _ := audit.MarshalPrivateKey(k)
	os.WriteFile(filepath.Join(dir, "good.key"), pemKey, 0o600)
	os.WriteFile(filepath.Join(dir, "bad.key"), []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"), 0o600)
	t.Setenv("GH_AUDIT_SEED", base64.StdEncoding.EncodeToString(k.Seed()))
	t.Setenv("GH_AUDIT_EMPTY", "")
	for yml, want := range map[string]string{
		"audit: {signingKeyFile: good.key}":      "",
		"audit: {signingKeyEnv: GH_AUDIT_SEED}":  "",
		"audit: {}":                              "none",
		"audit: {signingKeyFile: missing.key}":   "audit.signingKeyFile",
		"audit: {signingKeyFile: bad.key}":       "audit.signingKeyFile",
		"audit: {signingKeyEnv: GH_AUDIT_EMPTY}": "audit.signingKeyEnv",
		"audit: {signingKeyEnv: GH_AUDIT_UNSET}": "audit.signingKeyEnv",
	} {
		got, err := Key(parse(t, dir, yml))
		var ce *config.Error
		switch want {
		case "":
			if err != nil || !got.Equal(k) {
				t.Errorf("%s: %v", yml, err)
			}
		case "none":
			if err != nil || got != nil {
				t.Errorf("%s: %v %v", yml, got, err)
			}
		default:
			if !errors.As(err, &ce) || ce.Field != want || strings.Contains(err.Error(), string(pemKey)) {
				t.Errorf("%s: %v, want a *config.Error naming %s", yml, err, want)
			}
		}
	}
}

// TestUpstreamChanges: a server's connection is recorded when it changes
// (lost, then up), not on every call; a nil recorder records nothing.
func TestUpstreamChanges(t *testing.T) {
	ctx := context.Background()
	st, _ := memory.New(nil)
	defer st.Close()
	r, err := Open(ctx, parse(t, t.TempDir(), ""), st, "i1", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, lost := range []bool{false, false, true, true, false, false} {
		r.Upstream("up", lost)
	}
	r.Call(Call{Kind: audit.KindCall, Subject: "a", Tool: "t", Outcome: "ok", Replayed: true, ApprovalID: "apr_1"})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	es, _ := st.ReadAuditChain(ctx, "gw/i1", 0, 0)
	var got []string
	for _, e := range es {
		got = append(got, e.Kind+" "+e.Outcome+" "+string(e.Detail))
	}
	want := []string{"connection lost ", "connection up ", `call ok {"approvalId":"apr_1","replayed":true}`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("entries %q, want %q", got, want)
	}
	var none *Recorder
	none.Upstream("up", true)
	none.Call(Call{})
	if err := none.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestConnectFlow: a connect flow's end is recorded with its subject,
// server, outcome and detail: the proof, and the upstream account when
// connected (never for another identity); a nil recorder records nothing.
func TestConnectFlow(t *testing.T) {
	ctx := context.Background()
	st, _ := memory.New(nil)
	defer st.Close()
	r, err := Open(ctx, parse(t, t.TempDir(), ""), st, "i1", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.ConnectFlow("https://idp#alice", "up", "connected", "https://as#octo", "openid")
	r.ConnectFlow("https://idp#alice", "up", "another_identity", "ignored", "openid")
	r.ConnectFlow("ci", "up", "connected", "", "token")
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	es, _ := st.ReadAuditChain(ctx, "gw/i1", 0, 0)
	var got []string
	for _, e := range es {
		got = append(got, e.Kind+" "+e.Subject+" "+e.Server+" "+e.Outcome+" "+string(e.Detail))
	}
	want := []string{`connect.flow https://idp#alice up connected {"account":"https://as#octo","proof":"openid"}`,
		`connect.flow https://idp#alice up another_identity {"proof":"openid"}`,
		`connect.flow ci up connected {"account":"","proof":"token"}`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("entries %q, want %q", got, want)
	}
	var none *Recorder
	none.ConnectFlow("a", "up", "connected", "", "none")
}

// TestDetailIsTheMapsJSON: a call's detail, written by hand, is byte for
// byte the JSON encoding/json writes for the map of its members, for
// every combination of flags, approval and key, with texts that need
// escaping.
func TestDetailIsTheMapsJSON(t *testing.T) {
	want := func(c Call) []byte {
		d := map[string]any{}
		switch {
		case c.NotRecorded:
			d["notRecorded"] = true
		case c.Replayed && c.ApprovalID != "":
			d["replayed"], d["approvalId"] = true, c.ApprovalID
		case c.Replayed:
			d["replayed"] = true
		case c.ApprovalID != "":
			d["approvalId"] = c.ApprovalID
		}
		if c.Key != "" {
			d["key"], d["runId"], d["toolCallId"] = c.Key, c.RunID, c.ToolCallID
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	n := 0
	for _, notRecorded := range []bool{false, true} {
		for _, replayed := range []bool{false, true} {
			for _, approval := range []string{"", "ap-1", "ap <\"2\">"} {
				for _, key := range []string{"", "k1", "k\u00e9y\n\u2028\xff"} {
					c := Call{NotRecorded: notRecorded, Replayed: replayed, ApprovalID: approval, Key: key, RunID: "run & 1", ToolCallID: "call-\t1"}
					e := entryOf(c)
					if !notRecorded && !replayed && approval == "" && key == "" {
						if e.Detail != nil {
							t.Fatalf("a plain call has the detail %s", e.Detail)
						}
						continue
					}
					if w := want(c); string(e.Detail) != string(w) {
						t.Fatalf("%+v: detail %s, want %s", c, e.Detail, w)
					}
					n++
				}
			}
		}
	}
	if n != 35 {
		t.Fatalf("%d combinations checked, want 35", n)
	}
}
