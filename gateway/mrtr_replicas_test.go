package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/store"
)

// mrtrUpstream is a real go-sdk server (streamable HTTP, stateless: it
// speaks 2026-07-28) whose tool, prompt and resource ask for input the
// multi round-trip way (SEP-2322) with the state "state-1", and count
// their effect once answered. Every requestState it is sent is recorded.
type mrtrUpstream struct {
	url     string
	effects atomic.Int64 // completed confirms (the tool's effect)
	mu      sync.Mutex
	states  []string // every requestState a retry carried, in order
	rounds  atomic.Int64
}

func (u *mrtrUpstream) saw(state string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.states = append(u.states, state)
}

func (u *mrtrUpstream) seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.states...)
}

func newMRTRUpstream(t *testing.T) *mrtrUpstream {
	t.Helper()
	u := &mrtrUpstream{}
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return u.server() }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)
	u.url = hs.URL + "/mcp"
	return u
}

// server is u's go-sdk server (its tools, prompt and resource).
func (u *mrtrUpstream) server() *mcp.Server {
	ask := mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "Proceed?", RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}}}}
	answered := func(responses mcp.InputResponseMap, state string) (string, bool) {
		if responses == nil && state == "" {
			return "", false
		}
		u.saw(state)
		r, ok := responses["q"].(*mcp.ElicitResult)
		if !ok || state != "state-1" {
			return fmt.Sprintf("bad retry: state %q responses %v", state, responses), true
		}
		return "action=" + r.Action + " answer=" + fmt.Sprint(r.Content["answer"]), true
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "mrtr", Version: "1"}, nil)
	for _, name := range []string{"confirm", "other"} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			u.rounds.Add(1)
			if text, ok := answered(req.Params.InputResponses, req.Params.RequestState); ok {
				if strings.HasPrefix(text, "action=") {
					u.effects.Add(1)
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text + " args=" + string(req.Params.Arguments)}}}, nil
			}
			return &mcp.CallToolResult{InputRequests: ask, RequestState: "state-1"}, nil
		})
	}
	s.AddPrompt(&mcp.Prompt{Name: "greet"}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if text, ok := answered(req.Params.InputResponses, req.Params.RequestState); ok {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}, nil
		}
		return &mcp.GetPromptResult{InputRequests: ask, RequestState: "state-1"}, nil
	})
	s.AddResource(&mcp.Resource{URI: "test://secret", Name: "secret"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if text, ok := answered(req.Params.InputResponses, req.Params.RequestState); ok {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://secret", Text: text}}}, nil
		}
		return &mcp.ReadResourceResult{InputRequests: ask, RequestState: "state-1"}, nil
	})
	return s
}

// mrtrReplica serves a gateway for alice and mallory on its own handle of
// the shared store st, in front of up, and returns its MCP endpoint.
func mrtrReplica(t *testing.T, st store.Store, instance, upURL string, clock func() time.Time) string {
	t.Helper()
	dir := t.TempDir()
	yml := fmt.Sprintf(`listen: 127.0.0.1:0
http: {bothRevisions: true}
upstreamProtocol: auto
auth:
  tokens:
    - {sha256: %s, subject: alice}
    - {sha256: %s, subject: mallory}
servers:
  up:
    type: streamable-http
    url: %s
    prefix: ""
`, hashOf("alice-token"), hashOf("mallory-token"), upURL)
	cfg, err := ParseConfig([]byte(yml), filepath.Join(dir, "gatehouse.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := New(ctx, cfg, &Options{Store: st, Instance: instance, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	h, err := g.Handler()
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// roundRobin sends each HTTP request to the next of urls (per request, not
// per connection) with a bearer token, and counts where each went.
type roundRobin struct {
	urls  []string
	token string
	next  atomic.Int64
	mu    sync.Mutex
	hits  map[string][]string // replica URL -> JSON-RPC methods it served
}

func (rr *roundRobin) RoundTrip(r *http.Request) (*http.Response, error) {
	n := rr.next.Add(1) - 1
	target := rr.urls[int(n)%len(rr.urls)]
	r = r.Clone(r.Context())
	var method struct {
		Method string `json:"method"`
	}
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		_ = json.Unmarshal(b, &method)
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	rr.mu.Lock()
	rr.hits[target] = append(rr.hits[target], method.Method)
	rr.mu.Unlock()
	u, err := r.URL.Parse(target)
	if err != nil {
		return nil, err
	}
	r.URL, r.Host = u, u.Host
	r.Header.Set("Authorization", "Bearer "+rr.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMultiRoundTripAcrossReplicas: a go-sdk client at 2026-07-28 calls,
// through two gateways on one SQLite store and a proxy that picks a
// replica per request, a tool, a prompt and a resource of a real go-sdk
// upstream that each ask for input the multi round-trip way. The client
// is asked, answers, and its retry lands on the other replica, which
// opens the sealed requestState (nothing stored) and gives the upstream
// its own state back: the tool's effect is counted once. A 2025-11-25
// client on the same endpoint still gets a session, and is asked through
// it as before.
func TestMultiRoundTripAcrossReplicas(t *testing.T) {
	t.Setenv("GATEHOUSE_SECRET_KEY", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32)))
	up := newMRTRUpstream(t)
	d := "sqlite:" + filepath.Join(t.TempDir(), "shared.db")
	a := mrtrReplica(t, openTestStore(t, d), "replica-a", up.url, nil)
	b := mrtrReplica(t, openTestStore(t, d), "replica-b", up.url, nil)
	rr := &roundRobin{urls: []string{a, b}, token: "alice-token", hits: map[string][]string{}}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, asked := mrtrAsker(t, ctx, a, rr)
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" || cs.ID() != "" {
		t.Fatalf("the client negotiated %q with session %q, want 2026-07-28 without one", v, cs.ID())
	}

	checkInputRounds(t, ctx, cs, "", asked, up, rr, a, b)

	// A 2025-11-25 client on the same endpoint gets a session, and the
	// upstream's input request reaches it through it.
	var old atomic.Int64
	oc := mcp.NewClient(&mcp.Implementation{Name: "old", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			old.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "old"}}, nil
		},
	})
	os, err := oc.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: a, HTTPClient: &http.Client{Transport: withBearer{"alice-token"}}}, statefulSession())
	if err != nil {
		t.Fatal(err)
	}
	defer os.Close()
	if os.ID() == "" || os.InitializeResult().ProtocolVersion != "2025-11-25" {
		t.Fatalf("a 2025-11-25 client got session %q at %q", os.ID(), os.InitializeResult().ProtocolVersion)
	}
	res, err := os.CallTool(ctx, &mcp.CallToolParams{Name: "confirm", Arguments: map[string]any{"n": 2}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != `action=accept answer=old args={"n":2}` || old.Load() != 1 {
		t.Fatalf("the stateful caller: %s (asked %d)", got, old.Load())
	}
	if n := up.effects.Load(); n != 2 {
		t.Fatalf("effects %d, want 2", n)
	}
}

// rawCall posts one JSON-RPC request at 2026-07-28 to url with token and
// returns the message answered (the last of an event stream).
func rawCall(t *testing.T, url, token, method string, params map[string]any) map[string]any {
	t.Helper()
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}},
	}
	params["_meta"] = meta
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	for _, k := range []string{"name", "uri"} {
		if v, ok := params[k].(string); ok {
			req.Header.Set("Mcp-Name", v)
		}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var last []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
				last = bytes.Clone(d)
			}
		}
	} else {
		last, _ = io.ReadAll(resp.Body)
	}
	var msg map[string]any
	if err := json.Unmarshal(last, &msg); err != nil {
		t.Fatalf("%s %d: %q", method, resp.StatusCode, last)
	}
	return msg
}

// TestMultiRoundTripStateAttacks: a hostile caller at 2026-07-28, raw over
// HTTP. alice's call gets an input request with a sealed requestState
// (never the upstream's own). What a retry carries is checked before
// anything is forwarded: mallory replaying alice's state, a tampered or
// forged state, the upstream's raw state, alice's state used for another
// tool or other arguments, answers without a state, and a state past its
// time (on a replica whose clock is an hour on) are each refused with
// their own error, and the upstream never sees any of them. alice's own
// retry, on the other replica, completes.
func TestMultiRoundTripStateAttacks(t *testing.T) {
	t.Setenv("GATEHOUSE_SECRET_KEY", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32)))
	up := newMRTRUpstream(t)
	d := "sqlite:" + filepath.Join(t.TempDir(), "shared.db")
	a := mrtrReplica(t, openTestStore(t, d), "replica-a", up.url, nil)
	b := mrtrReplica(t, openTestStore(t, d), "replica-b", up.url, nil)
	late := mrtrReplica(t, openTestStore(t, d), "replica-late", up.url, func() time.Time { return time.Now().Add(time.Hour) })

	first := rawCall(t, a, "alice-token", "tools/call", map[string]any{"name": "confirm", "arguments": map[string]any{"n": 1}})
	result, _ := first["result"].(map[string]any)
	state, _ := result["requestState"].(string)
	if result["resultType"] != "input_required" || result["inputRequests"] == nil || !strings.HasPrefix(state, "ghs1.") {
		t.Fatalf("the first round: %v", first)
	}
	if strings.Contains(state, "state-1") {
		t.Fatal("the sealed state shows the upstream's")
	}
	answers := map[string]any{"q": map[string]any{"action": "accept", "content": map[string]any{"answer": "yes"}}}
	// One base64url character changed mid-token: still base64, another blob.
	tampered := []byte(state)
	if i := len(tampered) / 2; tampered[i] == 'A' {
		tampered[i] = 'B'
	} else {
		tampered[i] = 'A'
	}
	cases := []struct {
		name, url, token, tool string
		args                   map[string]any
		state                  any
		want                   string
	}{
		{"another caller replays alice's state", b, "mallory-token", "confirm", map[string]any{"n": 1}, state, "issued to another caller"},
		{"a tampered state", b, "alice-token", "confirm", map[string]any{"n": 1}, string(tampered), "does not open"},
		{"the upstream's raw state", b, "alice-token", "confirm", map[string]any{"n": 1}, "state-1", "not one this gateway issued"},
		{"a forged state", b, "alice-token", "confirm", map[string]any{"n": 1}, "ghs1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "does not open"},
		{"another tool", b, "alice-token", "other", map[string]any{"n": 1}, state, "issued for another request"},
		{"other arguments", b, "alice-token", "confirm", map[string]any{"n": 2}, state, "issued for another request"},
		{"answers without a state", b, "alice-token", "confirm", map[string]any{"n": 1}, nil, "inputResponses without requestState"},
		{"past its time", late, "alice-token", "confirm", map[string]any{"n": 1}, state, "has expired"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := map[string]any{"name": c.tool, "arguments": c.args, "inputResponses": answers}
			if c.state != nil {
				p["requestState"] = c.state
			}
			msg := rawCall(t, c.url, c.token, "tools/call", p)
			e, _ := msg["error"].(map[string]any)
			if e == nil || e["code"] != float64(-32602) || !strings.Contains(fmt.Sprint(e["message"]), c.want) {
				t.Fatalf("got %v, want invalid params saying %q", msg, c.want)
			}
			if s := fmt.Sprint(e["message"]); strings.Contains(s, "alice") || strings.Contains(s, state) {
				t.Fatalf("the error quotes the state or its owner: %s", s)
			}
		})
	}
	// prompts/get and resources/read check theirs alike.
	pf := rawCall(t, a, "alice-token", "prompts/get", map[string]any{"name": "greet"})
	pstate, _ := pf["result"].(map[string]any)["requestState"].(string)
	if msg := rawCall(t, b, "mallory-token", "prompts/get", map[string]any{"name": "greet", "requestState": pstate, "inputResponses": answers}); msg["error"] == nil ||
		!strings.Contains(fmt.Sprint(msg["error"]), "another caller") {
		t.Fatalf("prompts/get replayed by another caller: %v", msg)
	}
	if msg := rawCall(t, b, "alice-token", "resources/read", map[string]any{"uri": "test://secret", "requestState": pstate, "inputResponses": answers}); msg["error"] == nil ||
		!strings.Contains(fmt.Sprint(msg["error"]), "another request") {
		t.Fatalf("a prompt's state used for a resource: %v", msg)
	}
	if got := up.seen(); len(got) != 0 || up.effects.Load() != 0 {
		t.Fatalf("the upstream saw retries %q (effects %d); want none", got, up.effects.Load())
	}

	// alice's own retry, on the other replica: the upstream gets its state.
	msg := rawCall(t, b, "alice-token", "tools/call", map[string]any{"name": "confirm", "arguments": map[string]any{"n": 1}, "inputResponses": answers, "requestState": state})
	if !strings.Contains(fmt.Sprint(msg["result"]), "action=accept answer=yes") {
		t.Fatalf("alice's retry: %v", msg)
	}
	if got := up.seen(); len(got) != 1 || got[0] != "state-1" || up.effects.Load() != 1 {
		t.Fatalf("the upstream saw %q (effects %d)", got, up.effects.Load())
	}
}

// mrtrAsker connects, at url through rr, a go-sdk client that answers the
// upstream's "Proceed?" with yes; asked counts the times it was asked.
func mrtrAsker(t *testing.T, ctx context.Context, url string, rr *roundRobin) (*mcp.ClientSession, *atomic.Int64) {
	t.Helper()
	asked := new(atomic.Int64)
	c := mcp.NewClient(&mcp.Implementation{Name: "asker", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			if req.Params.Message != "Proceed?" {
				return nil, fmt.Errorf("asked %q", req.Params.Message)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes"}}, nil
		},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rr}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, asked
}

// checkInputRounds calls the upstream's tool, prompt and resource (their
// names after prefix) through cs, each asking for input once: each is
// answered, the client was asked three times, the tool's effect counted
// once, the upstream got its own state back each time, and the call and
// its retry went one to each of the replicas a and b.
func checkInputRounds(t *testing.T, ctx context.Context, cs *mcp.ClientSession, prefix string, asked *atomic.Int64, up *mrtrUpstream, rr *roundRobin, a, b string) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: prefix + "confirm", Arguments: map[string]any{"n": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; res.IsError || got != `action=accept answer=yes args={"n":1}` {
		t.Fatalf("tools/call: %+v %s", res, got)
	}
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: prefix + "greet"})
	if err != nil {
		t.Fatal(err)
	}
	if got := pr.Messages[0].Content.(*mcp.TextContent).Text; got != "action=accept answer=yes" {
		t.Fatalf("prompts/get: %s", got)
	}
	rd, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://secret"})
	if err != nil {
		t.Fatal(err)
	}
	if got := rd.Contents[0].Text; got != "action=accept answer=yes" {
		t.Fatalf("resources/read: %s", got)
	}
	if n := asked.Load(); n != 3 {
		t.Fatalf("the client was asked %d times, want 3", n)
	}
	if n := up.effects.Load(); n != 1 {
		t.Fatalf("the tool's effect was counted %d times, want once", n)
	}
	if got := up.seen(); len(got) != 3 || got[0] != "state-1" || got[1] != "state-1" || got[2] != "state-1" {
		t.Fatalf("the upstream got back the states %q, want its own three times", got)
	}
	// Each request and its retry went to different replicas.
	rr.mu.Lock()
	for _, u := range []string{a, b} {
		if n := strings.Count(strings.Join(rr.hits[u], ","), "tools/call"); n != 1 {
			t.Errorf("replica %s served %d tools/call, want 1 (%v)", u, n, rr.hits[u])
		}
	}
	rr.mu.Unlock()
}
