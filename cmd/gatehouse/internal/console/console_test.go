package console

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/dsn"
)

const aliceToken = "alice-token-0123456789"

func hashOf(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(h[:])
}

// eachStore runs f on a real SQLite file and on a fresh PostgreSQL schema
// (skipped with a message without GATEHOUSE_TEST_POSTGRES).
func eachStore(t *testing.T, f func(t *testing.T, d string)) {
	t.Run("sqlite", func(t *testing.T) { f(t, "sqlite:"+filepath.Join(t.TempDir(), "c.db")) })
	t.Run("postgres", func(t *testing.T) { f(t, pgtest.Schema(t, "console", "the console's store tests")) })
}

func openStore(t *testing.T, d string) store.Store {
	t.Helper()
	st, err := dsn.Open(context.Background(), d, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// startConsole serves a console over st on 127.0.0.1.
func startConsole(t *testing.T, st store.Store, o *Options) *httptest.Server {
	t.Helper()
	opts := Options{Store: st, Admins: []Admin{{Name: "alice", SHA256: hashOf(aliceToken)}}, Poll: 100 * time.Millisecond}
	if o != nil {
		opts.Servers, opts.Now = o.Servers, o.Now
	}
	h, err := New(&opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := httptest.NewUnstartedServer(h)
	srv.Config.BaseContext = func(net.Listener) context.Context { return ctx }
	srv.Start()
	t.Cleanup(func() { cancel(); srv.Close() })
	return srv
}

// askApproval makes a pending approval of a transfer, as the gateway's
// journal does, and returns its ID.
func askApproval(t *testing.T, st store.Store, owner, args string) string {
	t.Helper()
	ctx := context.Background()
	j, err := durable.NewJournal(st, &durable.JournalOptions{Scope: "gateway", Approvals: st})
	if err != nil {
		t.Fatal(err)
	}
	guard := policy.GuardFunc(func(context.Context, policy.Call) (policy.Decision, error) {
		return policy.NeedsApproval("transfers need an operator"), nil
	})
	c := durable.Call{RunID: "gw_run", ToolCallID: "k-" + owner, Server: "bank", Tool: "bank__transfer",
		Args: json.RawMessage(args), Owner: owner, Key: "transfer-" + owner}
	_, _, err = j.Guarded(ctx, c, guard, func(context.Context, string) (*mcp.CallToolResult, error) {
		t.Fatal("the effect ran before approval")
		return nil, nil
	})
	if e, ok := refusal.As(err); !ok || e.Code != refusal.ApprovalRequired {
		t.Fatalf("want approval_required, got %v", err)
	}
	as, err := st.ListApprovals(ctx, store.ApprovalPending)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if a.Owner == owner {
			return a.ID
		}
	}
	t.Fatalf("no pending approval of %s: %+v", owner, as)
	return ""
}

// observeDrift records a drifted observation of server "pay" whose tool
// charge's description became desc, and returns its listing.
func observeDrift(t *testing.T, st store.Store, desc string) string {
	t.Helper()
	ctx := context.Background()
	if err := st.PutServer(ctx, store.Server{ID: "config:pay", Name: "pay", Type: "http", URL: "http://127.0.0.1:1/mcp"}); err != nil {
		t.Fatal(err)
	}
	before, _ := json.Marshal(map[string]any{"name": "charge", "description": "Charges a card."})
	after, _ := json.Marshal(map[string]any{"name": "charge", "description": desc})
	changes, _ := json.Marshal([]pin.Change{{Kind: pin.ChangeTool, Name: "charge", Change: pin.ChangeChanged, Before: before, After: after}})
	sum := sha256.Sum256([]byte(desc))
	listing := hex.EncodeToString(sum[:])
	entries := store.Baseline{{Kind: store.KindTool, Name: "charge"}: {Value: listing}}
	if _, _, err := st.ObserveListing(ctx, store.Observation{ServerID: "config:pay", Listing: listing, SeenBy: "gw-1",
		Entries: entries, Changes: changes, Drifted: true}); err != nil {
		t.Fatal(err)
	}
	return listing
}

// client is a browser-like HTTP client: a cookie jar, redirects not
// followed, and the headers a same-origin form POST carries.
type client struct {
	t    *testing.T
	base string
	hc   *http.Client
}

func newClient(t *testing.T, base string) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, base: base, hc: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (c *client) do(method, path string, form url.Values, hdr map[string]string) (int, http.Header, string) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

var sameOrigin = map[string]string{"Sec-Fetch-Site": "same-origin"}

func (c *client) login(token string) int {
	c.t.Helper()
	code, _, _ := c.do("POST", "/login", url.Values{"token": {token}}, sameOrigin)
	return code
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the page's synchronizer token.
func (c *client) csrf() string {
	c.t.Helper()
	code, _, body := c.do("GET", "/approvals", nil, nil)
	m := csrfField.FindStringSubmatch(body)
	if code != 200 || m == nil {
		c.t.Fatalf("no csrf token on /approvals (%d): %s", code, body)
	}
	return m[1]
}

func operatorEntries(t *testing.T, st store.Store) []store.AuditEntry {
	t.Helper()
	es, err := st.ListAudit(context.Background(), store.AuditFilter{Chain: audit.OperatorChain})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// TestUnauthenticatedRevealsNothing: without a login every page redirects
// to the login page with an empty body, the event stream and every action
// are 401, and nothing changes (rows read back).
func TestUnauthenticatedRevealsNothing(t *testing.T) {
	eachStore(t, func(t *testing.T, d string) {
		st := openStore(t, d)
		id := askApproval(t, st, "acme-ltd", `{"to":"acct-SECRET-9","amount":100}`)
		listing := observeDrift(t, st, "Charges a card. SECRET-DRIFT")
		srv := startConsole(t, st, nil)
		c := newClient(t, srv.URL)
		for _, p := range []string{"/", "/approvals", "/drift", "/runs", "/runs?subject=acme-ltd", "/servers", "/audit", "/audit/verify"} {
			code, h, body := c.do("GET", p, nil, nil)
			if code != http.StatusSeeOther || h.Get("Location") != "/login" || strings.Contains(body, "SECRET") || strings.Contains(body, "acme") {
				t.Errorf("GET %s: %d to %q: %q", p, code, h.Get("Location"), body)
			}
		}
		if code, _, body := c.do("GET", "/events", nil, nil); code != http.StatusUnauthorized || strings.Contains(body, "state") {
			t.Errorf("GET /events: %d %q", code, body)
		}
		for _, a := range []struct {
			path string
			form url.Values
		}{
			{"/approvals/decide", url.Values{"id": {id}, "verdict": {"approve"}, "csrf": {"x"}}},
			{"/drift/trust", url.Values{"server": {"config:pay"}, "listing": {listing}, "csrf": {"x"}}},
			{"/runs/purge", url.Values{"subject": {"acme-ltd"}, "csrf": {"x"}}},
			{"/logout", url.Values{"csrf": {"x"}}},
		} {
			if code, _, body := c.do("POST", a.path, a.form, sameOrigin); code != http.StatusUnauthorized || strings.Contains(body, "SECRET") {
				t.Errorf("POST %s: %d %q", a.path, code, body)
			}
		}
		// A forged session cookie is no session either.
		u, _ := url.Parse(srv.URL)
		c.hc.Jar.SetCookies(u, []*http.Cookie{{Name: "gatehouse-console", Value: "forged", Path: "/"}})
		if code, h, _ := c.do("GET", "/approvals", nil, nil); code != http.StatusSeeOther || h.Get("Location") != "/login" {
			t.Errorf("forged cookie: %d %s", code, h.Get("Location"))
		}
		// A wrong token does not log in, and says nothing but that.
		if code := c.login("wrong"); code != http.StatusUnauthorized {
			t.Errorf("wrong token: %d", code)
		}
		if code := c.login(""); code != http.StatusUnauthorized {
			t.Errorf("empty token: %d", code)
		}
		assertUnchanged(t, st, id, listing)
	})
}

// assertUnchanged reads back that the approval is still pending, the
// drift still open (a purge would have deleted the approval), and no
// operator action recorded.
func assertUnchanged(t *testing.T, st store.Store, id, listing string) {
	t.Helper()
	ctx := context.Background()
	a, err := st.GetApproval(ctx, id)
	if err != nil || a.State != store.ApprovalPending || a.DecidedBy != "" {
		t.Errorf("approval %s after refused requests: %+v %v", id, a, err)
	}
	open, err := st.OpenObservations(ctx, "config:pay", false)
	if err != nil || len(open) != 1 || open[0].Listing != listing || !open[0].TrustedAt.IsZero() {
		t.Errorf("drift after refused requests: %+v %v", open, err)
	}
	if es := operatorEntries(t, st); len(es) != 0 {
		t.Errorf("operator entries after refused requests: %+v", es)
	}
}

// TestCSRFRefused: a logged-in operator's POSTs without the synchronizer
// token, with a wrong one, or cross-origin (with the right one) are 403
// and change nothing; the same form with the token does what it says.
func TestCSRFRefused(t *testing.T) {
	eachStore(t, func(t *testing.T, d string) {
		st := openStore(t, d)
		id := askApproval(t, st, "acme-ltd", `{"to":"acct-9","amount":100}`)
		listing := observeDrift(t, st, "Charges a card, and more.")
		srv := startConsole(t, st, nil)
		c := newClient(t, srv.URL)
		if code := c.login(aliceToken); code != http.StatusSeeOther {
			t.Fatalf("login: %d", code)
		}
		tok := c.csrf()
		actions := []struct {
			path string
			form url.Values
		}{
			{"/approvals/decide", url.Values{"id": {id}, "verdict": {"approve"}}},
			{"/drift/trust", url.Values{"server": {"config:pay"}, "listing": {listing}}},
			{"/runs/purge", url.Values{"subject": {"acme-ltd"}}},
		}
		for _, a := range actions {
			for _, tc := range []struct {
				name string
				csrf []string
				hdr  map[string]string
			}{
				{"no token", nil, sameOrigin},
				{"empty token", []string{""}, sameOrigin},
				{"wrong token", []string{wrongLast(tok)}, sameOrigin},
				{"another session's token", []string{"x" + tok}, sameOrigin},
				{"cross-site", []string{tok}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
				{"cross-origin Origin", []string{tok}, map[string]string{"Origin": "http://evil.example"}},
			} {
				form := url.Values{}
				for k, v := range a.form {
					form[k] = v
				}
				if tc.csrf != nil {
					form["csrf"] = tc.csrf
				}
				if code, _, _ := c.do("POST", a.path, form, tc.hdr); code != http.StatusForbidden {
					t.Errorf("POST %s, %s: %d, want 403", a.path, tc.name, code)
				}
			}
		}
		// GETs never change state, whatever they carry.
		c.do("GET", "/approvals/decide?id="+id+"&verdict=approve&csrf="+tok, nil, nil)
		c.do("GET", "/drift/trust?server=config:pay&listing="+listing+"&csrf="+tok, nil, nil)
		assertUnchanged(t, st, id, listing)

		// With the token: approved by alice, recorded on the operators' chain.
		if code, h, _ := c.do("POST", "/approvals/decide", url.Values{"id": {id}, "verdict": {"approve"}, "csrf": {tok}}, sameOrigin); code != http.StatusSeeOther || h.Get("Location") != "/approvals" {
			t.Fatalf("decide: %d %s", code, h.Get("Location"))
		}
		a, err := st.GetApproval(context.Background(), id)
		if err != nil || a.State != store.ApprovalApproved || a.DecidedBy != "alice" {
			t.Fatalf("approval after approve: %+v %v", a, err)
		}
		es := operatorEntries(t, st)
		if len(es) != 1 || es[0].Kind != audit.KindApprovalDecided || es[0].Subject != "alice" || es[0].Outcome != "approved" {
			t.Fatalf("operator entries: %+v", es)
		}
		// Logging out ends the session server-side: the old cookie and
		// token no longer work.
		if code, _, _ := c.do("POST", "/logout", url.Values{"csrf": {tok}}, sameOrigin); code != http.StatusSeeOther {
			t.Fatalf("logout: %d", code)
		}
		if code, _, _ := c.do("GET", "/approvals", nil, nil); code != http.StatusSeeOther {
			t.Fatalf("after logout: %d", code)
		}
	})
}

// TestSecurityHeaders: every response, pages, errors, redirects and
// static files alike, carries the strict CSP, nosniff and no-referrer; the
// session cookie is HttpOnly and SameSite=Strict.
func TestSecurityHeaders(t *testing.T) {
	st := openStore(t, "sqlite:"+filepath.Join(t.TempDir(), "c.db"))
	srv := startConsole(t, st, nil)
	c := newClient(t, srv.URL)
	check := func(what string, h http.Header) {
		t.Helper()
		if h.Get("Content-Security-Policy") != CSP || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", what, h)
		}
	}
	for _, p := range []string{"/login", "/approvals", "/static/console.js", "/static/console.css", "/nope"} {
		_, h, _ := c.do("GET", p, nil, nil)
		check("GET "+p, h)
	}
	_, h, _ := c.do("POST", "/login", url.Values{"token": {aliceToken}}, sameOrigin)
	check("POST /login", h)
	ck := h.Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(ck, want) {
			t.Errorf("cookie %q lacks %s", ck, want)
		}
	}
	for _, p := range []string{"/approvals", "/drift", "/runs", "/servers", "/audit", "/audit/verify"} {
		code, h, body := c.do("GET", p, nil, nil)
		check("GET "+p, h)
		if code != 200 || strings.Contains(body, "<script>") || strings.Contains(body, " style=") || strings.Contains(body, "<style") {
			t.Errorf("GET %s: %d, or inline script or style: %s", p, code, body)
		}
	}
}

// TestUntrustedTextEscaped: a tool description with markup and hidden
// characters, and arguments with markup, are shown as text: escaped by
// html/template, hidden characters made visible.
func TestUntrustedTextEscaped(t *testing.T) {
	st := openStore(t, "sqlite:"+filepath.Join(t.TempDir(), "c.db"))
	askApproval(t, st, "acme-ltd", `{"memo":"<img src=x onerror=alert(1)>"}`)
	observeDrift(t, st, "Charges.<script>alert(1)</script>\u200b")
	srv := startConsole(t, st, nil)
	c := newClient(t, srv.URL)
	c.login(aliceToken)
	_, _, body := c.do("GET", "/drift", nil, nil)
	if strings.Contains(body, "<script>alert") || !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(body, "⟦U+200B⟧") {
		t.Errorf("drift page: %s", body)
	}
	_, _, body = c.do("GET", "/approvals", nil, nil)
	if strings.Contains(body, "<img") || !strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Errorf("approvals page: %s", body)
	}
}

// httpServer serves h on 127.0.0.1 through Serve, ended at cleanup.
func httpServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, h, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// tamper edits the outcome of the operators' chain's second entry in the
// SQLite file, behind the store's back.
func tamper(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// SQLite keeps the trail in blocks; the operators' entries are blocks
	// of one. Entry 2's outcome, "trusted", becomes "revoked" (the same
	// length: the block still reads, the entry's hash no longer fits).
	var data []byte
	if err := db.QueryRow(`SELECT data FROM audit_blocks WHERE chain = 'operator' AND first_seq = 2 AND last_seq = 2`).Scan(&data); err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(data, []byte("trusted"), []byte("revoked"), 1)
	if bytes.Equal(edited, data) {
		t.Fatalf("no outcome to edit in the block %q", data)
	}
	res, err := db.Exec(`UPDATE audit_blocks SET data = ? WHERE chain = 'operator' AND first_seq = 2`, edited)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("tampered with %d rows", n)
	}
}

// wrongLast is tok with its last character changed (never to itself: the
// last character of a 32-byte token in raw base64 is one of 16, so a fixed
// replacement would be the token itself one time in 16).
func wrongLast(tok string) string {
	if strings.HasSuffix(tok, "A") {
		return tok[:len(tok)-1] + "E"
	}
	return tok[:len(tok)-1] + "A"
}
