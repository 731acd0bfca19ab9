package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// roundRobin is a load balancer without sticky sessions: each request
// goes to the next replica in its table (per request, not per
// connection). Replicas are taken out of the table before they stop, as a
// load balancer that watches readiness does.
type roundRobin struct {
	srv  *httptest.Server
	mu   sync.Mutex
	live []*gw
	next int
	// opener is the replica that answered the last request without a
	// session ID (an initialize).
	opener *gw
	// notFound counts 404 answers to requests on a session.
	notFound atomic.Int64
	// posts are the POSTs forwarded, in order, with the replica each
	// went to.
	posts []seenPost
}

// seenPost is a POST the proxy forwarded: its body and its replica.
type seenPost struct {
	g    *gw
	body string
}

func newRoundRobin(t *testing.T, replicas ...*gw) *roundRobin {
	rr := &roundRobin{live: replicas}
	rr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Method == http.MethodPost && r.Body != nil {
			body, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		rr.mu.Lock()
		if len(rr.live) == 0 {
			rr.mu.Unlock()
			http.Error(w, "no replica", http.StatusBadGateway)
			return
		}
		g := rr.live[rr.next%len(rr.live)]
		rr.next++
		if r.Header.Get("Mcp-Session-Id") == "" {
			rr.opener = g
		}
		if r.Method == http.MethodPost {
			rr.posts = append(rr.posts, seenPost{g: g, body: string(body)})
		}
		rr.mu.Unlock()
		u, _ := url.Parse("http://" + g.addr)
		p := httputil.NewSingleHostReverseProxy(u)
		p.FlushInterval = -1
		sw := &statusWriter{ResponseWriter: w}
		p.ServeHTTP(sw, r)
		if sw.code >= 400 {
			t.Logf("proxy: %s %s on %s: %d", r.Method, r.Header.Get("Mcp-Session-Id"), g.addr, sw.code)
		}
		if sw.code == http.StatusNotFound && r.Header.Get("Mcp-Session-Id") != "" {
			rr.notFound.Add(1)
		}
	}))
	t.Cleanup(rr.srv.Close)
	return rr
}

func (rr *roundRobin) url() string { return rr.srv.URL + "/mcp" }

// remove takes g out of the table.
func (rr *roundRobin) remove(g *gw) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	for i, x := range rr.live {
		if x == g {
			rr.live = append(rr.live[:i:i], rr.live[i+1:]...)
			return
		}
	}
}

func (rr *roundRobin) add(g *gw) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.live = append(rr.live, g)
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// rawSession speaks the protocol over plain HTTP POSTs: what a client
// without an SDK sends.
type rawSession struct {
	t   *testing.T
	url string
	sid string
	id  int
}

func (s *rawSession) post(body string) (int, string) {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.sid != "" {
		req.Header.Set("Mcp-Session-Id", s.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		s.sid = sid
	}
	return resp.StatusCode, string(b)
}

func (s *rawSession) call(method, params string) (int, string) {
	s.id++
	return s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, s.id, method, params))
}

// TestSessionAcrossReplicaProcesses: three `gatehouse serve` processes on
// one PostgreSQL behind a proxy that picks a replica per request. A go-sdk
// client and a raw HTTP client each keep one session for tools across the
// replicas; the replica that opened the go-sdk session is SIGKILLed and
// the session goes on; then every replica is restarted in turn (a rolling
// update) under a client calling every 200 ms, which loses at most 2 calls
// of 50 and never gets 404.
func TestSessionAcrossReplicaProcesses(t *testing.T) {
	t.Parallel()
	dsn := pgStore(t)
	dir := t.TempDir()
	effects := filepath.Join(dir, "effects")
	writeConfig(t, dir, fmt.Sprintf("store: %q\nservers:\n%s", dsn, fixtureServer("fx", "-tools", "echo,count", "-effects", effects)))
	replicas := []*gw{startGateway(t, dir), startGateway(t, dir), startGateway(t, dir)}
	rr := newRoundRobin(t, replicas...)

	cs := connect(t, rr.url(), "")
	for i := range 9 {
		if r := mustCall(t, cs, "fx__count", nil, nil); r.IsError {
			t.Fatalf("call %d: %s", i, text(r))
		}
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			t.Fatalf("list %d: %v", i, err)
		}
	}
	raw := &rawSession{t: t, url: rr.url()}
	if code, body := raw.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`); code != http.StatusOK || raw.sid == "" {
		t.Fatalf("raw initialize: %d %s", code, body)
	}
	if code, _ := raw.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("raw initialized: %d", code)
	}
	for i := range 6 {
		code, body := raw.call("tools/call", `{"name":"fx__echo","arguments":{"text":"raw"}}`)
		if code != http.StatusOK || !strings.Contains(body, "raw") {
			t.Fatalf("raw call %d: %d %s", i, code, body)
		}
	}
	if n := len(lines(t, effects)); n != 9 {
		t.Fatalf("%d effects of count, want 9", n)
	}

	// The replica that opened the raw session is killed outright.
	rr.mu.Lock()
	opener := rr.opener
	rr.mu.Unlock()
	rr.remove(opener)
	if err := opener.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-opener.done
	for i := range 4 {
		if code, body := raw.call("tools/call", `{"name":"fx__echo","arguments":{"text":"after"}}`); code != http.StatusOK || !strings.Contains(body, "after") {
			t.Fatalf("raw call %d after the kill: %d %s", i, code, body)
		}
		if r := mustCall(t, cs, "fx__count", nil, nil); r.IsError {
			t.Fatalf("call %d after the kill: %s", i, text(r))
		}
	}
	replacement := startGateway(t, dir)
	rr.add(replacement)

	// A rolling restart under a client calling every 200 ms. Its client
	// keeps no standalone stream: the go-sdk's client counts each end of
	// that stream without an event as a retry without progress and gives
	// the session up after five (docs/gateway.md, "Replicas").
	roller := mcp.NewClient(&mcp.Implementation{Name: "e2e-roller", Version: "1"}, nil)
	rs, err := roller.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: rr.url(), DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var lost, answered atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for range 50 {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			r, err := rs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": "roll"}})
			cancel()
			if err != nil || r.IsError {
				if lost.Add(1) <= 3 {
					t.Logf("a call lost in the rolling restart: %v %v", err, r)
				}
				continue
			}
			answered.Add(1)
		}
	})
	rr.mu.Lock()
	current := append([]*gw(nil), rr.live...)
	rr.mu.Unlock()
	for _, g := range current {
		rr.remove(g)
		if err := g.stop(syscall.SIGTERM); err != nil {
			t.Errorf("stopping a replica: %v", err)
		}
		rr.add(startGateway(t, dir))
	}
	wg.Wait()
	close(stop)
	if lost.Load() > 2 || answered.Load()+lost.Load() != 50 {
		t.Errorf("the rolling restart: %d answered, %d lost (at most 2 of 50)", answered.Load(), lost.Load())
	}
	if n := rr.notFound.Load(); n != 0 {
		t.Errorf("%d requests on a session were answered 404", n)
	}
	if n := len(lines(t, effects)); n != 13 {
		t.Errorf("%d effects of count, want 13 (each call once)", n)
	}
}

// TestTypeScriptClientAcrossReplicas: the official TypeScript SDK client
// keeps one session across three replicas on PostgreSQL behind a proxy
// that picks a replica per request, for tools, resources, prompts,
// progress, and elicitations answered through another replica than the
// one that asked.
func TestTypeScriptClientAcrossReplicas(t *testing.T) {
	t.Parallel()
	dsn := pgStore(t)
	dir := t.TempDir()
	js := tsClientDir(t)
	plug := writeSkillsPlugin(t, dir)
	writeConfig(t, dir, fmt.Sprintf(`store: %q
plugins: [%s]
servers:
%sauth:
  tokens:
    - {sha256: %s, subject: reader, scopes: ["tool:*", "skill:handbook__incident"]}
`, dsn, plug, fixtureServer("fx", "-tools", "echo,progress,elicit"), sha("reader-token")))
	replicas := []*gw{startGateway(t, dir), startGateway(t, dir), startGateway(t, dir)}
	rr := newRoundRobin(t, replicas...)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "replicas-client.mjs")
	cmd.Dir = js
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+rr.url(), "TOKEN=reader-token", "TOOL=fx__echo",
		"BODY_URI=skill://handbook/incident/SKILL.md", "PROMPT=handbook__incident", "ROUNDS=4",
		"PROGRESS_TOOL=fx__progress", "ELICIT_TOOL=fx__elicit")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var run struct {
		SessionID string `json:"sessionId"`
		Rounds    []struct {
			Text, Elicited                    string
			Resources, Body, Prompt, Progress int
		} `json:"rounds"`
		Error string `json:"error"`
	}
	if jerr := json.Unmarshal(out, &run); jerr != nil || err != nil || run.Error != "" {
		t.Fatalf("replicas-client.mjs: %v, %v, %s\nstdout: %s\nstderr: %s", err, jerr, run.Error, out, stderr.String())
	}
	if run.SessionID == "" || len(run.Rounds) != 4 {
		t.Fatalf("the client ran %+v", run)
	}
	for i, r := range run.Rounds {
		if r.Text != fmt.Sprintf("round %d", i) || r.Resources != 2 || r.Body == 0 || r.Prompt != 1 ||
			r.Progress != 3 || r.Elicited != fmt.Sprintf("accept:re:ask %d", i) {
			t.Errorf("round %d: %+v", i, r)
		}
	}
	// Each elicitation was asked on the replica that ran its call (the
	// request's ID names it: "gh-TAG-N"); an answer that came to another
	// was handed to it.
	rr.mu.Lock()
	var asked *gw
	elsewhere, answers := 0, 0
	for _, p := range rr.posts {
		switch {
		case strings.Contains(p.body, `"fx__elicit"`):
			asked = p.g
		case strings.Contains(p.body, `"id":"gh-`) && strings.Contains(p.body, `"result"`):
			answers++
			if p.g != asked {
				elsewhere++
			}
		}
	}
	rr.mu.Unlock()
	if answers != 4 || elsewhere == 0 {
		t.Errorf("%d answers to elicitations, %d through another replica than the one that asked", answers, elsewhere)
	}
	ran := 0
	for _, g := range replicas {
		if len(g.callLogs()) > 0 {
			ran++
		}
	}
	if ran < 2 {
		t.Errorf("the calls ran on %d replica(s): the proxy did not spread the session", ran)
	}
	if n := rr.notFound.Load(); n != 0 {
		t.Errorf("%d requests answered 404", n)
	}
}
