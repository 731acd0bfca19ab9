package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
	"github.com/gatehouse-dev/gatehouse/internal/vault"
)

// TestMultiRoundTripUserAuth: the multi round-trip upstream of
// TestMultiRoundTripAcrossReplicas behind a real authorization server,
// served with auth: user by two gateways on one SQLite store (the vault
// in it), so that each subject's requests go on its own upstream session.
// alice and bob connect their accounts. alice's go-sdk client at
// 2026-07-28, through a proxy that picks a replica per request, calls a
// tool and gets a prompt and a resource that each ask for input: it is
// asked, answers, and its retry, on the other replica, goes on alice's
// session made there from the vault's token, with the server's own state:
// the tool's effect is counted once. bob replaying a state sealed for
// alice is refused, and the upstream sees nothing of it; alice's own
// retry of it completes. A 2025-11-25 client of alice's is asked through
// its session; one of bob's that did not announce elicitation is refused.
func TestMultiRoundTripUserAuth(t *testing.T) {
	t.Setenv("GW_UP_SECRET", "gw-secret")
	t.Setenv(vault.EnvKey, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	d := "sqlite:" + filepath.Join(t.TempDir(), "shared.db")
	ga, gb := httptest.NewUnstartedServer(nil), httptest.NewUnstartedServer(nil)
	public := "http://" + ga.Listener.Addr().String()
	a, b := public+"/mcp", "http://"+gb.Listener.Addr().String()+"/mcp"
	as := authserver.Start(t, authserver.Options{TokenLifetime: 5 * time.Second, Clients: []authserver.Client{
		{ID: "gw", Secret: "gw-secret", RedirectURIs: []string{public + "/connect/callback", serviceCallback}},
	}})
	up := &mrtrUpstream{}
	pu := &protectedUpstream{}
	protect(t, pu, as.Issuer(), "127.0.0.1", up.server(), &mcp.StreamableHTTPOptions{Stateless: true})
	up.url = pu.url
	st := openTestStore(t, d)
	keys, err := vault.LoadKeys(nil)
	if err != nil {
		t.Fatal(err)
	}
	connectService(t, vault.New(st, keys, nil), "up", up.url)
	for i, gs := range []*httptest.Server{ga, gb} {
		dir := t.TempDir()
		yml := strings.Replace(userConfig(dir, d, public, up.url), "listen: 127.0.0.1:0\n", "listen: 127.0.0.1:0\nhttp: {bothRevisions: true}\nupstreamProtocol: auto\n", 1)
		cfg, err := ParseConfig([]byte(yml), filepath.Join(dir, "gatehouse.yaml"), dir)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		g, err := New(ctx, cfg, &Options{Store: openTestStore(t, d), Instance: fmt.Sprintf("replica-%d", i)})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = g.Close() })
		h, err := g.Handler()
		if err != nil {
			t.Fatal(err)
		}
		gs.Config.Handler = h
		gs.Start()
		t.Cleanup(gs.Close)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// alice and bob connect their own accounts.
	for _, who := range []string{aliceToken, bobToken} {
		cs, err := connectAs(a, who)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__confirm", Arguments: map[string]any{}})
		_ = cs.Close()
		if err != nil {
			t.Fatal(err)
		}
		if code := walk(t, connectURL(t, res), "", who); code != http.StatusOK {
			t.Fatalf("connecting: %d", code)
		}
	}
	if up.rounds.Load() != 0 {
		t.Fatalf("the upstream was called %d times before any account was connected", up.rounds.Load())
	}

	rr := &roundRobin{urls: []string{a, b}, token: aliceToken, hits: map[string][]string{}}
	cs, asked := mrtrAsker(t, ctx, a, rr)
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("the client negotiated %q", v)
	}
	checkInputRounds(t, ctx, cs, "up__", asked, up, rr, a, b)
	if pu.sawToken(aliceToken) || pu.lastSeen() == "" {
		t.Fatal("the upstream got the caller's own token, or none")
	}

	// bob replays a state sealed for alice: refused, nothing forwarded.
	first := rawCall(t, a, aliceToken, "tools/call", map[string]any{"name": "up__confirm", "arguments": map[string]any{"n": 3}})
	result, _ := first["result"].(map[string]any)
	state, _ := result["requestState"].(string)
	if result["resultType"] != "input_required" || !strings.HasPrefix(state, "ghs1.") || strings.Contains(state, "state-1") {
		t.Fatalf("the first round: %v", first)
	}
	answers := map[string]any{"q": map[string]any{"action": "accept", "content": map[string]any{"answer": "yes"}}}
	retry := func(token string) map[string]any {
		return rawCall(t, b, token, "tools/call", map[string]any{"name": "up__confirm", "arguments": map[string]any{"n": 3}, "inputResponses": answers, "requestState": state})
	}
	msg := retry(bobToken)
	if e, _ := msg["error"].(map[string]any); e == nil || e["code"] != float64(-32602) || !strings.Contains(fmt.Sprint(e["message"]), "issued to another caller") {
		t.Fatalf("bob's replay: %v", msg)
	}
	if got := up.seen(); len(got) != 3 || up.effects.Load() != 1 {
		t.Fatalf("the upstream saw %q (effects %d) after bob's replay", got, up.effects.Load())
	}
	if msg := retry(aliceToken); !strings.Contains(fmt.Sprint(msg["result"]), `action=accept answer=yes args={"n":3}`) {
		t.Fatalf("alice's retry: %v", msg)
	}
	if got := up.seen(); len(got) != 4 || got[3] != "state-1" || up.effects.Load() != 2 {
		t.Fatalf("the upstream saw %q (effects %d)", got, up.effects.Load())
	}

	// A 2025-11-25 client of alice's is asked through its session.
	var old atomic.Int64
	os := sessionWith(t, a, aliceToken, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			old.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "old"}}, nil
		},
	})
	res, err := os.CallTool(ctx, &mcp.CallToolParams{Name: "up__confirm", Arguments: map[string]any{"n": 4}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; res.IsError || got != `action=accept answer=old args={"n":4}` || old.Load() != 1 {
		t.Fatalf("the stateful caller: %s (asked %d)", got, old.Load())
	}
	if n := up.effects.Load(); n != 3 {
		t.Fatalf("effects %d, want 3", n)
	}
	// One of bob's that did not announce elicitation is not asked.
	bs, err := connectAs(a, bobToken)
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	res, err = bs.CallTool(ctx, &mcp.CallToolParams{Name: "up__confirm", Arguments: map[string]any{"n": 5}})
	if err == nil || !strings.Contains(err.Error(), "did not announce the elicitation capability") || up.effects.Load() != 3 {
		t.Fatalf("a caller that cannot be asked: %+v %v (effects %d)", res, err, up.effects.Load())
	}
}
