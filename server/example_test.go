package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/store/memory"
)

// Example serves a tool over HTTP with all five questions answered: the
// verifier checks the credential, Identify names the caller, AllowTool
// decides who may call what, the tool checks the account belongs to the
// caller, and the rate limit bounds how often. A repeated call with the
// same idempotency key returns the first outcome.
func Example() {
	// 1. Is this credential real? Static tokens, stored as SHA-256.
	tokenOwners := map[string]string{hash("s3cret-alice"): "alice", hash("s3cret-bob"): "bob"}
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		user, ok := tokenOwners[hash(token)]
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: user, Expiration: time.Now().Add(time.Hour)}, nil
	}

	// 4. Is this object theirs? Only the tool knows.
	accountOwner := map[string]server.Subject{"acct-1": "alice", "acct-2": "bob"}
	charges := 0
	type chargeIn struct {
		Account string `json:"account"`
		Cents   int    `json:"cents"`
	}
	charge := server.NewTool(&mcp.Tool{Description: "Charge an account."},
		func(ctx context.Context, c server.Caller, _ *mcp.CallToolRequest, in chargeIn) (*mcp.CallToolResult, map[string]any, error) {
			if accountOwner[in.Account] != c.Subject() {
				return nil, nil, fmt.Errorf("no account %q", in.Account)
			}
			charges++
			return nil, map[string]any{"charged": in.Cents, "charge": charges}, nil
		})

	st, _ := memory.New(nil)
	defer st.Close()
	journal, _ := durable.NewJournal(st, &durable.JournalOptions{Scope: "example"})
	srv, err := server.New(server.Options{
		Tools: map[string]server.Tool{"charge": charge},
		// 2. Who is calling? Only what the transport verified.
		Identify: func(_ context.Context, info server.RequestInfo) (server.Subject, error) {
			if info.TokenInfo == nil {
				return "", errors.New("no token")
			}
			return server.Subject(info.TokenInfo.UserID), nil
		},
		// 3. May they call this tool?
		AllowTool: func(name string, s server.Subject) bool { return name == "charge" },
		// 5. Are they calling too much?
		RateLimit: &server.RateLimit{MaxCalls: 100, Window: time.Minute},
		Journal:   journal,
		WorkKey: func(req *mcp.CallToolRequest) string {
			k, _ := req.Params.Meta["idempotencyKey"].(string)
			return k
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	h, err := srv.Handler(&server.HTTPOptions{Verifier: verify})
	if err != nil {
		panic(err)
	}
	ts := httptest.NewServer(h)
	defer ts.Close()

	// A client with alice's token.
	ctx := context.Background()
	hc := &http.Client{Transport: withToken{"s3cret-alice"}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	call := func(account string, cents int, key string) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "charge",
			Arguments: map[string]any{"account": account, "cents": cents},
			Meta:      mcp.Meta{"idempotencyKey": key}})
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if sc, ok := res.StructuredContent.(map[string]any); ok && sc["code"] != nil {
			fmt.Println("refused:", sc["code"]) // a refusal of docs/reference/refusals.md
			return
		}
		fmt.Println(res.IsError, res.Content[0].(*mcp.TextContent).Text)
	}
	call("acct-1", 500, "order-1") // runs
	call("acct-1", 500, "order-1") // the first outcome, not run again
	call("acct-1", 700, "order-1") // same key, other arguments
	call("acct-2", 100, "order-2") // bob's account
	fmt.Println("charges run:", charges)
	// Output:
	// false {"charge":1,"charged":500}
	// false {"charge":1,"charged":500}
	// refused: key_reused
	// true no account "acct-2"
	// charges run: 1
}

// ExampleServer_AdmitCall serves a tool whose handler admits its own call:
// with DeferCallAdmission the middleware leaves every tools/call
// unadmitted, and AdmitCall applies identity, the rate limit and
// authorization, in the middleware's order, where the handler chooses (the
// gateway does it in its one call pipeline). With one call an hour, the
// second call is refused rate_limited.
func ExampleServer_AdmitCall() {
	ctx := context.Background()
	var srv *server.Server
	ping := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		subject, res, err := srv.AdmitCall(ctx, server.InfoOf(req, false), req.Params.Name)
		if res != nil || err != nil {
			return res, err // a rate_limited refusal, or the go-sdk's unknown-tool error
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("pong, %q", subject)}}}, nil
	}
	noon := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC) // a fixed clock keeps the output steady
	var err error
	srv, err = server.New(server.Options{
		Setup: func(s *mcp.Server, _ bool) {
			s.AddTool(&mcp.Tool{Name: "ping", Description: "Answers pong.", InputSchema: json.RawMessage(`{"type":"object"}`)}, ping)
		},
		DeferCallAdmission: true,
		RateLimit:          &server.RateLimit{MaxCalls: 1, Window: time.Hour},
		Clock:              func() time.Time { return noon },
		Logger:             slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	// A client over an in-memory transport (the caller is the anonymous
	// subject: Identify is not set, and no token was verified).
	ct, st := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		panic(err)
	}
	for range 2 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ping"})
		if err != nil {
			panic(err)
		}
		fmt.Println(res.IsError, res.Content[0].(*mcp.TextContent).Text)
		if sc, ok := res.StructuredContent.(map[string]any); ok {
			fmt.Println("code:", sc["code"], "retryable:", sc["retryable"])
		}
	}
	cs.Close()
	<-served
	// Output:
	// false pong, ""
	// true [rate_limited] too many calls; retry in 1h0m0s
	// code: rate_limited retryable: true
}

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

type withToken struct{ token string }

func (w withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+w.token)
	return http.DefaultTransport.RoundTrip(r)
}
