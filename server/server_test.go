package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/store"
)

// newTestServer is a fully protected server with the test tools.
func newTestServer(t testing.TB, eff *effects, gate <-chan struct{}, mod func(*Options)) (*Server, *durableStore) {
	t.Helper()
	j, st := memJournal(t)
	o := Options{
		Tools:     testTools(eff, gate),
		Identify:  identify,
		AllowTool: testAllow,
		RateLimit: &RateLimit{MaxCalls: 1000, Window: time.Hour},
		WorkKey:   nil,
		Journal:   j,
		Logger:    quietLogger(),
	}
	if mod != nil {
		mod(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, &durableStore{st}
}

type durableStore struct{ store.JournalStore }

func TestIdentityReachesToolAndBodyCannotSetIt(t *testing.T) {
	var eff effects
	s, _ := newTestServer(t, &eff, nil, nil)
	url := serveHTTP(t, s, nil)
	for _, tc := range []struct{ token, want string }{{"tok-alice", "alice"}, {"tok-bob", "bob"}} {
		cs := connect(t, url, tc.token)
		// The client claims to be someone else in _meta and in the
		// arguments; only the token counts.
		res := callTool(t, cs, "whoami", map[string]any{"subject": "mallory"},
			mcp.Meta{"subject": "mallory", "userId": "mallory", "io.modelcontextprotocol/subject": "mallory"})
		if res.IsError {
			t.Fatalf("%s: %+v", tc.token, res.Content)
		}
		if got := structured(t, res)["subject"]; got != tc.want {
			t.Errorf("token %s: tool saw subject %v, want %s", tc.token, got, tc.want)
		}
	}
}

func TestDedupTwoCallersSameKey(t *testing.T) {
	var eff effects
	s, st := newTestServer(t, &eff, nil, nil)
	url := serveHTTP(t, s, nil)
	alice, bob := connect(t, url, "tok-alice"), connect(t, url, "tok-bob")
	key := mcp.Meta{"idempotencyKey": "order-1"}

	ra := callTool(t, alice, "charge", chargeIn{Account: "a", Amount: 5}, key)
	rb := callTool(t, bob, "charge", chargeIn{Account: "b", Amount: 7}, key)
	if ra.IsError || rb.IsError {
		t.Fatalf("alice %+v / bob %+v", ra.Content, rb.Content)
	}
	if sa, sb := structured(t, ra), structured(t, rb); sa["subject"] != "alice" || sb["subject"] != "bob" || sb["amount"] != float64(7) {
		t.Fatalf("results crossed: alice got %v, bob got %v", sa, sb)
	}
	// Repeats return each caller's own first outcome without running again.
	ra2 := callTool(t, alice, "charge", chargeIn{Account: "a", Amount: 5}, key)
	rb2 := callTool(t, bob, "charge", chargeIn{Account: "b", Amount: 7}, key)
	if !jsonEqual(t, ra.StructuredContent, ra2.StructuredContent) || !jsonEqual(t, rb.StructuredContent, rb2.StructuredContent) {
		t.Fatalf("repeat differs: %v vs %v; %v vs %v", ra.StructuredContent, ra2.StructuredContent, rb.StructuredContent, rb2.StructuredContent)
	}
	if eff.get("alice/a/5") != 1 || eff.get("bob/b/7") != 1 || eff.total() != 2 {
		t.Fatalf("effects %v, want each once", eff.n)
	}
	// Same key, other arguments: key_reused, and nothing runs.
	r := callTool(t, alice, "charge", chargeIn{Account: "a", Amount: 6}, key)
	if code := refusalCode(r); code != "key_reused" {
		t.Fatalf("same key other args: code %q, content %+v", code, r.Content)
	}
	if eff.total() != 2 {
		t.Fatalf("key_reused ran an effect: %v", eff.n)
	}
	// The subject is each record's owner.
	for _, who := range []string{"alice", "bob"} {
		runs, err := st.ListRuns(context.Background(), store.RunFilter{Owner: who})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || runs[0].Calls != 1 || runs[0].Succeeded != 1 {
			t.Fatalf("runs of %s: %+v", who, runs)
		}
	}
}

func TestKeyClaimedFirstCannotCaptureAnothersCall(t *testing.T) {
	var eff effects
	s, st := newTestServer(t, &eff, nil, nil)
	url := serveHTTP(t, s, nil)
	mallory, bob := connect(t, url, "tok-mallory"), connect(t, url, "tok-bob")
	key := mcp.Meta{"idempotencyKey": "bob-will-use-this"}
	// Mallory claims the key bob will use, with bob's exact arguments.
	rm := callTool(t, mallory, "charge", chargeIn{Account: "bob-acct", Amount: 100}, key)
	if rm.IsError || structured(t, rm)["subject"] != "mallory" {
		t.Fatalf("mallory: %+v", rm.Content)
	}
	// Bob's real call runs for bob, returns bob's result, and is not refused.
	rb := callTool(t, bob, "charge", chargeIn{Account: "bob-acct", Amount: 100}, key)
	if rb.IsError {
		t.Fatalf("bob refused: %+v", rb.Content)
	}
	if sb := structured(t, rb); sb["subject"] != "bob" || sb["seq"] == structured(t, rm)["seq"] {
		t.Fatalf("bob got %v (mallory had %v)", sb, rm.StructuredContent)
	}
	if eff.get("bob/bob-acct/100") != 1 || eff.get("mallory/bob-acct/100") != 1 {
		t.Fatalf("effects %v", eff.n)
	}
	runs, err := st.ListRuns(context.Background(), store.RunFilter{AnyOwner: true})
	if err != nil {
		t.Fatal(err)
	}
	owners := []string{}
	for _, r := range runs {
		owners = append(owners, r.Owner)
	}
	slices.Sort(owners)
	if !slices.Equal(owners, []string{"bob", "mallory"}) {
		t.Fatalf("owners %v", owners)
	}
}

func TestConcurrentRepeatsRunOnce(t *testing.T) {
	var eff effects
	gate := make(chan struct{})
	s, _ := newTestServer(t, &eff, gate, nil)
	url := serveHTTP(t, s, nil)
	cs := connect(t, url, "tok-alice")
	key := mcp.Meta{"idempotencyKey": "k-parallel"}
	const n = 10
	results := make(chan *mcp.CallToolResult, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			results <- callTool(t, cs, "charge", chargeIn{Account: "p", Amount: 1}, key)
		})
	}
	// Nine refusals come back while the one real call is held at the gate.
	busy := 0
	for busy < n-1 {
		select {
		case r := <-results:
			if code := refusalCode(r); code != "run_busy" {
				t.Fatalf("while the first call runs: code %q, content %+v", code, r.Content)
			}
			if sc := structured(t, r); sc["retryable"] != true {
				t.Fatalf("run_busy not retryable: %v", sc)
			}
			if txt := r.Content[0].(*mcp.TextContent).Text; !strings.HasPrefix(txt, "[run_busy]") {
				t.Fatalf("text %q", txt)
			}
			busy++
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d run_busy answers", busy)
		}
	}
	close(gate)
	wg.Wait()
	first := <-results
	if first.IsError {
		t.Fatalf("the real call: %+v", first.Content)
	}
	if got := eff.get("alice/p/1"); got != 1 {
		t.Fatalf("effect ran %d times", got)
	}
	retry := callTool(t, cs, "charge", chargeIn{Account: "p", Amount: 1}, key)
	if !jsonEqual(t, first.StructuredContent, retry.StructuredContent) || eff.get("alice/p/1") != 1 {
		t.Fatalf("retry got %v, first %v", retry.StructuredContent, first.StructuredContent)
	}
}

func TestWorkKeyReplacesClientKey(t *testing.T) {
	var eff effects
	s, _ := newTestServer(t, &eff, nil, func(o *Options) {
		// The work is named by the account argument; the client's key is
		// ignored.
		o.WorkKey = func(req *mcp.CallToolRequest) string {
			var in chargeIn
			json.Unmarshal(req.Params.Arguments, &in)
			return in.Account
		}
	})
	url := serveHTTP(t, s, nil)
	cs := connect(t, url, "tok-alice")
	r1 := callTool(t, cs, "charge", chargeIn{Account: "x", Amount: 1}, mcp.Meta{"idempotencyKey": "one"})
	r2 := callTool(t, cs, "charge", chargeIn{Account: "x", Amount: 1}, mcp.Meta{"idempotencyKey": "two"})
	r3 := callTool(t, cs, "charge", chargeIn{Account: "x", Amount: 1}, nil)
	if !jsonEqual(t, r1.StructuredContent, r2.StructuredContent) || !jsonEqual(t, r1.StructuredContent, r3.StructuredContent) {
		t.Fatalf("not deduped by the work key: %v %v %v", r1.StructuredContent, r2.StructuredContent, r3.StructuredContent)
	}
	if eff.get("alice/x/1") != 1 {
		t.Fatalf("effects %v", eff.n)
	}
	// Empty work key: not deduped.
	callTool(t, cs, "charge", chargeIn{Account: "", Amount: 1}, mcp.Meta{"idempotencyKey": "one"})
	callTool(t, cs, "charge", chargeIn{Account: "", Amount: 1}, mcp.Meta{"idempotencyKey": "one"})
	if eff.get("alice//1") != 2 {
		t.Fatalf("empty work key deduped: %v", eff.n)
	}
}

func TestNoKeyNoDedup(t *testing.T) {
	var eff effects
	s, st := newTestServer(t, &eff, nil, nil)
	cs := connect(t, serveHTTP(t, s, nil), "tok-alice")
	callTool(t, cs, "charge", chargeIn{Account: "n", Amount: 1}, nil)
	callTool(t, cs, "charge", chargeIn{Account: "n", Amount: 1}, nil)
	if eff.get("alice/n/1") != 2 {
		t.Fatalf("effects %v", eff.n)
	}
	runs, _ := st.ListRuns(context.Background(), store.RunFilter{AnyOwner: true})
	if len(runs) != 0 {
		t.Fatalf("calls without a key were journaled: %+v", runs)
	}
}

func toolNames(res *mcp.ListToolsResult) []string {
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return names
}

func TestListAndCallFilteringAgree(t *testing.T) {
	var eff effects
	s, _ := newTestServer(t, &eff, nil, nil)
	url := serveHTTP(t, s, nil)
	for _, tc := range []struct {
		token string
		want  []string
	}{
		{"tok-alice", []string{"charge", "whoami"}},
		{"tok-bob", []string{"charge", "secret", "whoami"}},
		{"tok-nobody", nil}, // a valid token Identify cannot place
	} {
		cs := connect(t, url, tc.token)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		lr, err := cs.ListTools(ctx, nil)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if got := toolNames(lr); !slices.Equal(got, tc.want) {
			t.Errorf("%s lists %v, want %v", tc.token, got, tc.want)
		}
		if lr.CacheScope != "private" {
			t.Errorf("%s: filtered list has cacheScope %q", tc.token, lr.CacheScope)
		}
		for _, name := range []string{"charge", "secret", "whoami"} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
			cancel()
			listed := slices.Contains(tc.want, name)
			if callable := err == nil; callable != listed {
				t.Errorf("%s: %s listed=%v but callable=%v (%v)", tc.token, name, listed, callable, err)
			}
		}
	}
	if eff.get("secret/alice") != 0 {
		t.Fatal("alice ran the hidden tool")
	}
}

// TestHiddenIndistinguishableFromMissing compares the bytes on the wire: a
// hidden tool, an unplaced caller and a tool the server does not have at
// all get the same answer.
func TestHiddenIndistinguishableFromMissing(t *testing.T) {
	var eff effects
	opts := &HTTPOptions{Stateless: true, JSONResponse: true}
	withSecret, _ := newTestServer(t, &eff, nil, nil)
	withoutSecret, _ := newTestServer(t, &eff, nil, func(o *Options) { delete(o.Tools, "secret") })
	urlWith, urlWithout := serveHTTP(t, withSecret, opts), serveHTTP(t, withoutSecret, opts)

	// A bare go-sdk server's own answer for a missing tool.
	bare := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	bareHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return bare }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	urlBare := serveHTTPHandler(t, bareHandler)

	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"secret","arguments":{}}}`
	list := `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{}}`

	_, _, bareBytes := rawPost(t, urlBare, "", call, nil)
	if !strings.Contains(string(bareBytes), `unknown tool`) {
		t.Fatalf("bare answer %s", bareBytes)
	}
	for _, tc := range []struct {
		name, url, token string
	}{
		{"hidden from alice", urlWith, "tok-alice"},
		{"unplaced caller", urlWith, "tok-nobody"},
		{"missing for alice", urlWithout, "tok-alice"},
		{"missing for bob", urlWithout, "tok-bob"},
	} {
		status, _, got := rawPost(t, tc.url, tc.token, call, nil)
		if status != http.StatusOK || string(got) != string(bareBytes) {
			t.Errorf("%s: %d %s\nwant %s", tc.name, status, got, bareBytes)
		}
	}
	// Bob, who may see it, gets a real answer.
	if _, _, got := rawPost(t, urlWith, "tok-bob", call, nil); !strings.Contains(string(got), `"42"`) {
		t.Fatalf("bob: %s", got)
	}
	// tools/list: alice on the server with the secret sees byte for byte
	// what she sees on the server without it.
	_, _, l1 := rawPost(t, urlWith, "tok-alice", list, nil)
	_, _, l2 := rawPost(t, urlWithout, "tok-alice", list, nil)
	if string(l1) != string(l2) || strings.Contains(string(l1), "secret") {
		t.Fatalf("lists differ:\n%s\n%s", l1, l2)
	}
	_, _, l3 := rawPost(t, urlWith, "tok-bob", list, nil)
	if !strings.Contains(string(l3), `"secret"`) {
		t.Fatalf("bob's list: %s", l3)
	}
}

func TestRateLimitExactUnderConcurrency(t *testing.T) {
	var eff effects
	s, _ := newTestServer(t, &eff, nil, func(o *Options) {
		o.RateLimit = &RateLimit{MaxCalls: 5, Window: time.Hour}
		o.Clock = func() time.Time { return time.Date(2030, 1, 1, 0, 30, 0, 0, time.UTC) }
	})
	url := serveHTTP(t, s, nil)
	cs := connect(t, url, "tok-alice")
	const n = 30
	var wg sync.WaitGroup
	var mu sync.Mutex
	limited := 0
	for i := range n {
		wg.Go(func() {
			r := callTool(t, cs, "charge", chargeIn{Account: "rl", Amount: i}, nil)
			if code := refusalCode(r); code == "rate_limited" {
				sc := structured(t, r)
				if ms, _ := sc["retryAfterMs"].(float64); ms != float64(30*time.Minute/time.Millisecond) || sc["retryable"] != true {
					t.Errorf("rate_limited content %v", sc)
				}
				mu.Lock()
				limited++
				mu.Unlock()
			} else if r.IsError {
				t.Errorf("unexpected error %+v", r.Content)
			}
		})
	}
	wg.Wait()
	// The session's initialize spent one of the 5.
	if eff.total() != 4 || limited != 26 {
		t.Fatalf("ran %d, limited %d; want 4 and 26", eff.total(), limited)
	}
	// Another subject has its own quota.
	bob := connect(t, url, "tok-bob")
	if r := callTool(t, bob, "whoami", nil, nil); r.IsError {
		t.Fatalf("bob limited: %+v", r.Content)
	}
}

func TestRateLimitSweep(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	var eff effects
	s, _ := newTestServer(t, &eff, nil, func(o *Options) {
		o.RateLimit = &RateLimit{MaxCalls: 2, Window: time.Minute}
		o.Clock = clock
	})
	l := s.limiter.(*memLimiter)
	ctx := context.Background()
	for i := range 20000 {
		if ok, _, _ := l.allow(ctx, Subject(fmt.Sprint("s", i)), "t"); !ok {
			t.Fatal("refused a first call")
		}
	}
	if l.size() != 20000 {
		t.Fatalf("size %d", l.size())
	}
	// Within the window nothing is evicted: the live counts still refuse.
	advance(30 * time.Second)
	l.allow(ctx, "s1", "t")
	if ok, _, _ := l.allow(ctx, "s1", "t"); ok {
		t.Fatal("third call in a window allowed")
	}
	if l.size() != 20000 {
		t.Fatalf("live windows evicted: size %d", l.size())
	}
	// The window passes; the next call sweeps the expired ones.
	advance(time.Minute)
	cs := connect(t, serveHTTP(t, s, nil), "tok-alice")
	if r := callTool(t, cs, "whoami", nil, nil); r.IsError {
		t.Fatalf("%+v", r.Content)
	}
	if got := l.size(); got != 1 {
		t.Fatalf("after the window passed the limiter holds %d subjects, want 1", got)
	}
}

func TestIdleSessionsClosed(t *testing.T) {
	var eff effects
	s, _ := newTestServer(t, &eff, nil, nil)
	url := serveHTTP(t, s, &HTTPOptions{IdleTimeout: 100 * time.Millisecond})
	cs := connect(t, url, "tok-alice")
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Fatalf("stateful handler negotiated %s", v)
	}
	if r := callTool(t, cs, "whoami", nil, nil); r.IsError {
		t.Fatal(r.Content)
	}
	deadline := time.Now().Add(10 * time.Second)
	for sessions(s) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("idle session still open")
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"}); err == nil {
		t.Fatal("call on a closed session succeeded")
	}
}

func sessions(s *Server) int {
	n := 0
	for range s.MCPServer().Sessions() {
		n++
	}
	return n
}

func TestStatelessWithClient(t *testing.T) {
	var eff effects
	s, _ := newTestServer(t, &eff, nil, nil)
	url := serveHTTP(t, s, &HTTPOptions{Stateless: true})
	cs := connect(t, url, "tok-bob")
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("stateless handler negotiated %s", v)
	}
	r := callTool(t, cs, "whoami", nil, nil)
	if r.IsError || structured(t, r)["subject"] != "bob" {
		t.Fatalf("%+v", r.Content)
	}
	r = callTool(t, cs, "charge", chargeIn{Account: "s", Amount: 1}, mcp.Meta{"idempotencyKey": "sl"})
	r2 := callTool(t, cs, "charge", chargeIn{Account: "s", Amount: 1}, mcp.Meta{"idempotencyKey": "sl"})
	if !jsonEqual(t, r.StructuredContent, r2.StructuredContent) || eff.get("bob/s/1") != 1 {
		t.Fatalf("stateless dedup: %v %v %v", r.StructuredContent, r2.StructuredContent, eff.n)
	}
	// Each request's temporary session ends with it.
	deadline := time.Now().Add(10 * time.Second)
	for sessions(s) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("stateless handler kept %d sessions", sessions(s))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHTTPGuards(t *testing.T) {
	var eff effects
	s, _ := newTestServer(t, &eff, nil, nil)
	url := serveHTTP(t, s, &HTTPOptions{MaxBodyBytes: 1024})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`

	t.Run("no token", func(t *testing.T) {
		status, hdr, _ := rawPost(t, url, "", init, nil)
		if status != http.StatusUnauthorized || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("%d %q", status, hdr.Get("WWW-Authenticate"))
		}
	})
	t.Run("bad token", func(t *testing.T) {
		status, hdr, _ := rawPost(t, url, "tok-forged", init, nil)
		if status != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") == "" {
			t.Fatalf("%d %q", status, hdr.Get("WWW-Authenticate"))
		}
	})
	t.Run("good token", func(t *testing.T) {
		if status, _, body := rawPost(t, url, "tok-alice", init, nil); status != http.StatusOK {
			t.Fatalf("%d %s", status, body)
		}
	})
	t.Run("oversized body", func(t *testing.T) {
		big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 2048) + `"}}`
		if status, _, _ := rawPost(t, url, "tok-alice", big, nil); status != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d", status)
		}
	})
	t.Run("oversized chunked body", func(t *testing.T) {
		big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 4096) + `"}}`
		// A reader without a length: the client sends it chunked, so only
		// the bounded read can catch it.
		req, _ := http.NewRequest(http.MethodPost, url, struct{ io.Reader }{strings.NewReader(big)})
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer tok-alice")
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || req.ContentLength != 0 {
			t.Fatalf("status %d (content length %d)", resp.StatusCode, req.ContentLength)
		}
	})
	t.Run("DNS rebinding host", func(t *testing.T) {
		if status, _, _ := rawPost(t, url, "tok-alice", init, map[string]string{"Host": "evil.example:80"}); status != http.StatusForbidden {
			t.Fatalf("status %d", status)
		}
	})
	t.Run("cross-origin browser request", func(t *testing.T) {
		status, _, _ := rawPost(t, url, "tok-alice", init, map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"})
		if status != http.StatusForbidden {
			t.Fatalf("status %d", status)
		}
	})
	t.Run("allowed hosts", func(t *testing.T) {
		u := serveHTTP(t, s, &HTTPOptions{AllowedHosts: []string{"mcp.example.com"}})
		if status, _, _ := rawPost(t, u, "tok-alice", init, nil); status != http.StatusForbidden {
			t.Fatalf("127.0.0.1 host not in AllowedHosts: status %d", status)
		}
	})
}

func TestStdioSubjectIgnoresIdentify(t *testing.T) {
	var eff effects
	s, _ := newTestServer(t, &eff, nil, func(o *Options) {
		o.StdioSubject = "bob"
		o.Identify = func(context.Context, RequestInfo) (Subject, error) {
			t.Error("Identify called for a local session")
			return "", errUnplaced
		}
	})
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeLocal(ctx, st) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := callTool(t, cs, "secret", nil, nil)
	if r.IsError || eff.get("secret/bob") != 1 {
		t.Fatalf("%+v", r.Content)
	}
	cs.Close()
	cancel()
	<-done
}

func TestLoudWhenOpen(t *testing.T) {
	j, _ := memJournal(t)
	var logs logCapture
	s, err := New(Options{Tools: testTools(&effects{}, nil), Journal: j, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	w := logs.warnings()
	if len(w) != 5 {
		t.Fatalf("want 5 warnings, got %d: %v", len(w), w)
	}
	for _, want := range []string{"Identify", "AllowTool", "RateLimit", "MaxSessionsPerSubject", "WorkKey"} {
		n := 0
		for _, line := range w {
			if strings.Contains(line, "Options."+want) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s named in %d warnings", want, n)
		}
	}
	// Serving does not repeat them.
	cs := connect(t, serveHTTP(t, s, nil), "tok-alice")
	callTool(t, cs, "whoami", nil, nil)
	if got := len(logs.warnings()); got != 5 {
		t.Fatalf("warnings grew to %d", got)
	}

	var quiet logCapture
	_, err = New(Options{Tools: testTools(&effects{}, nil), Journal: j, Logger: quiet.logger(),
		Identify: identify, AllowTool: testAllow, RateLimit: &RateLimit{MaxCalls: 1, Window: time.Second},
		MaxSessionsPerSubject: 4, WorkKey: func(*mcp.CallToolRequest) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if w := quiet.warnings(); len(w) != 0 {
		t.Fatalf("fully protected server warned: %v", w)
	}

	// OwnWarnings: an open server whose program warns in its own words
	// logs none of them, at New or when serving HTTP without a verifier.
	var own logCapture
	s, err = New(Options{Tools: testTools(&effects{}, nil), Journal: j, Logger: own.logger(), OwnWarnings: true})
	if err != nil {
		t.Fatal(err)
	}
	callTool(t, connect(t, serveHTTP(t, s, nil), "tok-alice"), "whoami", nil, nil)
	if w := own.warnings(); len(w) != 0 {
		t.Fatalf("OwnWarnings: the server warned: %v", w)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for name, o := range map[string]Options{
		"zero rate":   {RateLimit: &RateLimit{MaxCalls: 0, Window: time.Second}},
		"tiny window": {RateLimit: &RateLimit{MaxCalls: 1, Window: time.Microsecond}},
		"zero tool":   {Tools: map[string]Tool{"x": {}}},
		"name mismatch": {Tools: map[string]Tool{"x": NewTool(&mcp.Tool{Name: "y"}, func(context.Context, Caller, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, nil
		})}},
		"invalid schema": {Tools: map[string]Tool{"x": SDKTool(&mcp.Tool{InputSchema: json.RawMessage(`{"type":"string"}`)}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
			return nil, nil, nil
		})}},
	} {
		o.Logger = quietLogger()
		if _, err := New(o); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

func TestSchemaValidationKept(t *testing.T) {
	var eff effects
	s, _ := newTestServer(t, &eff, nil, nil)
	cs := connect(t, serveHTTP(t, s, nil), "tok-alice")
	r := callTool(t, cs, "charge", map[string]any{"account": 5, "amount": "x"}, nil)
	if !r.IsError || eff.total() != 0 {
		t.Fatalf("invalid arguments reached the tool: %+v", r.Content)
	}
}

func jsonEqual(t testing.TB, a, b any) bool {
	t.Helper()
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	var va, vb any
	json.Unmarshal(ja, &va)
	json.Unmarshal(jb, &vb)
	x, _ := json.Marshal(va)
	y, _ := json.Marshal(vb)
	return string(x) == string(y) && string(x) != "null"
}

// AdmitCall answers exactly as the middleware does: the same subject, the
// go-sdk's unknown-tool error for hidden tools and unplaced callers, and
// the rate limit counted on the same quota.
func TestAdmitCall(t *testing.T) {
	var eff effects
	s, _ := newTestServer(t, &eff, nil, func(o *Options) { o.RateLimit = &RateLimit{MaxCalls: 2, Window: time.Hour} })
	ctx := context.Background()
	info := func(user string) RequestInfo { return RequestInfo{TokenInfo: &sdkauth.TokenInfo{UserID: user}} }

	sub, res, err := s.AdmitCall(ctx, info("bob"), "secret")
	if sub != "bob" || res != nil || err != nil {
		t.Fatalf("bob: %q %v %v", sub, res, err)
	}
	want := unknownTool("secret").Error()
	if _, res, err := s.AdmitCall(ctx, info("alice"), "secret"); res != nil || err == nil || err.Error() != want {
		t.Errorf("hidden from alice: %v %v, want %q", res, err, want)
	}
	if _, res, err := s.AdmitCall(ctx, RequestInfo{}, "secret"); res != nil || err == nil || err.Error() != want {
		t.Errorf("unplaced caller: %v %v, want %q", res, err, want)
	}
	// Bob's second call is his quota's last; the third is refused.
	if _, res, err := s.AdmitCall(ctx, info("bob"), "secret"); res != nil || err != nil {
		t.Fatalf("bob's second call: %v %v", res, err)
	}
	_, res, err = s.AdmitCall(ctx, info("bob"), "secret")
	if err != nil || res == nil || !res.IsError || !strings.Contains(fmt.Sprint(res.StructuredContent), "rate_limited") {
		t.Fatalf("bob's third call: %+v %v", res, err)
	}
	if eff.total() != 0 {
		t.Error("AdmitCall ran a tool")
	}
}
