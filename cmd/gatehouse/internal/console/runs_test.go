package console

import (
	"context"
	"encoding/json"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store"
)

// Keys a caller sends: plain, with a hidden character, with markup, and
// long enough to wrap.
const (
	plainKey  = "order-42"
	hiddenKey = "inv\u200b-7"
	markupKey = "<b>bold</b>"
)

var longKey = "batch-" + strings.Repeat("0123456789abcdef", 8)

// keyedCalls makes a real caller's keyed calls through gw: charge with
// each key (plainKey twice: the second is answered from the journal), one
// call without a key, and a transfer that waits for an operator. It
// returns the callers' subject and the calls' keys in the order made.
func keyedCalls(t *testing.T, gw *servedGateway) []string {
	t.Helper()
	cs := mcpSession(t, gw.mcpURL)
	args := map[string]any{"to": "acct-1", "amount": 5}
	keys := []string{plainKey, hiddenKey, markupKey, longKey}
	for _, k := range keys {
		if c := callCode(t, cs, "pay__charge", args, k); c != "ok" {
			t.Fatalf("charge with key %q: %s", k, c)
		}
		time.Sleep(15 * time.Millisecond) // distinct creation times: the page lists the latest first
	}
	if c := callCode(t, cs, "pay__charge", args, plainKey); c != "ok" {
		t.Fatalf("charge repeated: %s", c)
	}
	if c := callCode(t, cs, "pay__charge", args, ""); c != "ok" {
		t.Fatalf("charge without a key: %s", c)
	}
	if c := callCode(t, cs, "pay__transfer", args, "transfer-1"); c != "approval_required" {
		t.Fatalf("transfer: %s", c)
	}
	return keys
}

var (
	rowRE = regexp.MustCompile(`(?s)<tr class="(record|run)">(.*?)</tr>`)
	tagRE = regexp.MustCompile(`<[^>]+>`)
	wsRE  = regexp.MustCompile(`\s+`)
)

// rows returns the text of each row of class cls of page, as a reader
// sees it (tags dropped, entities decoded, blanks collapsed).
func rows(page, cls string) []string {
	var out []string
	for _, m := range rowRE.FindAllStringSubmatch(page, -1) {
		if m[1] == cls {
			out = append(out, strings.TrimSpace(wsRE.ReplaceAllString(html.UnescapeString(tagRE.ReplaceAllString(m[2], " ")), " ")))
		}
	}
	return out
}

// TestRunsPageShowsWhatCallersDid: a real caller's keyed calls through a
// real gateway (on SQLite) appear on the runs page as the caller made
// them: the overview names each run's subject and tool; the subject's page
// lists each call, the latest first, with its tool, the idempotency key as
// sent (hidden characters made visible, markup as text), its outcome and
// its journal record (the run and call IDs the store holds); a call
// without a key is no journal row; a record the audit trail says nothing
// of shows "not recorded" rather than a guess.
func TestRunsPageShowsWhatCallersDid(t *testing.T) {
	up := newPayServer(t)
	gw := startGateway(t, up)
	keys := keyedCalls(t, gw)
	st := gw.g.Store()
	ctx := context.Background()
	// A run of another journal (a durable agent's own, sharing the store):
	// no audit entry names it.
	if _, _, err := st.Claim(ctx, store.Record{RecordKey: store.RecordKey{Scope: "agent", RunID: "nightly-7", ToolCallID: "step-1"},
		Fingerprint: "fp-agent", State: store.StateStarted, Owner: "agent-bob", Executor: "agent-1", LeaseUntil: time.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}

	c := newClient(t, gw.console)
	if code := c.login(aliceToken); code != 303 {
		t.Fatalf("login: %d", code)
	}
	_, _, page := c.do("GET", "/runs", nil, nil)
	overview := rows(page, "run")
	runs, err := st.ListRuns(ctx, store.RunFilter{Owner: "local"})
	if err != nil || len(runs) != 1 {
		t.Fatalf("the gateway's runs of local: %+v %v", runs, err)
	}
	want := map[string]string{
		"local":     "local pay__charge 4 4 0 0",
		"agent-bob": "agent-bob not recorded 1 0 0 0",
	}
	if len(overview) != 2 {
		t.Fatalf("the overview lists %d runs, want 2: %q", len(overview), overview)
	}
	for _, r := range overview {
		owner := strings.Fields(r)[0]
		if !strings.HasPrefix(r, want[owner]) {
			t.Errorf("overview row %q, want it to start %q", r, want[owner])
		}
	}
	if !strings.Contains(page, `href="/runs?subject=local"`) || !strings.Contains(overview[0]+overview[1], runs[0].RunID) {
		t.Errorf("the overview lacks the link to the subject or the run ID %s:\n%q", runs[0].RunID, overview)
	}

	_, _, page = c.do("GET", "/runs?subject="+"local", nil, nil)
	calls := rows(page, "record")
	if len(calls) != len(keys) {
		t.Fatalf("the subject's page lists %d calls, want %d (one per key): %q", len(calls), len(keys), calls)
	}
	recs, err := st.ListRecords(ctx, runs[0].Scope, runs[0].RunID)
	if err != nil || len(recs) != len(keys) {
		t.Fatalf("records %+v %v", recs, err)
	}
	shown := map[string]string{"inv\u200b-7": "inv⟦U+200B⟧-7"}
	for i, row := range calls {
		k := keys[len(keys)-1-i] // the latest first
		if v, ok := shown[k]; ok {
			k = v
		}
		if !strings.Contains(row, " pay__charge "+k+" succeeded ok "+runs[0].RunID+" call ") {
			t.Errorf("call %d: %q, want tool, key %q, outcome and run in that order", i, row, k)
		}
		found := false
		for _, r := range recs {
			found = found || strings.Contains(row, "call "+r.ToolCallID+" fingerprint "+r.Fingerprint)
		}
		if !found {
			t.Errorf("call %d names no record of the store: %q", i, row)
		}
	}
	if strings.Contains(page, "\u200b") || strings.Contains(page, "<b>bold") || !strings.Contains(page, "&lt;b&gt;bold&lt;/b&gt;") {
		t.Errorf("a key reached the page raw (a hidden character, or markup)")
	}

	_, _, page = c.do("GET", "/runs?subject=agent-bob", nil, nil)
	if calls := rows(page, "record"); len(calls) != 1 || !strings.Contains(calls[0], "not recorded not recorded started") ||
		!strings.Contains(calls[0], "nightly-7 call step-1 fingerprint fp-agent held by agent-1") {
		t.Errorf("the agent's record: %q", calls)
	}
}

// TestRunsPageReadsTheTrail: what the page shows beside a record comes
// from the entry whose detail names that record, of that subject, on a
// real SQLite file and real PostgreSQL: an entry of another subject naming
// the same IDs, or an entry whose detail is not JSON, changes nothing; an
// approval's caller key names a record the trail does not.
func TestRunsPageReadsTheTrail(t *testing.T) {
	eachStore(t, func(t *testing.T, d string) {
		st := openStore(t, d)
		ctx := context.Background()
		now := time.Now()
		for _, id := range []string{"c-1", "c-2", "c-3"} {
			rec := store.Record{RecordKey: store.RecordKey{Scope: "gateway", RunID: "gw_r1", ToolCallID: id}, Fingerprint: "fp-" + id,
				State: store.StateStarted, Owner: "acme", Executor: "gw-1", LeaseUntil: now.Add(time.Minute), CreatedAt: now, UpdatedAt: now}
			if _, _, err := st.Claim(ctx, rec); err != nil {
				t.Fatal(err)
			}
		}
		detail := func(key, call string) []byte {
			b, _ := json.Marshal(map[string]string{"key": key, "runId": "gw_r1", "toolCallId": call})
			return b
		}
		for _, e := range []store.AuditEntry{
			{Kind: audit.KindCall, Subject: "acme", Server: "bank", Tool: "bank__pay", Outcome: "ok", Detail: detail("pay-1", "c-1")},
			{Kind: audit.KindCall, Subject: "mallory", Server: "bank", Tool: "bank__steal", Outcome: "ok", Detail: detail("evil", "c-2")},
			{Kind: audit.KindCall, Subject: "acme", Server: "bank", Tool: "bank__odd", Outcome: "ok", Detail: []byte(`"not an object"`)},
		} {
			e.At = now
			if _, err := audit.AppendOne(ctx, st, "gw/test", e); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := st.CreateApproval(ctx, store.Approval{ID: "apr_1", RecordKey: store.RecordKey{Scope: "gateway", RunID: "gw_r1", ToolCallID: "c-3"},
			Server: "bank", Tool: "bank__pay", ArgsFingerprint: "x", CallerKey: "pay-3", Owner: "acme", State: store.ApprovalPending,
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, 0); err != nil {
			t.Fatalf("approval: %v", err)
		}
		srv := startConsole(t, st, nil)
		c := newClient(t, srv.URL)
		c.login(aliceToken)
		_, _, page := c.do("GET", "/runs?subject=acme", nil, nil)
		got := map[string]string{}
		for _, r := range rows(page, "record") {
			for _, id := range []string{"c-1", "c-2", "c-3"} {
				if strings.Contains(r, "call "+id+" ") {
					got[id] = r
				}
			}
		}
		for id, want := range map[string]string{
			"c-1": "bank__pay pay-1 started ok gw_r1",
			"c-2": "bank__pay not recorded started gw_r1", // the run's tool; mallory's entry is not acme's
			"c-3": "bank__pay pay-3 started approval pending gw_r1",
		} {
			if !strings.Contains(got[id], want) {
				t.Errorf("record %s: %q, want %q", id, got[id], want)
			}
		}
		if strings.Contains(page, "evil") || strings.Contains(page, "bank__steal") || strings.Contains(page, "bank__odd") {
			t.Errorf("another subject's entry, or one that names no record, reached the page")
		}
	})
}

// TestBrowserRunsPage: in a real headless Chromium 1280 px wide, an
// operator opens the runs page after a real caller's keyed calls through a
// real gateway: the overview names the subject and the tool; the subject's
// page shows each call's tool, key (its hidden character made visible, its
// markup as text), outcome and run ID as rendered text; and neither page
// overflows horizontally, the long key and the hashed IDs wrapping within
// their columns.
func TestBrowserRunsPage(t *testing.T) {
	ctx := chromium(t)
	up := newPayServer(t)
	gw := startGateway(t, up)
	keyedCalls(t, gw)
	runs, err := gw.g.Store().ListRuns(context.Background(), store.RunFilter{Owner: "local"})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %+v %v", runs, err)
	}

	run(t, ctx, "log in", chromedp.Navigate(gw.console+"/login"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), aliceToken), chromedp.Click(chromedp.CSS("#login")), chromedp.WaitVisible(chromedp.CSS("nav")))
	run(t, ctx, "runs", chromedp.Click(chromedp.CSS(`nav a[href="/runs"]`)), chromedp.WaitVisible(chromedp.CSS("tr.run a")))
	width := fits(t, ctx, "the runs")
	if width < 1200 || width > 1280 {
		t.Fatalf("the page is %d px wide, want the 1280 px window's", width)
	}
	if s := text(t, ctx, "tr.run"); !strings.Contains(s, "local") || !strings.Contains(s, "pay__charge") || !strings.Contains(s, runs[0].RunID) {
		t.Fatalf("the overview's run: %q", s)
	}
	shot(t, ctx, "runs")
	run(t, ctx, "runs of a subject", chromedp.Click(chromedp.CSS("tr.run a")), chromedp.WaitVisible(chromedp.CSS("tr.record")))
	fits(t, ctx, "the subject's runs")
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("tr.record")].map(r => r.innerText)`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{longKey, "<b>bold</b>", "inv⟦U+200B⟧-7", plainKey}
	if len(got) != len(want) {
		t.Fatalf("%d calls shown, want %d: %q", len(got), len(want), got)
	}
	for i, row := range got {
		cells := strings.Split(row, "\t")
		if len(cells) != 5 {
			t.Fatalf("call %d has %d cells: %q", i, len(cells), row)
		}
		if cells[1] != "pay__charge" || cells[2] != want[i] || !strings.HasPrefix(cells[3], "succeeded\nok") ||
			!strings.HasPrefix(cells[4], runs[0].RunID+"\ncall ") {
			t.Errorf("call %d: %q, want pay__charge, key %q, succeeded ok, run %s", i, cells, want[i], runs[0].RunID)
		}
	}
	pwned, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("main b").length`))
	if err != nil || pwned != 0 {
		t.Fatalf("a key's markup became elements (%d, %v)", pwned, err)
	}
	shot(t, ctx, "run")
}

// fits checks that the page does not overflow horizontally: the document
// is no wider than the window, and no element of main reaches past its
// right edge. It returns the window's width.
func fits(t *testing.T, ctx context.Context, what string) int {
	t.Helper()
	type layout struct {
		Client int      `json:"client"`
		Scroll int      `json:"scroll"`
		Over   []string `json:"over"`
	}
	l, err := chromedp.Run(ctx, chromedp.Evaluate[layout](`(() => {
		const d = document.documentElement, w = d.clientWidth;
		const over = [...document.querySelectorAll("main *")].filter(e => e.getBoundingClientRect().right > w + 0.5 || e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX === "visible" && e.clientWidth > 0 && getComputedStyle(e).display !== "inline")
			.map(e => e.tagName.toLowerCase() + "." + e.className + " " + JSON.stringify(e.textContent.slice(0, 40)));
		return {client: w, scroll: d.scrollWidth, over};
	})()`))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if l.Scroll > l.Client || len(l.Over) > 0 {
		t.Errorf("%s page overflows its %d px: document %d px wide; past the edge or spilling: %s", what, l.Client, l.Scroll, strings.Join(l.Over, ", "))
	}
	return l.Client
}
