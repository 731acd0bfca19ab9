package upstream_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/internal/vault"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// TestOneRefresherAcrossReplicas: two Handlers ("replicas", each on its own
// pool on one PostgreSQL database, through the vault) hold the same
// expired token set of one subject, with an authorization server whose
// refresh tokens are good for one use. Both calls go through, and the
// authorization server sees exactly one refresh: the replica that did not
// get the refresh lease waited and used the token the other stored. The
// whole put / refresh / revoke cycle runs with slog capturing at debug
// level, and neither the log nor any error carries a token.
func TestOneRefresherAcrossReplicas(t *testing.T) {
	dsn := pgtest.Schema(t, "upstream_refresh", "the two-replica refresh test on PostgreSQL")
	ctx := context.Background()

	var logs bytes.Buffer
	var logMu sync.Mutex
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(prev) })

	as := startAS(t, authserver.Options{TokenLifetime: time.Hour})
	srv := startMCP(t, as.Issuer(), nil)
	k := make([]byte, vault.KeySize)
	rand.Read(k)
	ks, err := vault.NewKeys(k, nil)
	if err != nil {
		t.Fatal(err)
	}
	replica := func(name string) *vault.Vault {
		st, err := postgres.Open(ctx, dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return vault.New(st, ks, &vault.Options{Holder: name})
	}
	v1, v2 := replica("replica-1"), replica("replica-2")
	var storeErrs []error
	var errMu sync.Mutex
	opts := func(v *vault.Vault) *upstream.Options {
		o := agentOptions(v)
		o.StoreError = func(err error) { errMu.Lock(); storeErrs = append(storeErrs, err); errMu.Unlock() }
		return o
	}
	hc := guarded(t, srv.URL, nil)

	// Replica 1 authorizes; the token set goes to the vault.
	h0, err := upstream.New(hc, opts(v1))
	if err != nil {
		t.Fatal(err)
	}
	s0, err := connect(ctx, srv.URL, hc, h0)
	if err != nil {
		t.Fatal(err)
	}
	call(ctx, t, s0, "echo")
	s0.Close()
	first, err := v2.Token(ctx, "protected", "alice")
	if err != nil || first == nil || first.RefreshToken == "" {
		t.Fatalf("stored set = %v, %v; want one with a refresh token", first, err)
	}
	seen := []string{first.AccessToken, first.RefreshToken}

	// It expires.
	expired := *first
	expired.Expiry = time.Now().Add(-time.Minute)
	if err := v1.PutToken(ctx, "protected", "alice", &expired); err != nil {
		t.Fatal(err)
	}

	// Two replicas load the expired set (and its one-use refresh token).
	h1, err := upstream.New(hc, opts(v1))
	if err != nil {
		t.Fatal(err)
	}
	h2, err := upstream.New(hc, opts(v2))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []*upstream.Handler{h1, h2} {
		if ts, err := h.TokenSource(ctx); err != nil || ts == nil {
			t.Fatalf("TokenSource = %v, %v", ts, err)
		}
	}
	before, codes := as.Refreshes(), as.Codes()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, h := range []*upstream.Handler{h1, h2} {
		wg.Go(func() {
			s, err := connect(ctx, srv.URL, hc, h)
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			res, err := s.CallTool(ctx, callParams("echo"))
			if err == nil && res.IsError {
				err = errors.New("error result")
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a replica's call: %v", err)
	}
	if got := as.Refreshes() - before; got != 1 || as.Codes() != codes {
		t.Fatalf("the authorization server saw %d refreshes and %d new authorizations; want exactly 1 refresh and none", got, as.Codes()-codes)
	}
	if srv.calls.Load() != 3 {
		t.Fatalf("effects at the upstream = %d, want 3", srv.calls.Load())
	}
	now, err := v1.Token(ctx, "protected", "alice")
	if err != nil || now.RefreshToken == first.RefreshToken || now.AccessToken == first.AccessToken || !now.Expiry.After(time.Now()) {
		t.Fatalf("stored after the refresh: %v, %v; want the rotated set", now, err)
	}
	seen = append(seen, now.AccessToken, now.RefreshToken)

	// Revoked while a replica holds an expired set: the row goes, and the
	// replica does not bring it back with the refresh token it holds.
	expired = *now
	expired.Expiry = time.Now().Add(-time.Minute)
	if err := v1.PutToken(ctx, "protected", "alice", &expired); err != nil {
		t.Fatal(err)
	}
	h3, err := upstream.New(hc, opts(v1))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := h3.TokenSource(ctx)
	if err != nil || ts == nil {
		t.Fatalf("TokenSource = %v, %v", ts, err)
	}
	if err := v2.DeleteToken(ctx, "protected", "alice"); err != nil {
		t.Fatal(err)
	}
	before = as.Refreshes()
	if tok, err := ts.Token(); tok != nil || !errors.Is(err, upstream.ErrTokenGone) {
		t.Fatalf("Token after revoke = %v, %v; want ErrTokenGone", tok, err)
	} else {
		logMu.Lock()
		logs.WriteString("token error: " + err.Error() + "\n")
		logMu.Unlock()
	}
	if got, _ := v1.Token(ctx, "protected", "alice"); got != nil || as.Refreshes() != before {
		t.Fatalf("after revoke: stored %v, refreshes %d (before %d); the revoked set came back", got, as.Refreshes(), before)
	}

	logMu.Lock()
	defer logMu.Unlock()
	errMu.Lock()
	for _, err := range storeErrs {
		logs.WriteString("store error: " + err.Error() + "\n")
	}
	errMu.Unlock()
	for _, s := range seen {
		if strings.Contains(logs.String(), s) {
			t.Fatalf("a token is in the log or an error:\n%s", logs.String())
		}
	}
}

func callParams(tool string) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestSharedRefreshUsesStoredClient: a replica holding an expired set of
// client "agent" re-reads, under the lease, a set another authorization
// stored for client "agent2", and refreshes it as agent2 (its refresh token
// is bound to that client): the connection survives, stored as agent2's.
func TestSharedRefreshUsesStoredClient(t *testing.T) {
	ctx := context.Background()
	as := startAS(t, authserver.Options{TokenLifetime: time.Hour,
		Clients: []authserver.Client{{ID: "agent2", RedirectURIs: []string{callback}}}})
	srv := startMCP(t, as.Issuer(), nil)
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "gh.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	k := make([]byte, vault.KeySize)
	rand.Read(k)
	ks, _ := vault.NewKeys(k, nil)
	v := vault.New(st, ks, nil)
	hc := guarded(t, srv.URL, nil)
	expire := func() {
		t.Helper()
		set, err := v.Token(ctx, "protected", "alice")
		if err != nil || set == nil {
			t.Fatalf("stored set: %v, %v", set, err)
		}
		set.Expiry = time.Now().Add(-time.Minute)
		if err := v.PutToken(ctx, "protected", "alice", set); err != nil {
			t.Fatal(err)
		}
	}
	authorize := func(o *upstream.Options) {
		t.Helper()
		h, err := upstream.New(hc, o)
		if err != nil {
			t.Fatal(err)
		}
		s, err := connect(ctx, srv.URL, hc, h)
		if err != nil {
			t.Fatal(err)
		}
		call(ctx, t, s, "echo")
		s.Close()
	}
	authorize(agentOptions(v))
	expire()
	h1, err := upstream.New(hc, agentOptions(v))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := h1.TokenSource(ctx) // holds agent's expired set
	if err != nil || ts == nil {
		t.Fatalf("TokenSource = %v, %v", ts, err)
	}
	// Meanwhile the subject connects again, as client agent2.
	if err := v.DeleteToken(ctx, "protected", "alice"); err != nil {
		t.Fatal(err)
	}
	o2 := agentOptions(v)
	o2.Client = &oauthex.ClientCredentials{ClientID: "agent2"}
	authorize(o2)
	expire()
	before := as.Refreshes()
	tok, err := ts.Token()
	if err != nil || tok == nil || !tok.Valid() {
		t.Fatalf("Token = %v, %v; want agent2's set refreshed", tok, err)
	}
	set, err := v.Token(ctx, "protected", "alice")
	if err != nil || set == nil || set.ClientID != "agent2" || set.AccessToken != tok.AccessToken || as.Refreshes() != before+1 {
		t.Fatalf("stored after the refresh: %+v, %v (refreshes %d, before %d); want agent2's, refreshed once", set, err, as.Refreshes(), before)
	}
}
