package console

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store"
)

// TestTrustBoundToListingShown: the trust form carries the fingerprint of
// the listing the page rendered. When the server published another
// listing since, the trust is refused, the baseline is not touched, and
// the page says so; the listing now shown can then be trusted.
func TestTrustBoundToListingShown(t *testing.T) {
	eachStore(t, func(t *testing.T, d string) {
		st := openStore(t, d)
		ctx := context.Background()
		first := observeDrift(t, st, "Charges a card, version A.")
		srv := startConsole(t, st, nil)
		c := newClient(t, srv.URL)
		c.login(aliceToken)
		_, _, page := c.do("GET", "/drift", nil, nil)
		if !strings.Contains(page, `name="listing" value="`+first+`"`) {
			t.Fatalf("the form does not carry the listing shown: %s", page)
		}
		tok := c.csrf()
		version, _ := st.BaselineVersion(ctx, "config:pay")

		second := observeDrift(t, st, "Charges a card, version B.") // published meanwhile
		code, h, _ := c.do("POST", "/drift/trust", url.Values{"server": {"config:pay"}, "listing": {first}, "csrf": {tok}}, sameOrigin)
		if code != http.StatusSeeOther || h.Get("Location") != "/drift" {
			t.Fatalf("stale trust: %d %s", code, h.Get("Location"))
		}
		if v, _ := st.BaselineVersion(ctx, "config:pay"); v != version {
			t.Fatalf("a refused trust moved the baseline version %d -> %d", version, v)
		}
		open, _ := st.OpenObservations(ctx, "config:pay", false)
		if len(open) == 0 || open[len(open)-1].Listing != second || !open[len(open)-1].TrustedAt.IsZero() {
			t.Fatalf("open observations after a refused trust: %+v", open)
		}
		_, _, page = c.do("GET", "/drift", nil, nil)
		if !strings.Contains(page, "Not trusted: listing "+first) || !strings.Contains(page, "the latest is "+second) ||
			!strings.Contains(page, `name="listing" value="`+second+`"`) || !strings.Contains(page, "version B") {
			t.Fatalf("the page does not say why: %s", page)
		}
		c.do("POST", "/drift/trust", url.Values{"server": {"config:pay"}, "listing": {second}, "csrf": {tok}}, sameOrigin)
		if v, _ := st.BaselineVersion(ctx, "config:pay"); v != version+1 {
			t.Fatalf("the trust of the listing shown did not move the baseline: %d -> %d", version, v)
		}
		b, err := st.GetBaseline(ctx, "config:pay")
		if err != nil || len(b) != 1 {
			t.Fatalf("baseline %+v %v", b, err)
		}
		es := operatorEntries(t, st)
		if len(es) != 2 || es[0].Outcome != "stale" || es[1].Outcome != "trusted" || es[1].Subject != "alice" || !strings.Contains(string(es[1].Detail), second) {
			t.Fatalf("operator entries %+v", es)
		}
		// A form that is not a fingerprint is a bad request.
		if code, _, _ := c.do("POST", "/drift/trust", url.Values{"server": {"config:pay"}, "listing": {"nope"}, "csrf": {tok}}, sameOrigin); code != http.StatusBadRequest {
			t.Fatalf("bad listing: %d", code)
		}
	})
}

// TestRunsAndPurge: the runs page lists a subject's runs and calls; purge
// deletes the subject's rows (and only theirs), as `gatehouse runs purge`,
// recorded under the operator's name.
func TestRunsAndPurge(t *testing.T) {
	eachStore(t, func(t *testing.T, d string) {
		st := openStore(t, d)
		ctx := context.Background()
		now := time.Now()
		for _, owner := range []string{"acme-ltd", "other"} {
			rec := store.Record{RecordKey: store.RecordKey{Scope: "gateway", RunID: "run-" + owner, ToolCallID: "call-1"}, Fingerprint: "fp-" + owner,
				State: store.StateStarted, Owner: owner, Executor: "gw-1", LeaseUntil: now.Add(time.Minute), CreatedAt: now, UpdatedAt: now}
			if _, _, err := st.Claim(ctx, rec); err != nil {
				t.Fatal(err)
			}
		}
		id := askApproval(t, st, "acme-ltd", `{"to":"x"}`)
		srv := startConsole(t, st, nil)
		c := newClient(t, srv.URL)
		c.login(aliceToken)
		_, _, page := c.do("GET", "/runs", nil, nil)
		if !strings.Contains(page, "run-acme-ltd") || !strings.Contains(page, "run-other") {
			t.Fatalf("runs: %s", page)
		}
		_, _, page = c.do("GET", "/runs?subject=acme-ltd", nil, nil)
		if !strings.Contains(page, "call-1") || !strings.Contains(page, "fp-acme-ltd") || strings.Contains(page, "run-other") {
			t.Fatalf("runs of acme-ltd: %s", page)
		}
		tok := c.csrf()
		code, h, _ := c.do("POST", "/runs/purge", url.Values{"subject": {"acme-ltd"}, "csrf": {tok}}, sameOrigin)
		if code != http.StatusSeeOther || h.Get("Location") != "/runs?subject=acme-ltd" {
			t.Fatalf("purge: %d %s", code, h.Get("Location"))
		}
		if runs, _ := st.ListRuns(ctx, store.RunFilter{Owner: "acme-ltd"}); len(runs) != 0 {
			t.Fatalf("acme-ltd's runs after purge: %+v", runs)
		}
		if _, err := st.GetApproval(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("acme-ltd's approval after purge: %v", err)
		}
		if runs, _ := st.ListRuns(ctx, store.RunFilter{Owner: "other"}); len(runs) != 1 {
			t.Fatalf("other's runs after purge: %+v", runs)
		}
		_, _, page = c.do("GET", "/runs?subject=acme-ltd", nil, nil)
		if !strings.Contains(page, "Purged 2 rows of subject") {
			t.Fatalf("after purge: %s", page)
		}
		es := operatorEntries(t, st)
		if len(es) != 1 || es[0].Kind != audit.KindPurge || es[0].Subject != "alice" || !strings.Contains(string(es[0].Detail), `"rows":2`) {
			t.Fatalf("operator entries %+v", es)
		}
	})
}

// TestAuditPageAndVerify: the audit page filters entries by chain,
// subject, kind and time, refuses a filter it cannot read with a 400 that
// says which, and the verification page reports an entry edited in the
// store.
func TestAuditPageAndVerify(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "c.db")
	st := openStore(t, "sqlite:"+dbPath)
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, e := range []store.AuditEntry{
		{Kind: audit.KindApprovalDecided, Subject: "alice", Tool: "pay__transfer", Outcome: "approved", At: t0},
		{Kind: audit.KindTrust, Subject: "bob", Server: "pay", Outcome: "trusted", At: t0.Add(time.Hour)},
		{Kind: audit.KindPurge, Subject: "alice", Outcome: "ok", At: t0.Add(48 * time.Hour)},
	} {
		if _, err := audit.AppendOne(ctx, st, audit.OperatorChain, e); err != nil {
			t.Fatal(i, err)
		}
	}
	srv := startConsole(t, st, nil)
	c := newClient(t, srv.URL)
	c.login(aliceToken)
	count := func(q string) int {
		t.Helper()
		code, _, page := c.do("GET", "/audit?"+q, nil, nil)
		if code != 200 {
			t.Fatalf("audit?%s: %d %s", q, code, page)
		}
		return strings.Count(page, `<tr class="entry">`)
	}
	for q, want := range map[string]int{
		"":                                   3,
		"subject=alice":                      2,
		"kind=trust":                         1,
		"chain=operator&subject=bob":         1,
		"chain=gw%2Fnone":                    0,
		"since=2026-03-02":                   1,
		"until=2026-03-01T12:30:00Z":         1,
		"since=2026-03-01&until=2026-03-02":  2,
		"subject=&kind=&since=&until=&chain": 3,
		"after=1":                            2,
	} {
		if got := count(q); got != want {
			t.Errorf("audit?%s: %d entries, want %d", q, got, want)
		}
	}
	code, _, page := c.do("GET", "/audit?since=yesterday", nil, nil)
	if code != http.StatusBadRequest || !strings.Contains(page, "audit filter since: &#34;yesterday&#34; is not a time") {
		t.Fatalf("bad since: %d %s", code, page)
	}
	_, _, page = c.do("GET", "/audit/verify", nil, nil)
	if !strings.Contains(page, "Every chain verifies.") {
		t.Fatalf("verify: %s", page)
	}
	tamper(t, dbPath)
	_, _, page = c.do("GET", "/audit/verify", nil, nil)
	if !strings.Contains(page, "Broken: chain operator, seq 2") {
		t.Fatalf("verify after tampering: %s", page)
	}
}

// TestEventsBoundedAndEnding: the live-update stream needs a login, tells
// the state at once and again when an approval is asked for, is bounded
// (503 beyond MaxStreams), and ends when its client goes (goleak checks
// the handler's goroutine) or logs out.
func TestEventsBoundedAndEnding(t *testing.T) {
	st := openStore(t, "sqlite:"+filepath.Join(t.TempDir(), "c.db"))
	h, err := New(&Options{Store: st, Admins: []Admin{{Name: "alice", SHA256: hashOf(aliceToken)}}, Poll: 50 * time.Millisecond, MaxStreams: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httpServer(t, h)
	c := newClient(t, srv)
	c.login(aliceToken)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv+"/events", nil)
	res, err := c.hc.Do(req)
	if err != nil || res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %v %v", res, err)
	}
	defer res.Body.Close()
	rd := bufio.NewReader(res.Body)
	next := func() string {
		t.Helper()
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the stream: %v", err)
			}
			if strings.HasPrefix(line, "data: ") {
				return line
			}
		}
	}
	if l := next(); !strings.Contains(l, `"approvals":0`) {
		t.Fatalf("first event %q", l)
	}
	if code, _, _ := c.do("GET", "/events", nil, nil); code != http.StatusServiceUnavailable {
		t.Fatalf("a second stream beyond MaxStreams: %d", code)
	}
	askApproval(t, st, "acme-ltd", `{"to":"x"}`)
	if l := next(); !strings.Contains(l, `"approvals":1`) {
		t.Fatalf("event after an approval was asked for %q", l)
	}
	// Logging out ends the stream.
	tok := c.csrf()
	c.do("POST", "/logout", url.Values{"csrf": {tok}}, sameOrigin)
	for {
		if _, err := rd.ReadString('\n'); err != nil {
			break
		}
	}
	// The slot is free again (for a new login).
	c.login(aliceToken)
	cancel()
	req2, _ := http.NewRequest("GET", srv+"/events", nil)
	ctx2, cancel2 := context.WithCancel(context.Background())
	res2, err := c.hc.Do(req2.WithContext(ctx2))
	if err != nil || res2.StatusCode != 200 {
		t.Fatalf("a stream after the first ended: %v %v", res2, err)
	}
	cancel2()
	res2.Body.Close()
}

// TestLiveRefreshLeavesMessages: a page rendered for the script's live
// refresh (X-Gatehouse-Refresh) does not take the session's messages; the
// next page shown does, once. A refresh that took them would lose them
// when it came from a page that was leaving for the action's answer.
func TestLiveRefreshLeavesMessages(t *testing.T) {
	st := openStore(t, "sqlite:"+filepath.Join(t.TempDir(), "c.db"))
	srv := startConsole(t, st, nil)
	c := newClient(t, srv.URL)
	c.login(aliceToken)
	tok := c.csrf()
	fp := strings.Repeat("ab", 32)
	if code, _, _ := c.do("POST", "/drift/trust", url.Values{"server": {"config:nope"}, "listing": {fp}, "csrf": {tok}}, sameOrigin); code != http.StatusSeeOther {
		t.Fatalf("trust of an unknown server: %d", code)
	}
	const said = "No server has the row ID config:nope."
	for i := range 2 {
		if _, _, page := c.do("GET", "/drift", nil, map[string]string{refreshHeader: "1"}); strings.Contains(page, said) {
			t.Fatalf("live refresh %d took the message", i+1)
		}
	}
	if _, _, page := c.do("GET", "/approvals", nil, nil); !strings.Contains(page, said) {
		t.Fatalf("the next page shown lacks the message: %s", page)
	}
	if _, _, page := c.do("GET", "/approvals", nil, nil); strings.Contains(page, said) {
		t.Fatal("the message was shown twice")
	}
}
