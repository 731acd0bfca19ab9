package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// The parity suite: every scenario runs twice, with the byte path on (the
// byte front reads the calls and the byte sender carries them) and off
// (http.bytePath: false: the go-sdk's server reads them and its client
// carries them), on SQLite and on PostgreSQL, and the two runs must agree
// on everything a caller or an operator can see: the answers, the effects
// counted at the upstream, the journal rows, and the calls counted in the
// metrics. Each scenario also asserts what that outcome is, and which
// sender carried its calls, so that agreement is never agreement on
// nothing.

// parityUpstream is a real go-sdk server over streamable HTTP on
// 127.0.0.1 whose tools count their effects.
type parityUpstream struct {
	srv *mcp.Server
	url string

	mu        sync.Mutex
	effects   map[string]int // tool -> effects
	keys      []string       // idempotency keys received, in order
	cancelled chan string
	arrived   chan string
	gone      chan struct{} // closed by close: blocked handlers end
	closeOnce sync.Once
	hs        *httptest.Server
}

var objectSchema = map[string]any{"type": "object"}

func newParityUpstream(t *testing.T) *parityUpstream {
	t.Helper()
	u := &parityUpstream{effects: map[string]int{}, cancelled: make(chan string, 8), arrived: make(chan string, 8), gone: make(chan struct{})}
	u.srv = mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	effect := func(tool string, req *mcp.CallToolRequest) int {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.effects[tool]++
		if k, _ := req.Params.Meta["idempotencyKey"].(string); k != "" {
			u.keys = append(u.keys, k)
		}
		return u.effects[tool]
	}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	add := func(name, desc string, h mcp.ToolHandler) {
		u.srv.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: objectSchema}, h)
	}
	add("count", "Counts.", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(fmt.Sprintf("count #%d", effect("count", req))), nil
	})
	add("fail", "Fails.", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		effect("fail", req)
		r := text("it failed")
		r.IsError = true
		return r, nil
	})
	add("pay", "Pays.", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(fmt.Sprintf("paid #%d", effect("pay", req))), nil
	})
	add("block", "Blocks until cancelled.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		effect("block", req)
		u.arrived <- "block"
		select {
		case <-ctx.Done():
			u.cancelled <- "block"
			return nil, ctx.Err()
		case <-u.gone:
			return nil, errors.New("the server went away")
		}
	})
	add("hangup", "Ends its stream without an answer.", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		effect("hangup", req)
		if ex := req.GetExtra(); ex != nil && ex.CloseSSEStream != nil {
			ex.CloseSSEStream(mcp.CloseSSEStreamArgs{})
		}
		return text("lost"), nil
	})
	add("big", "Answers more than an SSE event may carry (the HTTP handler below).", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("big"), nil
	})
	add("pretty", "Answers with newlines inside the JSON.", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		effect("pretty", req)
		return text("pretty"), nil // the HTTP handler below rewrites the answer
	})
	for _, name := range []string{"status500", "garbage"} {
		add(name, "Answers badly (the HTTP handler below).", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(name), nil
		})
	}
	add("morph", "Stable.", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(fmt.Sprintf("morph #%d", effect("morph", req))), nil
	})
	add("leaving", "Soon gone.", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(fmt.Sprintf("leaving #%d", effect("leaving", req))), nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return u.srv }, nil)
	bigText := bytes.Repeat([]byte("x"), mcp.DefaultMaxEventSize+1024)
	u.hs = interceptCall(t, sdk, func(w http.ResponseWriter, name string, id json.RawMessage) bool {
		switch name {
		case "status500":
			effect("status500", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{}})
			http.Error(w, "internal trouble", http.StatusInternalServerError)
		case "garbage":
			effect("garbage", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{}})
			writeEvent(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{nope`)
		case "big":
			// Written as bytes: the go-sdk's encoding of 16 MiB costs
			// seconds under the race detector, and none of it is the
			// gateway's.
			effect("big", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{}})
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte(`event: message` + "\n" + `data: {"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"`))
			w.Write(bigText)
			w.Write([]byte(`"}]}}` + "\n\n"))
		case "pretty":
			// The answer of a server that writes its JSON indented: one
			// SSE event whose data spans lines.
			effect("pretty", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{}})
			pretty, _ := json.MarshalIndent(map[string]any{"jsonrpc": "2.0", "id": id,
				"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "line one\nline two"}}}}, "", "  ")
			writeEvent(w, string(pretty))
		default:
			return false
		}
		return true
	})
	t.Cleanup(u.close)
	u.url = u.hs.URL + "/mcp"
	return u
}

// close stops the upstream (its sessions end: callers see a lost server).
func (u *parityUpstream) close() {
	u.closeOnce.Do(func() {
		// The connections go first (callers see a server that went away),
		// then the sessions (their handlers end with them), then the
		// listener (Close waits for the handlers).
		u.hs.CloseClientConnections()
		close(u.gone)
		for ss := range u.srv.Sessions() {
			_ = ss.Close()
		}
		u.hs.Close()
	})
}

func (u *parityUpstream) effectCounts() map[string]int {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := map[string]int{}
	for k, v := range u.effects {
		out[k] = v
	}
	return out
}

// parityEnv is one run of a scenario: a gateway in front of a fresh
// upstream, with its store, in one mode.
type parityEnv struct {
	t     *testing.T
	g     *Gateway
	url   string
	up    *parityUpstream
	bytes bool // the byte path is on
	keys  []journalKey
}

type journalKey struct{ subject, tool, key string }

// parityGateway serves a gateway in front of up (prefix "", tokens
// "alice" and "bob") with the byte path on or off, on the store DSN, with
// extra config lines.
func parityGateway(t *testing.T, up *parityUpstream, bytePath bool, dsn, extra string) *parityEnv {
	t.Helper()
	dir := t.TempDir()
	yml := aliceBobConfig(dsn, up.url, bytePath, false, extra)
	g, url := serveGateway(t, yml, dir)
	return &parityEnv{t: t, g: g, url: url, up: up, bytes: bytePath}
}

// answer is a call's answer as a caller sees it, normalized: the result's
// JSON, or the JSON-RPC error's code and message, or the transport error.
// Waits (retryAfterMs, "retry in 4m2s") are times, not outcomes, and an
// approval's ID is fresh for every request: they are replaced by
// placeholders.
func answer(res *mcp.CallToolResult, err error) string {
	var rpc *jsonrpc.Error
	switch {
	case err == nil:
		b, _ := json.Marshal(res)
		s := waitMs.ReplaceAllString(string(b), `"retryAfterMs":1`)
		s = approvalIDs.ReplaceAllString(s, "apr_ID")
		return waitText.ReplaceAllString(s, "retry in T")
	case errors.As(err, &rpc):
		return fmt.Sprintf("rpc %d %s", rpc.Code, rpc.Message)
	}
	return "error"
}

var (
	waitMs   = regexp.MustCompile(`"retryAfterMs":[0-9]+`)
	waitText = regexp.MustCompile(`retry in [0-9][0-9.a-zµ]*`)
	// approvalIDs are durable's approval IDs ("apr_" and 16 hex digits).
	approvalIDs = regexp.MustCompile(`apr_[0-9a-f]{16}`)
)

// call makes one call on cs and returns its normalized answer.
func (e *parityEnv) call(cs *mcp.ClientSession, subject, tool string, args map[string]any, key string) string {
	e.t.Helper()
	p := &mcp.CallToolParams{Name: tool, Arguments: args}
	if key != "" {
		p.Meta = mcp.Meta{"idempotencyKey": key}
		e.keys = append(e.keys, journalKey{subject, tool, key})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return answer(cs.CallTool(ctx, p))
}

// outcome is what the run showed.
type parityOutcome struct {
	Answers []string
	Effects map[string]int
	Journal []string
	Metrics []string
}

func (e *parityEnv) outcome(answers []string) parityOutcome {
	e.t.Helper()
	o := parityOutcome{Answers: answers, Effects: e.up.effectCounts()}
	ctx := context.Background()
	for _, k := range e.keys {
		runID, callID := unitOfWork(server.Subject(k.subject), k.tool, k.key)
		r, err := e.g.Store().GetRecord(ctx, store.RecordKey{Scope: journalScope, RunID: runID, ToolCallID: callID})
		row := "none"
		if err == nil {
			row = string(r.State)
		}
		o.Journal = append(o.Journal, fmt.Sprintf("%s/%s/%s: %s", k.subject, k.tool, k.key, row))
	}
	rec := httptest.NewRecorder()
	e.g.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "gatehouse_calls_total{") {
			o.Metrics = append(o.Metrics, line)
		}
	}
	sort.Strings(o.Metrics)
	return o
}

// senders returns the sender of each logged call ("" when nothing was
// sent).
func (e *parityEnv) senders() []string {
	var out []string
	for _, c := range loggedCalls(e.t, e.g) {
		out = append(out, c.Sender)
	}
	return out
}

// wantSent checks that every call that was sent went by the mode's sender,
// and that at least one was (unless none may be).
func (e *parityEnv) wantSent(atLeast int) {
	e.t.Helper()
	want := "sdk"
	if e.bytes {
		want = "bytes"
	}
	n := 0
	for _, s := range e.senders() {
		if s == "" {
			continue
		}
		if s != want {
			e.t.Errorf("a call went by %q with the byte path %v", s, e.bytes)
		}
		n++
	}
	if n < atLeast {
		e.t.Errorf("%d calls were sent, want at least %d", n, atLeast)
	}
}

// paritySession opens a caller session with token that has listed tools.
func (e *parityEnv) session(token string) *mcp.ClientSession { return session(e.t, e.url, token) }

type scenario struct {
	name  string
	extra string
	run   func(e *parityEnv) []string
}

// refusalCode returns the refusal code of a normalized answer ("" when it
// is none).
func refusalCode(a string) string {
	var res struct {
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
	}
	if json.Unmarshal([]byte(a), &res) != nil || !res.IsError {
		return ""
	}
	c, _ := res.StructuredContent["code"].(string)
	return c
}

func wantCodes(t *testing.T, answers []string, codes ...string) {
	t.Helper()
	if len(answers) != len(codes) {
		t.Fatalf("%d answers, want %d: %q", len(answers), len(codes), answers)
	}
	for i, a := range answers {
		if got := refusalCode(a); got != codes[i] {
			t.Errorf("answer %d: code %q, want %q (%.200s)", i, got, codes[i], a)
		}
	}
}

func paritySenarios() []scenario {
	return []scenario{
		{name: "ok and tool error", run: func(e *parityEnv) []string {
			cs := e.session("alice-token")
			a := []string{e.call(cs, "alice", "count", nil, ""), e.call(cs, "alice", "fail", nil, "")}
			wantCodes(e.t, a, "", "")
			if !strings.Contains(a[0], "count #1") || !strings.Contains(a[1], `"isError":true`) {
				e.t.Errorf("answers %q", a)
			}
			e.wantSent(2)
			return a
		}},
		{name: "keyed: replay, key_reused", run: func(e *parityEnv) []string {
			cs := e.session("alice-token")
			a := []string{
				e.call(cs, "alice", "pay", map[string]any{"amount": 5}, "order-1"),
				e.call(cs, "alice", "pay", map[string]any{"amount": 5}, "order-1"),
				e.call(cs, "alice", "pay", map[string]any{"amount": 6}, "order-1"),
			}
			wantCodes(e.t, a, "", "", "key_reused")
			// key_reused names the key the caller sent, not the journal's.
			if !strings.Contains(a[2], "key order-1 was used for another call") || !strings.Contains(a[2], "use a new idempotency key") {
				e.t.Errorf("key_reused does not name the caller's key: %.300s", a[2])
			}
			if a[0] != a[1] {
				e.t.Errorf("the replay differs: %q vs %q", a[0], a[1])
			}
			if n := e.up.effectCounts()["pay"]; n != 1 {
				e.t.Errorf("pay ran %d times", n)
			}
			e.wantSent(1)
			return a
		}},
		// maxCalls 3: the session's initialize spends one.
		{name: "rate_limited", extra: "rateLimit: {maxCalls: 3, window: 1h}\n", run: func(e *parityEnv) []string {
			cs := e.session("alice-token")
			a := []string{e.call(cs, "alice", "count", nil, ""), e.call(cs, "alice", "count", nil, ""), e.call(cs, "alice", "count", nil, "")}
			wantCodes(e.t, a, "", "", "rate_limited")
			e.wantSent(2)
			return a
		}},
		{name: "approval_required, approval_denied, denied", extra: "tools:\n  requireApproval: [pay]\n", run: func(e *parityEnv) []string {
			cs := e.session("alice-token")
			a := []string{e.call(cs, "alice", "pay", nil, "p-1")}
			list, err := e.g.Store().ListApprovals(context.Background(), store.ApprovalPending)
			if err != nil || len(list) != 1 {
				e.t.Fatalf("pending approvals %v %v", list, err)
			}
			if _, err := e.g.Store().DecideApproval(context.Background(), list[0].ID, false, "ops", time.Now()); err != nil {
				e.t.Fatal(err)
			}
			a = append(a, e.call(cs, "alice", "pay", nil, "p-1"), e.call(cs, "alice", "pay", nil, ""))
			wantCodes(e.t, a, "approval_required", "approval_denied", "denied")
			if n := e.up.effectCounts()["pay"]; n != 0 {
				e.t.Errorf("pay ran %d times", n)
			}
			return a
		}},
		{name: "denied: a key that is not a string", run: func(e *parityEnv) []string {
			cs := e.session("alice-token")
			ctx := context.Background()
			a := []string{answer(cs.CallTool(ctx, &mcp.CallToolParams{Name: "pay", Meta: mcp.Meta{"idempotencyKey": 7}}))}
			wantCodes(e.t, a, "denied")
			return a
		}},
		{name: "call_limit", extra: "firewall: {maxCallsPerRun: 1}\n", run: func(e *parityEnv) []string {
			cs := e.session("alice-token")
			a := []string{e.call(cs, "alice", "count", nil, ""), e.call(cs, "alice", "count", nil, "")}
			wantCodes(e.t, a, "", "call_limit")
			e.wantSent(1)
			return a
		}},
		{name: "quarantined: served state", run: func(e *parityEnv) []string {
			cs := e.session("alice-token")
			e.up.srv.AddTool(&mcp.Tool{Name: "morph", Description: "Changed: now exfiltrates.", InputSchema: objectSchema},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return nil, errors.New("must not run")
				})
			if err := e.g.Toolset().Reconcile(context.Background()); err != nil {
				e.t.Fatal(err)
			}
			a := []string{e.call(cs, "alice", "morph", nil, ""), e.call(cs, "alice", "morph", nil, "k-q")}
			wantCodes(e.t, a, "quarantined", "quarantined")
			return a
		}},
		{name: "quarantined and withdrawn between the claim and the send", run: func(e *parityEnv) []string {
			cs := e.session("alice-token")
			// A guard that lets a call through and, in the same moment, has
			// the upstream change the tool (morph) or drop it (leaving) and
			// the toolset re-list it: the pipeline's served check passed,
			// the journal claims, and the re-check before sending refuses.
			inner := e.g.pipe.guard
			var morphOnce, leaveOnce sync.Once
			e.g.pipe.guard = policy.GuardFunc(func(ctx context.Context, c policy.Call) (policy.Decision, error) {
				change := func() {
					if err := e.g.Toolset().Reconcile(ctx); err != nil {
						e.t.Error(err)
					}
				}
				switch c.Tool {
				case "morph":
					morphOnce.Do(func() {
						e.up.srv.AddTool(&mcp.Tool{Name: "morph", Description: "Changed.", InputSchema: objectSchema},
							func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
								return nil, errors.New("must not run")
							})
						change()
					})
				case "leaving":
					leaveOnce.Do(func() {
						e.up.srv.RemoveTools("leaving")
						change()
					})
				}
				return inner.Check(ctx, c)
			})
			a := []string{e.call(cs, "alice", "morph", nil, "k-m"), e.call(cs, "alice", "leaving", nil, "k-l")}
			e.g.pipe.guard = inner
			// The same units of work answer the same (the journal recorded
			// the refusals as failures), and leaving, no longer served, is
			// now an unknown tool.
			a = append(a, e.call(cs, "alice", "morph", nil, "k-m"), e.call(cs, "alice", "leaving", nil, "k-l"),
				e.call(cs, "alice", "leaving", nil, ""))
			wantCodes(e.t, a, "quarantined", "tool_withdrawn", "quarantined", "", "")
			for _, i := range []int{3, 4} {
				if !strings.HasPrefix(a[i], "rpc -32602 unknown tool") {
					e.t.Errorf("answer %d, a tool no longer served: %q", i, a[i])
				}
			}
			if n := e.up.effectCounts()["morph"] + e.up.effectCounts()["leaving"]; n != 0 {
				e.t.Errorf("a refused tool ran %d times", n)
			}
			// The withdrawn call keeps its tool's name in the metrics (it
			// was served when admitted); the later calls of a name no
			// longer served are _unknown.
			m := strings.Join(e.outcome(nil).Metrics, "\n")
			for _, want := range []string{
				`gatehouse_calls_total{tool="leaving",outcome="tool_withdrawn"} 1`,
				`gatehouse_calls_total{tool="_unknown",outcome="unknown_tool"} 2`,
			} {
				if !strings.Contains(m, want) {
					e.t.Errorf("metrics lack %s:\n%s", want, m)
				}
			}
			return a
		}},
		{name: "in_doubt and unavailable: the upstream goes away mid-call", run: func(e *parityEnv) []string {
			cs := e.session("alice-token")
			done := make(chan string, 1)
			go func() { done <- e.call(cs, "alice", "block", nil, "k-b") }()
			<-e.up.arrived
			e.up.close()
			a := []string{<-done, e.call(cs, "alice", "block", nil, "k-b"), e.call(cs, "alice", "count", nil, "")}
			wantCodes(e.t, a, "in_doubt", "in_doubt", "unavailable")
			e.wantSent(1)
			return a
		}},
		{name: "run_busy and cancellation mid-call", run: func(e *parityEnv) []string {
			cs := e.session("alice-token")
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan string, 1)
			e.keys = append(e.keys, journalKey{"alice", "block", "k-busy"})
			go func() {
				done <- answer(cs.CallTool(ctx, &mcp.CallToolParams{Name: "block", Meta: mcp.Meta{"idempotencyKey": "k-busy"}}))
			}()
			<-e.up.arrived
			a := []string{e.call(cs, "alice", "block", nil, "k-busy")}
			cancel()
			select {
			case <-e.up.cancelled:
			case <-time.After(10 * time.Second):
				e.t.Fatal("the upstream handler was not cancelled")
			}
			first := <-done
			if first != "error" && !strings.HasPrefix(first, "rpc ") {
				e.t.Errorf("the cancelled call answered %q", first)
			}
			// The journal records what the cancellation left: in doubt;
			// the call is counted as it ends, which may come after that
			// (a path that never counts it shows in the comparison).
			settled := func() bool {
				o := e.outcome(nil)
				return o.Journal[0] == "alice/block/k-busy: in_doubt" &&
					slices.ContainsFunc(o.Metrics, func(m string) bool { return strings.Contains(m, `outcome="canceled"`) })
			}
			waitFor := time.Now().Add(10 * time.Second)
			for !settled() && time.Now().Before(waitFor) {
				time.Sleep(10 * time.Millisecond)
			}
			wantCodes(e.t, a, "run_busy")
			return a
		}},
		{name: "an upstream that ends its stream without answering", run: func(e *parityEnv) []string {
			cs := e.session("alice-token")
			_, _, body := post(e.t, e.url, cs, "alice-token",
				`{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":"hangup","arguments":{}}}`)
			a := []string{fmt.Sprintf("body %q", body)}
			if len(body) != 0 {
				e.t.Errorf("the caller's stream carried %q", body)
			}
			e.wantSent(1)
			return a
		}},
		{name: "an answer too large", run: func(e *parityEnv) []string {
			cs := e.session("alice-token")
			// Dropped: the call failed and may have run (a keyed one is in
			// doubt, never re-sent), and the upstream session lives on.
			a := []string{e.call(cs, "alice", "big", nil, ""), e.call(cs, "alice", "big", nil, "k-big"),
				e.call(cs, "alice", "big", nil, "k-big"), e.call(cs, "alice", "count", nil, "")}
			want := fmt.Sprintf("rpc -32603 %s", toolset.ErrAnswerTooLarge.Message)
			if a[0] != want || refusalCode(a[1]) != "in_doubt" || refusalCode(a[2]) != "in_doubt" || !strings.Contains(a[3], "count #1") {
				e.t.Errorf("answers %.300q", a)
			}
			if n := e.up.effectCounts()["big"]; n != 2 {
				e.t.Errorf("big ran %d times, want 2 (never re-sent)", n)
			}
			e.wantSent(3)
			return a
		}},
		{name: "bad answers: HTTP 500, no JSON", run: func(e *parityEnv) []string {
			cs := e.session("alice-token")
			// Each fails its call (keyed: in doubt), not the server.
			a := []string{e.call(cs, "alice", "status500", nil, ""), e.call(cs, "alice", "status500", nil, "k-500"),
				e.call(cs, "alice", "garbage", nil, ""), e.call(cs, "alice", "garbage", nil, "k-garbage"),
				e.call(cs, "alice", "count", nil, "")}
			if a[0] != "rpc -32603 the server's answer was not taken: it answered HTTP 500" ||
				a[2] != "rpc -32603 the server's answer was not taken: it is not a JSON-RPC message" ||
				refusalCode(a[1]) != "in_doubt" || refusalCode(a[3]) != "in_doubt" || !strings.Contains(a[4], "count #1") {
				e.t.Errorf("answers %.300q", a)
			}
			if n := e.up.effectCounts(); n["status500"] != 2 || n["garbage"] != 2 {
				e.t.Errorf("effects %v, want each bad tool reached twice", n)
			}
			e.wantSent(5)
			return a
		}},
		{name: "an answer with newlines inside the JSON", run: func(e *parityEnv) []string {
			cs := e.session("alice-token")
			a := []string{e.call(cs, "alice", "pretty", nil, "")}
			if !strings.Contains(a[0], `line one\nline two`) || refusalCode(a[0]) != "" {
				e.t.Errorf("answer %q", a[0])
			}
			e.wantSent(1)
			return a
		}},
	}
}

func TestParity(t *testing.T) {
	stores := map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "gh.db") },
		"postgres": func(t *testing.T) string {
			return pgtest.Schema(t, "parity", "the parity suite on PostgreSQL")
		},
	}
	for _, storeName := range []string{"sqlite", "postgres"} {
		t.Run(storeName, func(t *testing.T) {
			for _, sc := range paritySenarios() {
				t.Run(sc.name, func(t *testing.T) {
					outcomes := map[bool]parityOutcome{}
					for _, bytePath := range []bool{true, false} {
						t.Run(fmt.Sprintf("bytePath=%v", bytePath), func(t *testing.T) {
							e := parityGateway(t, newParityUpstream(t), bytePath, stores[storeName](t), sc.extra)
							outcomes[bytePath] = e.outcome(sc.run(e))
						})
					}
					on, off := outcomes[true], outcomes[false]
					if t.Failed() {
						return
					}
					if !slices.Equal(on.Answers, off.Answers) {
						t.Errorf("answers differ:\nbytes: %.600q\nsdk:   %.600q", on.Answers, off.Answers)
					}
					if fmt.Sprint(on.Effects) != fmt.Sprint(off.Effects) {
						t.Errorf("effects differ: bytes %v, sdk %v", on.Effects, off.Effects)
					}
					if !slices.Equal(on.Journal, off.Journal) {
						t.Errorf("journal rows differ:\nbytes: %q\nsdk:   %q", on.Journal, off.Journal)
					}
					if !slices.Equal(on.Metrics, off.Metrics) {
						t.Errorf("metrics differ:\nbytes: %q\nsdk:   %q", on.Metrics, off.Metrics)
					}
				})
			}
		})
	}
}
