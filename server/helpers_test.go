package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/store/memory"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	if os.Getenv(stdioChildEnv) != "" {
		os.Exit(stdioChildMain())
	}
	goleak.VerifyTestMain(m)
}

// tokens maps real bearer tokens to the user the verifier vouches for.
var tokens = map[string]string{
	"tok-alice":   "alice",
	"tok-bob":     "bob",
	"tok-mallory": "mallory",
	"tok-nobody":  "", // a valid token Identify cannot place
}

func verifier(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	user, ok := tokens[token]
	if !ok {
		return nil, fmt.Errorf("%w: unknown token", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: user, Expiration: time.Now().Add(time.Hour)}, nil
}

var errUnplaced = errors.New("caller cannot be placed")

// identify takes the subject from the verified token only.
func identify(ctx context.Context, info RequestInfo) (Subject, error) {
	if auth.TokenInfoFromContext(ctx) != nil {
		// The session-opening request's values must not reach Identify.
		return "", errors.New("Identify's context carries a token")
	}
	if info.TokenInfo == nil || info.TokenInfo.UserID == "" {
		return "", errUnplaced
	}
	return Subject(info.TokenInfo.UserID), nil
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// effects counts how often each effect ran.
type effects struct {
	mu sync.Mutex
	n  map[string]int
}

func (e *effects) add(k string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == nil {
		e.n = map[string]int{}
	}
	e.n[k]++
}

func (e *effects) get(k string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n[k]
}

func (e *effects) total() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := 0
	for _, v := range e.n {
		t += v
	}
	return t
}

type whoamiIn struct {
	Subject string `json:"subject,omitempty"`
}

type chargeIn struct {
	Account string `json:"account"`
	Amount  int    `json:"amount"`
}

type chargeOut struct {
	Subject string `json:"subject"`
	Account string `json:"account"`
	Amount  int    `json:"amount"`
	Seq     int    `json:"seq"`
}

// testTools are the tools most tests serve: whoami reports the caller,
// charge counts an effect per (subject, account, amount), secret is hidden
// from everyone but bob by testAllow.
func testTools(eff *effects, gate <-chan struct{}) map[string]Tool {
	var mu sync.Mutex
	seq := 0
	return map[string]Tool{
		"whoami": NewTool(&mcp.Tool{Description: "who am I"}, func(ctx context.Context, c Caller, req *mcp.CallToolRequest, in whoamiIn) (*mcp.CallToolResult, map[string]string, error) {
			return nil, map[string]string{"subject": string(c.Subject()), "tool": c.Tool()}, nil
		}),
		"charge": NewTool(&mcp.Tool{Description: "charge an account"}, func(ctx context.Context, c Caller, req *mcp.CallToolRequest, in chargeIn) (*mcp.CallToolResult, chargeOut, error) {
			if gate != nil {
				select {
				case <-gate:
				case <-ctx.Done():
					return nil, chargeOut{}, ctx.Err()
				}
			}
			eff.add(fmt.Sprintf("%s/%s/%d", c.Subject(), in.Account, in.Amount))
			mu.Lock()
			seq++
			n := seq
			mu.Unlock()
			return nil, chargeOut{Subject: string(c.Subject()), Account: in.Account, Amount: in.Amount, Seq: n}, nil
		}),
		"secret": NewTool(&mcp.Tool{Description: "bob only"}, func(ctx context.Context, c Caller, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, map[string]string, error) {
			eff.add("secret/" + string(c.Subject()))
			return nil, map[string]string{"secret": "42"}, nil
		}),
	}
}

func testAllow(name string, subject Subject) bool {
	return name != "secret" || subject == "bob"
}

func memJournal(t testing.TB) (*durable.Journal, *memory.Store) {
	t.Helper()
	st, err := memory.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	j, err := durable.NewJournal(st, &durable.JournalOptions{Scope: "test", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return j, st
}

// serveHTTP serves s over real HTTP on 127.0.0.1.
func serveHTTP(t testing.TB, s *Server, opts *HTTPOptions) string {
	t.Helper()
	if opts == nil {
		opts = &HTTPOptions{}
	}
	if opts.Verifier == nil {
		opts.Verifier = verifier
	}
	h, err := s.Handler(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// bearer adds a token to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connect opens a go-sdk client session to url with token.
func connect(t testing.TB, url, token string) *mcp.ClientSession {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:             url,
		HTTPClient:           &http.Client{Transport: bearer{token: token, base: tr}},
		DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", token, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callTool(t testing.TB, cs *mcp.ClientSession, name string, args any, meta mcp.Meta) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// structured returns a result's structured content as a map.
func structured(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return m
}

func refusalCode(res *mcp.CallToolResult) string {
	if !res.IsError {
		return ""
	}
	b, _ := json.Marshal(res.StructuredContent)
	var m struct {
		Code string `json:"code"`
	}
	json.Unmarshal(b, &m)
	return m.Code
}

// rawPost sends one JSON-RPC message with token and returns status, headers
// and body bytes.
func rawPost(t testing.TB, url, token, body string, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, bytes.TrimSpace(b)
}

// logCapture records log lines.
type logCapture struct {
	mu    sync.Mutex
	lines []string
}

func (l *logCapture) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, string(p))
		return len(p), nil
	}), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func (l *logCapture) warnings() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, x := range l.lines {
		if strings.Contains(x, "level=WARN") {
			out = append(out, x)
		}
	}
	return out
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
