package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/store"
)

// hostileUpstream is a real go-sdk server over streamable HTTP on
// 127.0.0.1 (initialize, tools/list, the tool "count") in front of which
// an HTTP handler answers the calls of the other tools badly: an answer
// past the 16 MiB bound, a body that is no JSON, an HTTP 500, or a
// pretty-printed (multi-line) result. It counts every call it receives.
type hostileUpstream struct {
	hs *httptest.Server
	mu sync.Mutex
	n  map[string]int // tool -> calls received
}

// hostileTools are the tools whose answers are bad, and what the caller of
// each is told.
var hostileTools = []string{"huge", "garbage", "status500", "wronglength"}

func newHostileUpstream(t *testing.T) *hostileUpstream {
	t.Helper()
	u := &hostileUpstream{n: map[string]int{}}
	s := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1"}, nil)
	for _, name := range append([]string{"count", "pretty"}, hostileTools...) {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				u.mu.Lock()
				u.n[name]++
				k := u.n[name]
				u.mu.Unlock()
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s #%d", name, k)}}}, nil
			})
	}
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	u.hs = interceptCall(t, sdk, func(w http.ResponseWriter, name string, id json.RawMessage) bool {
		if name == "count" {
			return false
		}
		u.mu.Lock()
		u.n[name]++
		u.mu.Unlock()
		switch name {
		case "huge": // one SSE event past 16 MiB
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			fmt.Fprintf(w, `event: message`+"\n"+`data: {"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, id)
			chunk := bytes.Repeat([]byte("x"), 1<<20)
			for range 17 {
				_, _ = w.Write(chunk)
			}
			fmt.Fprint(w, `"}]}}`+"\n\n")
		case "garbage": // an SSE event whose data is no JSON
			writeEvent(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{nope`)
		case "wronglength": // a JSON body that is no JSON-RPC message
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			fmt.Fprint(w, `[1,2`)
		case "status500":
			http.Error(w, "internal trouble", http.StatusInternalServerError)
		case "pretty": // a result written indented: one event, many data lines
			pretty, _ := json.MarshalIndent(map[string]any{"jsonrpc": "2.0", "id": id,
				"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "line one\nline two"}},
					"structuredContent": map[string]any{"rows": []any{1, 2, map[string]any{"k": "v"}}}}}, "", "  ")
			writeEvent(w, string(pretty))
		}
		return true
	})
	t.Cleanup(func() {
		u.hs.CloseClientConnections()
		for ss := range s.Sessions() {
			_ = ss.Close()
		}
	})
	return u
}

func (u *hostileUpstream) calls(tool string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.n[tool]
}

// answerStores are the stores the answer tests run on: a real SQLite file
// and, when GATEHOUSE_TEST_POSTGRES is set, a fresh PostgreSQL schema.
var answerStores = []struct {
	name string
	dsn  func(t *testing.T) string
}{
	{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "gh.db") }},
	{"postgres", func(t *testing.T) string { return pgtest.Schema(t, "answers", "the answer tests on PostgreSQL") }},
}

// aliceBobConfig is the config of a gateway on 127.0.0.1 in front of one
// streamable-HTTP server "up" at url (prefix ""), with the static tokens
// of alice and bob, on the store dsn, the byte path and JSON answers on or
// off, and extra config lines at the end.
func aliceBobConfig(dsn, url string, bytePath, jsonResponse bool, extra string) string {
	return fmt.Sprintf(`listen: 127.0.0.1:0
store: %q
auth:
  tokens:
    - {sha256: %s, subject: alice}
    - {sha256: %s, subject: bob}
http:
  bytePath: %v
  jsonResponse: %v
servers:
  up:
    type: streamable-http
    url: %s
    prefix: ""
%s`, dsn, hashOf("alice-token"), hashOf("bob-token"), bytePath, jsonResponse, url, extra)
}

// hostileGateway serves a gateway in front of u's URL with the byte path
// on or off.
func hostileGateway(t *testing.T, url string, bytePath bool, dsn string, jsonResponse ...bool) (*Gateway, string) {
	t.Helper()
	dir := t.TempDir()
	yml := aliceBobConfig(dsn, url, bytePath, len(jsonResponse) > 0 && jsonResponse[0], "")
	return serveGateway(t, yml, dir)
}

// journalState reads back the journal row of (subject, tool, key).
func journalState(t *testing.T, g *Gateway, subject, tool, key string) string {
	t.Helper()
	runID, callID := unitOfWork(server.Subject(subject), tool, key)
	r, err := g.Store().GetRecord(context.Background(), store.RecordKey{Scope: journalScope, RunID: runID, ToolCallID: callID})
	if err != nil {
		return "none: " + err.Error()
	}
	return string(r.State)
}

// TestBadAnswerFailsOnlyItsCall: an upstream that answers one call badly
// (past the bound, no JSON, no JSON-RPC, HTTP 500) fails that call, with a
// clear error, and nothing else: the next call from another caller is
// served (not unavailable), the bad caller's own session keeps working, a
// keyed call whose answer was bad is in_doubt in the journal (it may have
// run), and the bad call was sent once. Both senders, both stores.
func TestBadAnswerFailsOnlyItsCall(t *testing.T) {
	for _, st := range answerStores {
		t.Run(st.name, func(t *testing.T) {
			for _, bytePath := range []bool{true, false} {
				t.Run(fmt.Sprintf("bytePath=%v", bytePath), func(t *testing.T) {
					up := newHostileUpstream(t)
					g, url := hostileGateway(t, up.hs.URL+"/mcp", bytePath, st.dsn(t))
					alice, bob := session(t, url, "alice-token"), session(t, url, "bob-token")
					call := func(cs *mcp.ClientSession, tool, key string) string {
						p := &mcp.CallToolParams{Name: tool}
						if key != "" {
							p.Meta = mcp.Meta{"idempotencyKey": key}
						}
						ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
						defer cancel()
						return answer(cs.CallTool(ctx, p))
					}
					served := 0
					for _, tool := range hostileTools {
						a := call(alice, tool, "")
						if !strings.HasPrefix(a, "rpc -32603 ") || !strings.Contains(a, "answer") {
							t.Errorf("%s: the caller got %.300q, want a JSON-RPC error that names the bad answer", tool, a)
						}
						served++
						if b := call(bob, "count", ""); b != fmt.Sprintf(`{"content":[{"type":"text","text":"count #%d"}]}`, served) {
							t.Errorf("after %s: another caller got %.300q, want its call served", tool, b)
						}
						k := call(alice, tool, "k-"+tool)
						if refusalCode(k) != "in_doubt" {
							t.Errorf("%s keyed: the caller got %.300q, want in_doubt", tool, k)
						}
						if s := journalState(t, g, "alice", tool, "k-"+tool); s != string(store.StateInDoubt) {
							t.Errorf("%s keyed: the journal row is %q, want in_doubt", tool, s)
						}
						if again := call(alice, tool, "k-"+tool); refusalCode(again) != "in_doubt" {
							t.Errorf("%s keyed, again: %.300q, want in_doubt (never re-sent)", tool, again)
						}
						if n := up.calls(tool); n != 2 {
							t.Errorf("%s reached the upstream %d times, want 2 (the keyed call never re-sent)", tool, n)
						}
						served++
						if a := call(alice, "count", ""); a != fmt.Sprintf(`{"content":[{"type":"text","text":"count #%d"}]}`, served) {
							t.Errorf("after %s: the same caller's next call got %.300q", tool, a)
						}
					}
					if down := g.pipe.health.Snapshot(); len(down) != 0 {
						t.Errorf("servers in backoff after bad answers: %v", down)
					}
				})
			}
		})
	}
}

// TestDeadUpstreamStillBacksOff: a failure of the connection itself (the
// upstream's listener closed) still puts the server in its restart
// backoff, through both senders: the next call is unavailable without
// being sent.
func TestDeadUpstreamStillBacksOff(t *testing.T) {
	for _, bytePath := range []bool{true, false} {
		t.Run(fmt.Sprintf("bytePath=%v", bytePath), func(t *testing.T) {
			up := newHostileUpstream(t)
			g, url := hostileGateway(t, up.hs.URL+"/mcp", bytePath, "sqlite:"+filepath.Join(t.TempDir(), "gh.db"))
			alice := session(t, url, "alice-token")
			ctx := context.Background()
			if a := answer(alice.CallTool(ctx, &mcp.CallToolParams{Name: "count"})); !strings.Contains(a, "count #1") {
				t.Fatalf("first call: %q", a)
			}
			up.hs.CloseClientConnections()
			up.hs.Close()
			first := answer(alice.CallTool(ctx, &mcp.CallToolParams{Name: "count"}))
			second := answer(alice.CallTool(ctx, &mcp.CallToolParams{Name: "count"}))
			if refusalCode(first) != "unavailable" || refusalCode(second) != "unavailable" {
				t.Errorf("calls to a dead upstream got %.200q and %.200q, want unavailable", first, second)
			}
			if _, down := g.pipe.health.Snapshot()["up"]; !down {
				t.Errorf("the dead server is not in backoff: %v", g.pipe.health.Snapshot())
			}
		})
	}
}

// TestPrettyAnswerKeepsItsFraming: an upstream result written over several
// lines (pretty-printed JSON) reaches a real go-sdk client whole, as one
// well-formed message, and the client's session keeps working.
func TestPrettyAnswerKeepsItsFraming(t *testing.T) {
	for _, bytePath := range []bool{true, false} {
		for _, jsonResponse := range []bool{false, true} {
			t.Run(fmt.Sprintf("bytePath=%v,jsonResponse=%v", bytePath, jsonResponse), func(t *testing.T) {
				up := newHostileUpstream(t)
				g, url := hostileGateway(t, up.hs.URL+"/mcp", bytePath, "sqlite:"+filepath.Join(t.TempDir(), "gh.db"), jsonResponse)
				cs := session(t, url, "alice-token")
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				for i := range 2 {
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pretty"})
					if err != nil {
						t.Fatalf("call %d: %v", i, err)
					}
					b, _ := json.Marshal(res)
					want := `{"content":[{"type":"text","text":"line one\nline two"}],"structuredContent":{"rows":[1,2,{"k":"v"}]}}`
					if string(b) != want {
						t.Errorf("call %d: the caller got %s, want %s", i, b, want)
					}
					if a := answer(cs.CallTool(ctx, &mcp.CallToolParams{Name: "count"})); a != fmt.Sprintf(`{"content":[{"type":"text","text":"count #%d"}]}`, i+1) {
						t.Errorf("the session's next call got %.300q", a)
					}
				}
				if bytePath {
					for _, c := range loggedCalls(t, g) {
						if c.Sender != "bytes" || c.Front != "bytes" {
							t.Errorf("a call went by front %q, sender %q: the byte path was not tested", c.Front, c.Sender)
						}
					}
				}
			})
		}
	}
}

// TestUndeliveredRequestIsConnectionLoss: a go-sdk client whose server
// went away after the session began (no standalone stream to notice it
// first) gets the go-sdk's "rejected by transport" JSON-RPC error wrapping
// the dial error. The pipeline must take that for a lost connection (an
// `unavailable` refusal and backoff), not pass -32005 to the caller as if
// the server had answered it (the flake of TestDeadUpstreamStillBacksOff).
func TestUndeliveredRequestIsConnectionLoss(t *testing.T) {
	up := newHostileUpstream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: up.hs.URL + "/mcp", DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "count"}); err != nil {
		t.Fatalf("first call: %v", err)
	}
	up.hs.CloseClientConnections()
	up.hs.Close()
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "count"})
	if err == nil {
		t.Fatal("a call to a closed server succeeded")
	}
	if !connectionLost(err) {
		t.Errorf("connectionLost(%v) = false, want true", err)
	}
	if connectionLost(&jsonrpc.Error{Code: -32005, Message: "rejected by transport"}) {
		t.Error("a bare JSON-RPC error (an answer of the server's) counts as connection loss")
	}
	// However the HTTP client says it failed (a dial error, or net/http's
	// "server closed idle connection" when the close races the request),
	// it is a loss; a request the caller abandoned is not.
	for _, tc := range []struct {
		err  error
		lost bool
	}{
		{&url.Error{Op: "Post", URL: "http://127.0.0.1:1/mcp", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}, true},
		{&url.Error{Op: "Post", URL: "http://127.0.0.1:1/mcp", Err: errors.New("http: server closed idle connection")}, true},
		{&url.Error{Op: "Post", URL: "http://127.0.0.1:1/mcp", Err: context.Canceled}, false},
		{&url.Error{Op: "Post", URL: "http://127.0.0.1:1/mcp", Err: context.DeadlineExceeded}, false},
	} {
		if got := connectionLost(fmt.Errorf("sending: %w", tc.err)); got != tc.lost {
			t.Errorf("connectionLost(%v) = %v, want %v", tc.err, got, tc.lost)
		}
	}
}
